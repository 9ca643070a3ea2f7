import { Readable } from 'node:stream';
import fc from 'fast-check';
import { pack } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { computeDepHash, DEPHASH_LENGTH } from './dephash.js';
import { isManifestName } from './manifest-names.js';
import { type ManifestFile, parseManifestTar } from './manifests.js';

const key = { builder: 'builtin', builderVersion: '1', baseImageId: 'sha256:abc' };
const file = (path: string, content: string): ManifestFile => ({ path, content: Buffer.from(content) });

const manifestPath = fc
  .tuple(
    fc.array(fc.stringMatching(/^[a-z0-9_-]{1,8}$/), { maxLength: 3 }),
    fc.constantFrom(
      'package.json',
      'go.mod',
      'Cargo.lock',
      'requirements-dev.txt',
      'pyproject.toml',
      'yarn.lock',
    ),
  )
  .map(([dirs, base]) => [...dirs, base].join('/'));
const manifestSet = fc.uniqueArray(fc.record({ path: manifestPath, text: fc.string({ maxLength: 40 }) }), {
  selector: (entry) => entry.path,
  minLength: 1,
  maxLength: 12,
});
const toFiles = (set: { path: string; text: string }[]) => set.map((entry) => file(entry.path, entry.text));

async function tarOf(
  entries: { name: string; content: string; mtime: Date; mode: number }[],
): Promise<Buffer> {
  const tar = pack();
  for (const entry of entries)
    tar.entry({ name: entry.name, mtime: entry.mtime, mode: entry.mode }, entry.content);
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

describe('computeDepHash', () => {
  it('is a fixed-length lowercase hex string', () => {
    expect(computeDepHash([file('package.json', '{}')], key)).toMatch(
      new RegExp(`^[0-9a-f]{${DEPHASH_LENGTH}}$`),
    );
  });

  it('does not depend on the order of the files', () => {
    const shuffled = manifestSet.chain((set) =>
      fc.tuple(fc.constant(set), fc.shuffledSubarray(set, { minLength: set.length, maxLength: set.length })),
    );
    fc.assert(
      fc.property(shuffled, ([set, reordered]) => {
        expect(computeDepHash(toFiles(reordered), key)).toBe(computeDepHash(toFiles(set), key));
      }),
    );
  });

  it('changes when a manifest is edited', () => {
    fc.assert(
      fc.property(manifestSet, fc.nat(), fc.string({ minLength: 1, maxLength: 5 }), (set, index, extra) => {
        const files = toFiles(set);
        const at = index % files.length;
        const edited = files.map((f, i) =>
          i === at ? { path: f.path, content: Buffer.concat([f.content, Buffer.from(extra)]) } : f,
        );
        expect(computeDepHash(edited, key)).not.toBe(computeDepHash(files, key));
      }),
    );
  });

  it('changes when a manifest is added, removed or renamed', () => {
    fc.assert(
      fc.property(manifestSet, fc.nat(), (set, index) => {
        const files = toFiles(set);
        const before = computeDepHash(files, key);
        const at = index % files.length;
        expect(
          computeDepHash(
            files.filter((_, i) => i !== at),
            key,
          ),
        ).not.toBe(before);
        expect(computeDepHash([...files, file('zz-added/package.json', '{}')], key)).not.toBe(before);
        const renamed = files.map((f, i) =>
          i === at ? { path: `renamed/${f.path}`, content: f.content } : f,
        );
        expect(computeDepHash(renamed, key)).not.toBe(before);
      }),
    );
  });

  it('moving content between files changes it (no concatenation ambiguity)', () => {
    const a = [file('a/package.json', 'xy'), file('b/package.json', 'z')];
    const b = [file('a/package.json', 'x'), file('b/package.json', 'yz')];
    expect(computeDepHash(a, key)).not.toBe(computeDepHash(b, key));
  });

  it('never changes on a source-only edit (source files are not in the manifest set)', () => {
    fc.assert(
      fc.property(manifestSet, fc.string(), (set, source) => {
        const tree = [...toFiles(set), file('src/index.js', source), file('README.md', source)];
        const manifests = tree.filter((f) => isManifestName(f.path.split('/').pop() ?? ''));
        expect(computeDepHash(manifests, key)).toBe(computeDepHash(toFiles(set), key));
      }),
    );
  });

  it('includes the builder, its version and the base image id', () => {
    const files = [file('package.json', '{}')];
    const base = computeDepHash(files, key);
    expect(computeDepHash(files, { ...key, builder: 'nixpacks' })).not.toBe(base);
    expect(computeDepHash(files, { ...key, builderVersion: '2' })).not.toBe(base);
    expect(computeDepHash(files, { ...key, baseImageId: 'sha256:abd' })).not.toBe(base);
  });

  it('ignores mtimes and modes of the files read from a tar stream', async () => {
    const names = ['./package.json', './package-lock.json'];
    const first = await tarOf(
      names.map((name) => ({ name, content: name, mtime: new Date(1_000), mode: 0o644 })),
    );
    const second = await tarOf(
      [...names]
        .reverse()
        .map((name) => ({ name, content: name, mtime: new Date(9_999_999_000), mode: 0o755 })),
    );
    const hashOf = async (buffer: Buffer) =>
      computeDepHash(await parseManifestTar(Readable.from([buffer])), key);
    expect(await hashOf(second)).toBe(await hashOf(first));
  });
});

describe('computeDepHash add-ons', () => {
  it('an image with Claude Code is its own cache entry; without add-ons the hash is unchanged', () => {
    const files = [file('package.json', '{}')];
    const plain = computeDepHash(files, key);
    expect(computeDepHash(files, { ...key, addOns: [] })).toBe(plain);
    const claude = computeDepHash(files, { ...key, addOns: ['claude-code@2.1.332'] });
    expect(claude).not.toBe(plain);
    expect(computeDepHash(files, { ...key, addOns: ['claude-code@2.1.333'] })).not.toBe(claude);
  });
});

describe('computeDepHash and the CA bundle', () => {
  it('an image trusting a CA bundle is its own cache entry, per bundle; without one the hash is unchanged', () => {
    const files = [file('package.json', '{}')];
    const plain = computeDepHash(files, key);
    expect(computeDepHash(files, { ...key, ca: undefined })).toBe(plain);
    const one = computeDepHash(files, { ...key, ca: 'a'.repeat(64) });
    expect(one).not.toBe(plain);
    expect(computeDepHash(files, { ...key, ca: 'b'.repeat(64) })).not.toBe(one);
    expect(computeDepHash(files, { ...key, ca: 'a'.repeat(64) })).toBe(one);
  });
});

describe('computeDepHash and a root chosen by its source files', () => {
  it('the chosen provider is its own cache entry; without one the hash is unchanged', () => {
    const plain = computeDepHash([], key);
    expect(computeDepHash([], { ...key, rootProvider: undefined })).toBe(plain);
    const python = computeDepHash([], { ...key, rootProvider: 'python' });
    expect(python).not.toBe(plain);
    expect(computeDepHash([], { ...key, rootProvider: 'node' })).not.toBe(python);
    expect(computeDepHash([], { ...key, rootProvider: 'python' })).toBe(python);
  });
});
