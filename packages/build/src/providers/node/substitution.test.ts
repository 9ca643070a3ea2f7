import { describe, expect, it } from 'vitest';
import type { ManifestFile } from '../../manifests.js';
import { detectProvider } from '../../provider.js';
import { bunSubstitution as substitution } from './substitution.js';

/** As prepareImage calls it: with the detection of the same manifests. */
const bunSubstitution = (files: ManifestFile[]) => substitution(files, detectProvider(files));

const f = (path: string, content = ''): ManifestFile => ({ path, content: Buffer.from(content) });

describe('bunSubstitution', () => {
  it('names the lockfile npm did not read', () => {
    expect(bunSubstitution([f('package.json', '{}'), f('bun.lock', '{}')])).toBe(
      "the repo installs with bun (bun.lock), which does not run here: npm installed its dependencies from package.json's version ranges, not bun.lock's versions, and the box has no bun",
    );
    expect(bunSubstitution([f('package.json', '{}'), f('bun.lockb')])).toContain("not bun.lockb's versions");
  });

  it('a packageManager pin without a lockfile', () => {
    expect(bunSubstitution([f('package.json', '{"packageManager":"bun@1.2.0"}')])).toBe(
      "the repo installs with bun (packageManager in package.json), which does not run here: npm installed its dependencies from package.json's version ranges, and the box has no bun",
    );
  });

  it('says nothing of any other repo, nor of a bun.lock beside another lockfile', () => {
    expect(bunSubstitution([f('package.json', '{}')])).toBeUndefined();
    expect(bunSubstitution([f('package.json', '{}'), f('pnpm-lock.yaml'), f('bun.lock')])).toBeUndefined();
  });
});
