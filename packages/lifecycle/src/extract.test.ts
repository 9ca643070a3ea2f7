import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CpOutLimitError, CpOutStreamError } from './errors.js';
import { entryParts, extractTar } from './extract.js';

type Item = Partial<tar.Header> & { name: string } & { body?: string | Buffer };

/** A tar stream made of the given (hostile) headers. */
function tarOf(items: Item[]): Readable {
  const pack = tar.pack();
  for (const { body, ...header } of items) {
    if (body !== undefined) pack.entry(header, body);
    else pack.entry(header);
  }
  pack.finalize();
  return Readable.from(pack);
}

const LIMITS = { maxBytes: 1024 * 1024, maxEntries: 1000 };
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-ext-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function listTree(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(root, { recursive: true })).sort()) out.push(name);
  return out;
}

describe('extractTar', () => {
  it('extracts a plain tree under the top-level name', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory', mode: 0o755 },
        { name: 'repo/a.txt', type: 'file', mode: 0o644, body: 'hello' },
        { name: 'repo/sub/b.txt', type: 'file', mode: 0o600, body: 'world' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary).toMatchObject({ files: 2, directories: 2, bytes: 10, skipped: [] });
    expect(await readFile(join(dir, 'repo/sub/b.txt'), 'utf8')).toBe('world');
  });

  it('skips absolute and .. names, and names outside the top-level entry', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: '/etc/evil', type: 'file', body: 'x' },
        { name: 'repo/../../evil', type: 'file', body: 'x' },
        { name: '../evil', type: 'file', body: 'x' },
        { name: 'other/evil', type: 'file', body: 'x' },
        { name: 'repo/ok', type: 'file', body: 'ok' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.reason)).toEqual([
      'absolute path',
      "name contains '..'",
      "name contains '..'",
      'outside the copied path',
    ]);
    expect(await listTree(dir)).toEqual(['repo', 'repo/ok']);
  });

  it('skips symlinks that leave the tree, keeps those that stay inside', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/sub', type: 'directory' },
        { name: 'repo/file', type: 'file', body: 'f' },
        { name: 'repo/passwd', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'repo/up', type: 'symlink', linkname: '../outside' },
        { name: 'repo/sub/up2', type: 'symlink', linkname: '../../x' },
        { name: 'repo/sub/ok', type: 'symlink', linkname: '../file' },
        { name: 'repo/ok2', type: 'symlink', linkname: 'sub/ok' },
        { name: 'repo/self', type: 'symlink', linkname: '.' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.symlinks).toBe(3);
    expect(summary.skipped.map((s) => s.path).sort()).toEqual(['repo/passwd', 'repo/sub/up2', 'repo/up']);
    expect(await readlink(join(dir, 'repo/sub/ok'))).toBe('../file');
    expect(await readFile(join(dir, 'repo/ok2'), 'utf8')).toBe('f');
    await expect(lstat(join(dir, 'repo/passwd'))).rejects.toThrow();
  });

  it("one note per node_modules folder for its links into the box's deps; any other link its own note", async () => {
    const deps = (name: string) => ({ name, type: 'symlink' as const });
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/node_modules', type: 'directory' },
        { ...deps('repo/node_modules/a'), linkname: '/deps/src/node_modules/a' },
        { ...deps('repo/node_modules/b'), linkname: '/.ca-sbx-image/deps/src/node_modules/b' },
        { name: 'repo/node_modules/.bin', type: 'directory' },
        {
          ...deps('repo/node_modules/.bin/tool'),
          linkname: '/.ca-sbx-image/deps/src/node_modules/.bin/tool',
        },
        { name: 'repo/packages/p/node_modules', type: 'directory' },
        { ...deps('repo/packages/p/node_modules/c'), linkname: '/deps/src/packages/p/node_modules/c' },
        // Not the deps link's: listed one by one as before.
        { ...deps('repo/node_modules/esc'), linkname: '/deps/src/x\u001b[2J' },
        { ...deps('repo/node_modules/climb'), linkname: '/deps/../etc/passwd' },
        { ...deps('repo/node_modules/host'), linkname: '/home/user/.ssh' },
        { ...deps('repo/deps-link-outside-node-modules'), linkname: '/deps/src/x' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.symlinks).toBe(0);
    expect(summary.skipped.map((note) => note.path)).toEqual([
      'repo/node_modules/esc',
      'repo/node_modules/climb',
      'repo/node_modules/host',
      'repo/deps-link-outside-node-modules',
      'repo/node_modules',
      'repo/packages/p/node_modules',
    ]);
    expect(summary.skipped[0]?.reason).toMatch(/control character/);
    expect(summary.skipped[4]?.reason).toMatch(
      /^3 link\(s\) into the box's installed dependencies, not copied/,
    );
    expect(summary.skipped[5]?.reason).toMatch(/^1 link\(s\)/);
  });

  it('refuses a link chain whose .. goes through another link', async () => {
    // d1/d2/s -> ../.. is the tree root (lexically inside), but t -> s/../../.. then walks two
    // levels above the tree on a real filesystem: it must be skipped.
    const summary = await extractTar(
      tarOf([
        { name: 'repo/d1/d2', type: 'directory' },
        { name: 'repo/d1/d2/s', type: 'symlink', linkname: '../..' },
        { name: 'repo/d1/d2/t', type: 'symlink', linkname: 's/../../..' },
        { name: 'repo/d1/d2/u', type: 'symlink', linkname: 's/x' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.path).sort()).toEqual(['repo/d1/d2/t', 'repo/d1/d2/u']);
    expect(await readlink(join(dir, 'repo/d1/d2/s'))).toBe('../..');
  });

  it('skips a chain of in-tree links that ends outside', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/passwd', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'repo/chain1', type: 'symlink', linkname: 'passwd' },
        { name: 'repo/chain2', type: 'symlink', linkname: './chain1' },
        { name: 'repo/file', type: 'file', body: 'f' },
        { name: 'repo/good', type: 'symlink', linkname: 'file' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.path).sort()).toEqual(['repo/chain1', 'repo/chain2', 'repo/passwd']);
    expect(summary.symlinks).toBe(1);
  });

  it('never writes through a symlink made earlier in the stream', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/escape', type: 'symlink', linkname: '/tmp' },
        { name: 'repo/escape/pwned', type: 'file', body: 'x' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    // The file became a real directory entry inside the tree; the link was skipped.
    expect(summary.skipped.map((s) => s.path)).toContain('repo/escape');
    expect((await lstat(join(dir, 'repo/escape'))).isDirectory()).toBe(true);
  });

  it('keeps hardlinks to copied files only', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/a', type: 'file', body: 'A' },
        { name: 'repo/b', type: 'link', linkname: 'repo/a' },
        { name: 'repo/c', type: 'link', linkname: '/etc/passwd' },
        { name: 'repo/d', type: 'link', linkname: 'repo/../../etc/passwd' },
        { name: 'repo/e', type: 'link', linkname: 'repo/missing' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.files).toBe(2);
    expect(await readFile(join(dir, 'repo/b'), 'utf8')).toBe('A');
    expect(summary.skipped.map((s) => s.path).sort()).toEqual(['repo/c', 'repo/d', 'repo/e']);
  });

  it('skips devices and FIFOs and strips setuid, setgid and sticky bits', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory', mode: 0o1777 },
        { name: 'repo/fifo', type: 'fifo' },
        { name: 'repo/null', type: 'character-device', devmajor: 1, devminor: 3 },
        { name: 'repo/sda', type: 'block-device', devmajor: 8, devminor: 0 },
        { name: 'repo/suid', type: 'file', mode: 0o4755, body: '#!/bin/sh' },
        { name: 'repo/sgid', type: 'file', mode: 0o2755, body: 'x' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.reason)).toEqual(['fifo', 'device', 'device']);
    expect((await stat(join(dir, 'repo/suid'))).mode & 0o7777).toBe(0o755);
    expect((await stat(join(dir, 'repo/sgid'))).mode & 0o7777).toBe(0o755);
    expect((await stat(join(dir, 'repo'))).mode & 0o7000).toBe(0);
  });

  it("notes a repo view's whiteouts once per node_modules folder (else folder); any other device stays a skipped device", async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/node_modules', type: 'directory' },
        { name: 'repo/node_modules/a', type: 'directory' },
        { name: 'repo/node_modules/a/readme.md', type: 'character-device', devmajor: 0, devminor: 0 },
        { name: 'repo/node_modules/a/license', type: 'character-device', devmajor: 0, devminor: 0 },
        { name: 'repo/node_modules/a/written.txt', type: 'file', body: 'w' },
        { name: 'repo/src/gone', type: 'character-device', devmajor: 0, devminor: 0 },
        { name: 'repo/node_modules/a/null', type: 'character-device', devmajor: 1, devminor: 3 },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped).toEqual([
      { path: 'repo/node_modules/a/null', reason: 'device' },
      {
        path: 'repo/node_modules',
        reason:
          '2 path(s) of the dependency install removed in the box (overlay whiteouts: a file or a whole folder each), not copied',
      },
      {
        path: 'repo/src',
        reason:
          '1 path(s) of the dependency install removed in the box (overlay whiteouts: a file or a whole folder each), not copied',
      },
    ]);
    expect(await readFile(join(dir, 'repo/node_modules/a/written.txt'), 'utf8')).toBe('w');
  });

  it('strips group and world write from files and directories', async () => {
    await extractTar(
      tarOf([
        { name: 'repo', type: 'directory', mode: 0o777 },
        { name: 'repo/sub', type: 'directory', mode: 0o1777 },
        { name: 'repo/sub/open', type: 'file', mode: 0o666, body: 'x' },
        { name: 'repo/exec', type: 'file', mode: 0o6777, body: 'x' },
        { name: 'repo/group', type: 'file', mode: 0o660, body: 'x' },
        { name: 'repo/private', type: 'directory', mode: 0o020 },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    const mode = async (path: string) => (await stat(join(dir, path))).mode & 0o7777;
    expect(await mode('repo')).toBe(0o755);
    expect(await mode('repo/sub')).toBe(0o755);
    expect(await mode('repo/sub/open')).toBe(0o644);
    expect(await mode('repo/exec')).toBe(0o755);
    expect(await mode('repo/group')).toBe(0o640);
    expect(await mode('repo/private')).toBe(0o700);
  });

  it('skips names with a backslash (a separator on Windows), and hardlinks to them', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo\\..\\..\\evil', type: 'file', body: 'x' },
        { name: 'repo/a\\..\\..\\..\\evil', type: 'file', body: 'x' },
        { name: 'repo/dir\\', type: 'directory' },
        { name: 'repo/ok.txt', type: 'file', body: 'ok' },
        { name: 'repo/link', type: 'link', linkname: 'repo\\ok.txt' },
        { name: 'repo/sym\\link', type: 'symlink', linkname: 'ok.txt' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped).toEqual([
      { path: 'repo\\..\\..\\evil', reason: 'name contains a backslash' },
      { path: 'repo/a\\..\\..\\..\\evil', reason: 'name contains a backslash' },
      { path: 'repo/dir\\', reason: 'name contains a backslash' },
      { path: 'repo/sym\\link', reason: 'name contains a backslash' },
      { path: 'repo/link', reason: 'hardlink target outside the copied tree' },
    ]);
    expect(await listTree(dir)).toEqual(['repo', 'repo/ok.txt']);
  });

  it('throws on a file over the byte cap, before writing it', async () => {
    const error = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory' },
        { name: 'repo/big', type: 'file', body: Buffer.alloc(4096) },
      ]),
      dir,
      'repo',
      { maxBytes: 1000, maxEntries: 10 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CpOutLimitError);
    await expect(lstat(join(dir, 'repo/big'))).rejects.toThrow();
  });

  it('throws past the entry cap', async () => {
    const items: Item[] = [{ name: 'repo', type: 'directory' }];
    for (let i = 0; i < 20; i += 1) items.push({ name: `repo/f${i}`, type: 'file', body: '' });
    await expect(
      extractTar(tarOf(items), dir, 'repo', { maxBytes: 1000, maxEntries: 10 }),
    ).rejects.toBeInstanceOf(CpOutLimitError);
  });

  it('skips duplicates instead of overwriting', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo/a', type: 'file', body: 'first' },
        { name: 'repo/a', type: 'file', body: 'second' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(await readFile(join(dir, 'repo/a'), 'utf8')).toBe('first');
    expect(summary.skipped).toEqual([{ path: 'repo/a', reason: 'duplicate entry' }]);
  });

  it('a garbage stream is a CpOutStreamError', async () => {
    const garbage = Readable.from([Buffer.alloc(1024, 0x41)]);
    await expect(extractTar(garbage, dir, 'repo', LIMITS)).rejects.toBeInstanceOf(CpOutStreamError);
  });

  it('a top-level symlink is skipped', async () => {
    const summary = await extractTar(
      tarOf([{ name: 'link', type: 'symlink', linkname: 'file.txt' }]),
      dir,
      'link',
      LIMITS,
    );
    expect(summary.skipped[0]?.reason).toMatch(/itself is a symlink/);
    expect(await listTree(dir)).toEqual([]);
  });
});

