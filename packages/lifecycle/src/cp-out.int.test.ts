import { lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { imageExists } from '@ca-sandbox/docker';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyAll, removeDir, tempDir, uniqueId } from '../test/helpers.js';
import { cpOut, cpOutToStream } from './cp-out.js';
import { createSandbox } from './create/index.js';
import { CpOutDestinationError, CpOutLimitError, CpOutSourceError, SandboxNotFoundError } from './errors.js';
import { execInSandbox } from './exec.js';

const ready = await imageExists('ca-sbx-base:git').catch(() => false);
const created = new Set<string>();
let work: string;
let out: string;
let id: string;

/** The hostile tree, made by code inside the box as the box user. */
const HOSTILE = [
  'set -e',
  'mkdir -p evil/sub evil/...',
  'echo data > evil/file.txt',
  'echo outside > outside.txt',
  'ln -s /etc/passwd evil/passwd',
  'ln -s passwd evil/chain',
  'ln -s chain evil/chain2',
  'ln -s ../../../../../../etc/shadow evil/up',
  'ln -s .. evil/parent',
  'ln -s ../file.txt evil/sub/inside',
  'ln evil/file.txt evil/hard',
  'ln outside.txt evil/hard-outside',
  'mkfifo evil/fifo',
  'echo "#!/bin/sh" > evil/suid && chmod 4755 evil/suid',
  'echo x > "evil/..dots" && echo y > "evil/.../z"',
  'head -c 300000 /dev/zero > evil/big',
].join('\n');

beforeAll(async () => {
  if (!ready) return;
  work = await tempDir();
  out = await tempDir('ca-lc-out-');
  await mkdir(join(work, 'src'));
  await writeFile(join(work, 'src', 'keep.txt'), 'keep\n');
  id = uniqueId(created);
  await createSandbox({ source: join(work, 'src'), name: id });
  const made = await execInSandbox(id, ['sh', '-c', HOSTILE]);
  expect(made.stderr).toBe('');
});
afterAll(async () => {
  await destroyAll(created);
  await removeDir(work);
  await removeDir(out);
});

