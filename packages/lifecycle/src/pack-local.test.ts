import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SourceTooLargeError } from './errors.js';
import { packDirectory, scanDirectory } from './pack-local.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-pack-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Seen {
  name: string;
  type: string;
  mode: number;
  uid: number;
  linkname: string | null;
  body: string;
}

async function readTar(stream: NodeJS.ReadableStream): Promise<Seen[]> {
  const extract = tar.extract();
  stream.on('error', (error) => extract.destroy(error));
  stream.pipe(extract as unknown as NodeJS.WritableStream);
  const seen: Seen[] = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    const h = entry.header;
    seen.push({
      name: h.name,
      type: String(h.type),
      mode: h.mode ?? 0,
      uid: h.uid ?? -1,
      linkname: h.linkname ?? null,
      body: Buffer.concat(chunks).toString(),
    });
  }
  return seen;
}

describe('scanDirectory + packDirectory', () => {
  it('keeps symlinks as links (never followed), skips FIFOs, drops special bits', async () => {
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    await writeFile(join(dir, 'a.txt'), 'hello');
    await chmod(join(dir, 'a.txt'), 0o4755);
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'b.txt'), 'world');
    await symlink('/etc/passwd', join(dir, 'secret'));
    await symlink('sub', join(dir, 'dirlink'));
    execFileSync('mkfifo', [join(dir, 'pipe')]);

    const scan = await scanDirectory(dir);
    expect(scan.gitRepo).toBe(true);
    expect(scan.skipped).toEqual([{ path: 'pipe', reason: 'not a regular file, directory or symlink' }]);
    const seen = await readTar(packDirectory(scan, 'src/'));
    const byName = new Map(seen.map((s) => [s.name, s]));
    expect(byName.get('src')?.type).toBe('directory');
    expect(byName.get('src/secret')).toMatchObject({ type: 'symlink', linkname: '/etc/passwd', body: '' });
    expect(byName.get('src/dirlink')).toMatchObject({ type: 'symlink', linkname: 'sub' });
    expect(byName.get('src/a.txt')).toMatchObject({ type: 'file', body: 'hello', uid: 1000 });
    expect((byName.get('src/a.txt')?.mode ?? 0) & 0o7000).toBe(0);
    expect(byName.get('src/sub/b.txt')?.body).toBe('world');
    expect(byName.get('src/.git/HEAD')?.body).toContain('refs/heads/main');
    expect(byName.has('src/pipe')).toBe(false);
    // Nothing of the link target was read.
    expect(seen.some((s) => s.body.includes('root:'))).toBe(false);
  });

  it('a directory without .git is not a repo', async () => {
    await writeFile(join(dir, '.git'), 'gitdir: /elsewhere\n');
    expect((await scanDirectory(dir)).gitRepo).toBe(false);
  });

  it('enforces the byte cap before packing', async () => {
    await writeFile(join(dir, 'big'), Buffer.alloc(2048));
    await expect(scanDirectory(dir, { maxBytes: 1024, maxEntries: 10 })).rejects.toBeInstanceOf(
      SourceTooLargeError,
    );
  });

  it('enforces the entry cap', async () => {
    for (let i = 0; i < 12; i += 1) await writeFile(join(dir, `f${i}`), '');
    await expect(scanDirectory(dir, { maxBytes: 1024, maxEntries: 10 })).rejects.toThrow(
      /more than 10 entries/,
    );
  });

  it('fails when a file is swapped for a symlink after the scan', async () => {
    await writeFile(join(dir, 'a'), 'data');
    const scan = await scanDirectory(dir);
    await rm(join(dir, 'a'));
    await symlink('/etc/passwd', join(dir, 'a'));
    await expect(readTar(packDirectory(scan))).rejects.toThrow();
  });

  it('packs a big file without piling listeners on the entry (no MaxListenersExceededWarning)', async () => {
    const size = 3 * 1024 * 1024 + 7;
    await writeFile(join(dir, 'big.bin'), Buffer.alloc(size, 7));
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const seen = await readTar(packDirectory(await scanDirectory(dir)));
      expect(seen.find((entry) => entry.name === 'big.bin')?.body.length).toBe(size);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
  });
});
