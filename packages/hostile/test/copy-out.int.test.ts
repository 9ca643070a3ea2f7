import { lstat, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  HostCanary,
  parseJson,
  RUNTIMES,
  type SandboxRecord,
} from './_harness.js';

interface CpOutResult {
  destination: string;
  files: number;
  bytes: number;
  skipped: { path: string; reason: string }[];
}

describe.each(RUNTIMES)('copy-out under %s', (runtime) => {
  let box: SandboxRecord;
  let canary: HostCanary;
  let out: string;

  beforeAll(async () => {
    canary = await HostCanary.create();
    out = await mkdtemp(join(tmpdir(), 'ca-hostile-out-'));
    box = await createBox(join(FIXTURES, 'copy-out'), { runtime });
    expect((await execBox(box.id, ['sh', 'make-tree.sh'])).stdout).toContain('tree ready');
  });

  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
    await canary?.remove();
    await rm(out, { recursive: true, force: true });
  });

  it('links out of the tree, fifos, setuid bits and odd names are neutralised', async () => {
    const dest = join(out, 'tree');
    const result = await cli(['cp', `${box.id}:out`, dest, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const copied = parseJson<CpOutResult>(result);
    // Paths are as in the tar stream, under the copied directory's own name.
    const skipped = copied.skipped.map((s) => s.path.replace(/^out\//, ''));
    expect(skipped).toEqual(expect.arrayContaining(['passwd-link', 'up-link', 'chain1', 'chain2', 'chain3']));
    const names = await readdir(dest);
    expect(names).not.toContain('passwd-link');
    expect(names).not.toContain('up-link');
    expect(names).not.toContain('fifo');
    expect(await readFile(join(dest, 'inner', 'ok.txt'), 'utf8')).toBe('ok\n');
    for (const name of names) {
      const info = await lstat(join(dest, name));
      if (info.isSymbolicLink()) expect(name).toBe('inside-link');
      expect(info.mode & 0o7000).toBe(0);
    }
    expect((await stat(join(dest, 'setuid-true'))).mode & 0o7000).toBe(0);
    await canary.assertUntouched();
  });

  it('refuses an existing destination and a destination that is a symlink', async () => {
    const existing = join(out, 'existing');
    await writeFile(existing, 'mine');
    const refused = await cli(['cp', `${box.id}:out/inner/ok.txt`, existing]);
    expect(refused.exitCode).toBe(2);
    expect(await readFile(existing, 'utf8')).toBe('mine');
    const link = join(out, 'link');
    await (await import('node:fs/promises')).symlink(canary.file, link);
    const viaLink = await cli(['cp', `${box.id}:out/inner/ok.txt`, link, '--force']);
    expect(viaLink.exitCode).not.toBe(0);
    await canary.assertUntouched();
  });

  it('a box swapping a directory for a symlink to / while cp runs cannot redirect the copy', async () => {
    const swapper = execBox(box.id, ['sh', 'swap-loop.sh', '8'], ['--timeout', '30']);
    for (let round = 0; round < 8; round += 1) {
      const dest = join(out, `race-${round}`);
      const result = await cli(['cp', `${box.id}:race`, dest, '--json']);
      if (result.exitCode !== 0) continue;
      const files = await readdir(dest, { recursive: true });
      // Whatever the race gave us, nothing from the box's / (etc, proc, usr...) came through a link.
      expect(files.filter((f) => /^(dir|real)\/(etc|usr|proc|bin)/.test(String(f)))).toEqual([]);
    }
    expect((await swapper).stdout).toContain('swapped');
    await canary.assertUntouched();
  });

  it('a huge file over the 1 GiB copy cap is refused and nothing partial is left', async () => {
    // Sparse in the box, but docker cp streams every byte: the extractor must stop at the cap.
    await execBox(box.id, ['sh', '-c', 'mkdir -p huge && truncate -s 1100M huge/big.bin']);
    const dest = join(out, 'huge');
    const result = await cli(['cp', `${box.id}:huge`, dest, '--json'], {}, 600_000);
    expect(result.exitCode).not.toBe(0);
    expect(JSON.parse(result.stderr).error.message).toMatch(/cap|limit|too (big|large)|exceed/i);
    expect((await readdir(out)).filter((name) => name.startsWith('huge') || name.startsWith('.'))).toEqual(
      [],
    );
    await execBox(box.id, ['rm', '-rf', 'huge']);
  });

  it("from the box's tmpfs (/tmp, its HOME, and /dev/shm): the same hostile tree, tarred in the box, neutralised the same", async () => {
    // docker cp does not reach a running box's tmpfs; the box's own tar does, read as hostile.
    const made = await execBox(box.id, ['sh', '-c', 'cp -a out /tmp/out && cp -a out/inner /dev/shm/inner']);
    expect(made.exitCode, made.stderr).toBe(0);
    const dest = join(out, 'tmp-tree');
    const result = await cli(['cp', `${box.id}:/tmp/out`, dest, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const copied = parseJson<CpOutResult>(result);
    const skipped = copied.skipped.map((s) => s.path.replace(/^out\//, ''));
    expect(skipped).toEqual(expect.arrayContaining(['passwd-link', 'up-link', 'chain1', 'fifo']));
    expect(await readFile(join(dest, 'inner', 'ok.txt'), 'utf8')).toBe('ok\n');
    for (const name of await readdir(dest)) {
      const info = await lstat(join(dest, name));
      if (info.isSymbolicLink()) expect(name).toBe('inside-link');
      expect(info.mode & 0o7000).toBe(0);
    }
    const shm = await cli(['cp', `${box.id}:/dev/shm/inner`, join(out, 'shm-inner')]);
    expect(shm.exitCode, shm.stderr).toBe(0);
    expect(await readFile(join(out, 'shm-inner', 'ok.txt'), 'utf8')).toBe('ok\n');
    // Nothing there: the box's word, not the engine's.
    const missing = await cli(['cp', `${box.id}:/tmp/nothing-here`, join(out, 'none'), '--json']);
    expect(missing.exitCode).toBe(2);
    expect(JSON.parse(missing.stderr).error.message).toMatch(/does not exist in the sandbox/);
    await canary.assertUntouched();
  });

  it('copy-in is refused: egress is out-only', async () => {
    const result = await cli(['cp', canary.file, `${box.id}:/work/repo/x`]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/out-only|copy.in/i);
    const inside = await execBox(box.id, ['ls', '/work/repo']);
    expect(inside.stdout).not.toMatch(/^x$/m);
  });

  it('traversal paths in the box path stay inside the box', async () => {
    const dest = join(out, 'traversal');
    const result = await cli(['cp', `${box.id}:../../../etc/hostname`, dest]);
    // Resolved inside the box (its own /etc/hostname) or refused; never a host file.
    if (result.exitCode === 0)
      expect(await readFile(dest, 'utf8')).not.toBe(await readFile('/etc/hostname', 'utf8'));
    await canary.assertUntouched();
  });
});
