import { PassThrough, Readable } from 'node:stream';
import { type Header, pack } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { ManifestLimitError, ManifestReadError } from './errors.js';
import { isManifestName, unsafePathReason } from './manifest-names.js';
import { parseManifestTar, readManifests, type SkippedManifest } from './manifests.js';

type Entry = Partial<Header> & { name: string; body?: string };

async function tarOf(entries: Entry[]): Promise<Buffer> {
  const tar = pack();
  for (const { body, ...header } of entries) tar.entry(header, body ?? '');
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

async function parse(entries: Entry[], options: Parameters<typeof parseManifestTar>[1] = {}) {
  const skipped: SkippedManifest[] = [];
  const files = await parseManifestTar(Readable.from([await tarOf(entries)]), {
    ...options,
    onSkip: (s) => skipped.push(s),
  });
  return { files, skipped };
}

describe('manifest names', () => {
  it('knows the manifest set', () => {
    for (const name of [
      'package.json',
      'pnpm-lock.yaml',
      'requirements-dev.txt',
      'requirements.txt',
      'go.sum',
      'Cargo.lock',
      '.nvmrc',
      'nixpacks.toml',
    ]) {
      expect(isManifestName(name)).toBe(true);
    }
    for (const name of ['index.js', 'package.json.bak', 'README.md', 'requirements.md', 'main.go']) {
      expect(isManifestName(name)).toBe(false);
    }
  });

  it('rejects unsafe relative paths', () => {
    for (const path of [
      '',
      '/etc/passwd',
      '../package.json',
      'a/../package.json',
      'a//package.json',
      './x',
      'a\nb/package.json',
      'a\\b/package.json',
      'x/\u0007/go.mod',
    ]) {
      expect(unsafePathReason(path)).toBeDefined();
    }
    expect(unsafePathReason('a b/ünï/package.json')).toBeUndefined();
  });
});

describe('parseManifestTar (hostile streams)', () => {
  it('reads regular manifest files, strips ./ and sorts by path', async () => {
    const { files, skipped } = await parse([
      { name: './sub/package.json', body: '{"b":1}' },
      { name: './package.json', body: '{"a":1}' },
    ]);
    expect(files.map((f) => [f.path, f.content.toString()])).toEqual([
      ['package.json', '{"a":1}'],
      ['sub/package.json', '{"b":1}'],
    ]);
    expect(skipped).toEqual([]);
  });

  it('skips and reports symlinks, hard links, devices, dirs and traversal names', async () => {
    const { files, skipped } = await parse([
      { name: './package.json', type: 'symlink', linkname: '/etc/passwd' },
      { name: './go.mod', type: 'link', linkname: '../../etc/shadow' },
      { name: './Cargo.toml', type: 'character-device', devmajor: 1, devminor: 3 },
      { name: './requirements.txt', type: 'directory' },
      { name: '../package.json', body: 'x' },
      { name: '/abs/package.json', body: 'x' },
      { name: './a/../../go.sum', body: 'x' },
      { name: './we\nird/package.json', body: 'x' },
      { name: './src/index.js', body: 'not a manifest' },
      { name: './node_modules/x/package.json', body: 'pruned' },
      { name: './ok/yarn.lock', body: 'ok' },
    ]);
    expect(files.map((f) => f.path)).toEqual(['ok/yarn.lock']);
    const reasons = Object.fromEntries(skipped.map((s) => [s.path, s.reason]));
    expect(reasons['package.json']).toMatch(/symlink/);
    expect(reasons['go.mod']).toMatch(/not a regular file/);
    expect(reasons['Cargo.toml']).toMatch(/not a regular file/);
    expect(reasons['requirements.txt']).toMatch(/not a regular file/);
    expect(reasons['../package.json']).toMatch(/segment/);
    expect(reasons['/abs/package.json']).toMatch(/absolute/);
    expect(reasons['we\nird/package.json']).toMatch(/control/);
    expect(reasons['src/index.js']).toMatch(/not a manifest/);
    expect(reasons['node_modules/x/package.json']).toMatch(/pruned/);
    expect(skipped).toHaveLength(10);
  });

  it("reads a Go module's vendor/modules.txt and nothing else under a vendor directory", async () => {
    const { files, skipped } = await parse([
      { name: './vendor/modules.txt', body: '# example.com/y v1.0.0\n' },
      { name: './tools/vendor/modules.txt', body: '# example.com/z v1.0.0\n' },
      { name: './vendor/example.com/y/go.mod', body: 'module example.com/y\n' },
      { name: './vendor/package.json', body: '{}' },
      { name: './vendor/x/vendor/modules.txt', body: 'nested' },
      { name: './node_modules/vendor/modules.txt', body: 'pruned' },
      { name: './src/modules.txt', body: 'not a manifest' },
    ]);
    expect(files.map((f) => f.path)).toEqual(['tools/vendor/modules.txt', 'vendor/modules.txt']);
    const reasons = Object.fromEntries(skipped.map((s) => [s.path, s.reason]));
    expect(reasons['vendor/example.com/y/go.mod']).toMatch(/pruned/);
    expect(reasons['vendor/package.json']).toMatch(/pruned/);
    expect(reasons['vendor/x/vendor/modules.txt']).toMatch(/pruned/);
    expect(reasons['node_modules/vendor/modules.txt']).toMatch(/pruned/);
    expect(reasons['src/modules.txt']).toMatch(/not a manifest/);
  });

  it('reports a duplicate entry instead of overwriting the first', async () => {
    const { files, skipped } = await parse([
      { name: './package.json', body: 'first' },
      { name: 'package.json', body: 'second' },
    ]);
    expect(files.map((f) => f.content.toString())).toEqual(['first']);
    expect(skipped[0]?.reason).toMatch(/duplicate/);
  });

  it('handles long names (pax/gnu headers)', async () => {
    const deep = `${Array.from({ length: 30 }, (_, i) => `dir${i}`).join('/')}/package.json`;
    const { files } = await parse([{ name: `./${deep}`, body: '{}' }]);
    expect(files.map((f) => f.path)).toEqual([deep]);
  });

  it('throws ManifestLimitError over the count, file and total caps', async () => {
    const many = Array.from({ length: 4 }, (_, i) => ({ name: `./d${i}/package.json`, body: '{}' }));
    await expect(parse(many, { maxFiles: 3 })).rejects.toThrow(ManifestLimitError);
    await expect(
      parse([{ name: './package.json', body: 'x'.repeat(100) }], { maxFileBytes: 99 }),
    ).rejects.toMatchObject({
      code: 'MANIFEST_LIMIT',
      limit: 'maxFileBytes',
    });
    await expect(parse(many, { maxTotalBytes: 7 })).rejects.toMatchObject({ limit: 'maxTotalBytes' });
    await expect(parse(many, { maxFiles: 4, maxTotalBytes: 8 })).resolves.toMatchObject({
      files: { length: 4 },
    });
  });

  it('stops at a cap even when the source never ends (no deadlock)', async () => {
    const source = new PassThrough();
    const many = Array.from({ length: 5 }, (_, i) => ({ name: `./d${i}/package.json`, body: '{}' }));
    source.write(await tarOf(many));
    // No end(): a container that keeps streaming.
    await expect(parseManifestTar(source, { maxFiles: 2 })).rejects.toThrow(ManifestLimitError);
    expect(source.destroyed).toBe(true);
  });

  it('turns a garbage stream into ManifestReadError', async () => {
    const garbage = Buffer.alloc(1024, 0x41);
    await expect(parseManifestTar(Readable.from([garbage]))).rejects.toThrow(ManifestReadError);
  });

  it('accepts an empty archive', async () => {
    await expect(parse([])).resolves.toEqual({ files: [], skipped: [] });
  });
});

describe('readManifests options', () => {
  it('refuses a container reference that could be an option', async () => {
    await expect(readManifests('--privileged')).rejects.toThrow(ManifestReadError);
  });

  it('refuses unknown options and a relative root', async () => {
    await expect(readManifests('abc', { root: 'work' })).rejects.toMatchObject({
      code: 'INVALID_BUILD_OPTIONS',
      kind: 'usage',
    });
    await expect(readManifests('abc', { nope: 1 } as never)).rejects.toMatchObject({
      code: 'INVALID_BUILD_OPTIONS',
    });
  });
});