describe.skipIf(!ready)('cpOut', () => {
  it('copies a file by a path relative to /work/repo', async () => {
    const dest = join(out, 'keep.txt');
    const result = await cpOut(id, 'keep.txt', dest);
    expect(result).toMatchObject({ destination: dest, files: 1, bytes: 5, skipped: [] });
    expect(await readFile(dest, 'utf8')).toBe('keep\n');
  });

  it('copies a hostile tree: links leaving it skipped and listed, FIFO skipped, setuid stripped', async () => {
    const dest = join(out, 'evil');
    const result = await cpOut(id, '/work/repo/evil', dest);
    const skipped = Object.fromEntries(result.skipped.map((skip) => [skip.path, skip.reason]));
    expect(Object.keys(skipped).sort()).toEqual([
      'evil/chain',
      'evil/chain2',
      'evil/fifo',
      'evil/parent',
      'evil/passwd',
      'evil/up',
    ]);
    expect(skipped['evil/fifo']).toBe('fifo');
    for (const name of ['passwd', 'chain', 'chain2', 'up', 'parent', 'fifo']) {
      await expect(lstat(join(dest, name))).rejects.toThrow(/ENOENT/);
    }
    expect(await readlink(join(dest, 'sub', 'inside'))).toBe('../file.txt');
    expect(await readFile(join(dest, 'sub', 'inside'), 'utf8')).toBe('data\n');
    expect(await readFile(join(dest, 'hard'), 'utf8')).toBe('data\n');
    expect(await readFile(join(dest, 'hard-outside'), 'utf8')).toBe('outside\n');
    expect((await stat(join(dest, 'suid'))).mode & 0o7000).toBe(0);
    expect(await readFile(join(dest, '..dots'), 'utf8')).toBe('x\n');
    expect(await readFile(join(dest, '...', 'z'), 'utf8')).toBe('y\n');
    // Nothing landed beside the destination (no temp dir left, nothing escaped).
    expect((await readdir(out)).filter((name) => name.startsWith('.ca-sbx-cp-'))).toEqual([]);
    expect(result.files).toBeGreaterThanOrEqual(6);
  });

  it('a symlink as the copied path is refused, not followed', async () => {
    await expect(cpOut(id, 'evil/passwd', join(out, 'passwd'))).rejects.toBeInstanceOf(CpOutSourceError);
    await expect(lstat(join(out, 'passwd'))).rejects.toThrow(/ENOENT/);
  });

  it('a file over the byte cap fails and writes nothing', async () => {
    const dest = join(out, 'big');
    await expect(cpOut(id, 'evil/big', dest, { maxBytes: 100_000 })).rejects.toBeInstanceOf(CpOutLimitError);
    await expect(lstat(dest)).rejects.toThrow(/ENOENT/);
    expect((await readdir(out)).filter((name) => name.startsWith('.ca-sbx-cp-'))).toEqual([]);
  });

  it('the entry cap', async () => {
    await expect(cpOut(id, 'evil', join(out, 'few'), { maxEntries: 3 })).rejects.toBeInstanceOf(
      CpOutLimitError,
    );
  });

  it('refuses an existing destination unless force, and a symlink destination always', async () => {
    const dest = join(out, 'exists.txt');
    await writeFile(dest, 'mine');
    await expect(cpOut(id, 'keep.txt', dest)).rejects.toBeInstanceOf(CpOutDestinationError);
    expect(await readFile(dest, 'utf8')).toBe('mine');
    await cpOut(id, 'keep.txt', dest, { force: true });
    expect(await readFile(dest, 'utf8')).toBe('keep\n');

    const target = join(out, 'target.txt');
    await writeFile(target, 'do not touch');
    const link = join(out, 'link.txt');
    await symlink(target, link);
    for (const force of [false, true]) {
      await expect(cpOut(id, 'keep.txt', link, { force })).rejects.toThrow(/is a symlink/);
    }
    expect(await readFile(target, 'utf8')).toBe('do not touch');
    await expect(cpOut(id, 'keep.txt', join(out, 'missing-dir', 'x'))).rejects.toBeInstanceOf(
      CpOutDestinationError,
    );
  });

  it('an existing directory receives the entry inside it; a directory is never replaced', async () => {
    const dir = join(out, 'into');
    await mkdir(dir);
    await writeFile(join(dir, 'mine.txt'), 'mine');
    const result = await cpOut(id, 'keep.txt', dir);
    expect(result).toMatchObject({ destination: join(dir, 'keep.txt'), warnings: [], removedStaging: [] });
    expect(await readFile(join(dir, 'keep.txt'), 'utf8')).toBe('keep\n');
    await cpOut(id, 'evil/sub', dir);
    for (const force of [false, true]) {
      await expect(cpOut(id, 'evil/sub', dir, { force })).rejects.toThrow(
        /existing directory; it is never replaced/,
      );
      await expect(cpOut(id, 'evil/sub', join(dir, 'keep.txt'), { force })).rejects.toThrow(
        force ? /a directory cannot replace it/ : /exists/,
      );
    }
    expect((await readdir(dir)).sort()).toEqual(['keep.txt', 'mine.txt', 'sub']);
    expect(await readFile(join(dir, 'mine.txt'), 'utf8')).toBe('mine');
    await expect(cpOut(id, 'keep.txt', join(out, 'no-such-dir/'))).rejects.toThrow(/does not exist/);
    await expect(cpOut(id, 'keep.txt', `${join(dir, 'mine.txt')}/`)).rejects.toThrow(/is not a directory/);
  });

  it('cpOutToStream writes the vetted tree as a tar stream', async () => {
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk);
        done();
      },
    });
    const result = await cpOutToStream(id, 'evil', sink);
    expect(result.destination).toBe('-');
    const names: string[] = [];
    const extract = tar.extract();
    Readable.from([Buffer.concat(chunks)]).pipe(extract);
    for await (const entry of extract) {
      names.push(entry.header.name);
      entry.resume();
    }
    expect(names).toContain('evil/file.txt');
    expect(names).not.toContain('evil/passwd');
    expect(names).not.toContain('evil/fifo');
  });

  it('a missing box path and an unknown sandbox are clear errors', async () => {
    await expect(cpOut(id, 'no/such/file', join(out, 'nothing'))).rejects.toThrow(
      /does not exist in the sandbox/,
    );
    await expect(cpOut('sbx-nope-nope', 'x', join(out, 'nothing'))).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
    await expect(cpOut(id, '/', join(out, 'root'))).rejects.toBeInstanceOf(CpOutSourceError);
  });
});