describe('extractTar and names that act when listed', () => {
  it('skips names and link targets with control or bidi characters; the rest of the tree is written', async () => {
    const summary = await extractTar(
      tarOf([
        { name: 'repo', type: 'directory', mode: 0o755 },
        { name: 'repo/\u001b]52;c;SGVsbG8=\u0007x', type: 'directory', mode: 0o755 },
        { name: 'repo/\u001b]52;c;SGVsbG8=\u0007x/.envrc', type: 'file', body: 'x' },
        { name: 'repo/clear\u001b[2J', type: 'file', body: 'x' },
        { name: 'repo/csi\u009b31m', type: 'file', body: 'x' },
        { name: 'repo/line\nbreak', type: 'file', body: 'x' },
        { name: 'repo/txt.\u202eexe', type: 'file', body: 'x' },
        { name: 'repo/ok', type: 'file', body: 'ok' },
        { name: 'repo/\u00e9t\u00e9.txt', type: 'file', body: 'summer' },
        { name: 'repo/link', type: 'symlink', linkname: 'ok\u001b[2J' },
      ]),
      dir,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.reason)).toEqual([
      ...Array(6).fill('name contains a control character or a bidi control'),
      'symlink with an empty target or one with a control character',
    ]);
    expect(await listTree(dir)).toEqual(['repo', 'repo/ok', 'repo/\u00e9t\u00e9.txt']);
  });
});

describe('entryParts', () => {
  it('normalises and flags', () => {
    expect(entryParts('./a//b/./c')).toEqual({ path: ['a', 'b', 'c'] });
    expect(entryParts('/a').reason).toBe('absolute path');
    expect(entryParts('a/../b').reason).toMatch(/\.\./);
    expect(entryParts('a\0b').reason).toMatch(/NUL/);
    expect(entryParts('a\\b').reason).toBe('name contains a backslash');
    expect(entryParts('..\\x').reason).toBe('name contains a backslash');
  });

  it('refuses names a later copy-out would take for its own staging folder, at any depth', () => {
    expect(entryParts('repo/.ca-sbx-cp-999999-abcdef/x').reason).toMatch(/staging folder/);
    expect(entryParts('.ca-sbx-cp-abcdef').reason).toMatch(/staging folder/);
    expect(entryParts('repo/a/.ca-sbx-cp-').reason).toMatch(/staging folder/);
    expect(entryParts('repo/ca-sbx-cp-1-abcdef').reason).toBeUndefined();
  });
});
