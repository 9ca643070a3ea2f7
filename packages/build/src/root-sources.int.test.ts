import { afterEach, describe, expect, it } from 'vitest';
import { FixtureRepo } from '../test/fixture-volume.js';
import { ManifestReadError } from './errors.js';
import { readManifestSet } from './manifests.js';

const repos: FixtureRepo[] = [];
afterEach(async () => {
  await Promise.all(repos.splice(0).map((fixture) => fixture.cleanup()));
});

describe('readManifestSet: the root source counts of the same exec (real helper)', () => {
  it('counts regular root files per extension: not deeper, not symlinks, not other names', async () => {
    const fixture = await new FixtureRepo().start({
      'main.py': 'print(1)\n',
      'util.py': '',
      'tool.mjs': '',
      'x.ts': '',
      'README.md': '# x\n',
      'link.py': { symlink: '/etc/passwd' },
      'sub/deep.go': '',
      'sub/requirements.txt': 'left-pad\n',
    });
    repos.push(fixture);
    const set = await readManifestSet(fixture.container);
    expect(set.rootSources).toEqual({ py: 2, mjs: 1, ts: 1 });
    // The manifests are read as before, from the same exec.
    expect(set.files.map((file) => file.path)).toEqual(['sub/requirements.txt']);
  }, 120_000);

  it('a root it cannot enter fails with its own line, not the count line', async () => {
    const fixture = await new FixtureRepo().start({ 'a.py': '' });
    repos.push(fixture);
    const failed = await readManifestSet(fixture.container, { root: '/work/nope' }).catch((error) => error);
    expect(failed).toBeInstanceOf(ManifestReadError);
    expect(failed.message).toMatch(/\(exit 97\): .*\/work\/nope/);
    expect(failed.message).not.toContain('ca-sbx-root-sources');
  }, 120_000);

  it('a read started ahead looks at nothing before the word: it sees the files written after it started', async () => {
    const fixture = await new FixtureRepo().start({ 'early.txt': '' });
    repos.push(fixture);
    let go: (written: boolean) => void = () => {};
    const after = new Promise<boolean>((resolve) => {
      go = resolve;
    });
    const pending = readManifestSet(fixture.container, { after });
    // The exec runs and waits; the checkout is written meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await fixture.write({ 'package.json': '{"name":"late"}', 'late.py': '' });
    go(true);
    const set = await pending;
    expect(set.files.map((file) => file.path)).toEqual(['package.json']);
    expect(set.rootSources).toEqual({ py: 1 });
  }, 120_000);

  it('a read started ahead has its whole time limit after the word (a slow clone does not use it up)', async () => {
    const fixture = await new FixtureRepo().start({ 'package.json': '{"name":"slow-clone"}' });
    repos.push(fixture);
    const written = new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 4000));
    const set = await readManifestSet(fixture.container, { after: written, timeoutMs: 3000 });
    expect(set.files.map((file) => file.path)).toEqual(['package.json']);
    // A limit that does fire is said as such (an exec's start alone takes longer than 1 ms).
    const late = await readManifestSet(fixture.container, { timeoutMs: 1 }).catch((error) => error);
    expect(late).toBeInstanceOf(ManifestReadError);
    expect(late.message).toMatch(/did not finish within 1 ms$/);
  }, 120_000);

  it('a read started ahead whose checkout is never written reads nothing and says why', async () => {
    const fixture = await new FixtureRepo().start({ 'package.json': '{}' });
    repos.push(fixture);
    for (const after of [() => Promise.resolve(false), () => Promise.reject(new Error('clone failed'))]) {
      const failed = await readManifestSet(fixture.container, { after: after() }).catch((error) => error);
      expect(failed).toBeInstanceOf(ManifestReadError);
      expect(failed.message).toMatch(/\(exit 96\): the checkout was not written/);
    }
  }, 120_000);
});
