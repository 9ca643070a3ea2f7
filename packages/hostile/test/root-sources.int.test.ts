import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, destroyBox, destroyLeftovers, execBox, HostCanary, RUNTIMES } from './_harness.js';

// A root without a manifest gets the toolchain its root source files choose (build/root-sources.ts).
// The file names are the repo's: crafted names must not forge the count that the helper's find
// prints (extensions only, never a name), symlinks named like a source never count (nor are they
// followed), and a root of thousands of files costs a capped listing.

const dirs: string[] = [];
let canary: HostCanary | undefined;

afterAll(async () => {
  await destroyLeftovers();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  await canary?.remove();
});

async function repo(name: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'ca-hostile-rootsrc-'));
  dirs.push(root);
  const dir = join(root, name);
  await mkdir(dir);
  return dir;
}

/** `create` without --json: its phase lines say why the box got its image. */
async function createSaying(source: string, runtime: string) {
  const name = `hostile-${Math.random().toString(16).slice(2, 10)}`;
  const made = await cli(['create', source, '--name', name, '--network', 'offline', '--runtime', runtime]);
  expect(made.exitCode, made.stderr).toBe(0);
  return { id: name, stderr: made.stderr };
}

describe.each(RUNTIMES)('root source files choose the toolchain, hostile names (%s)', (runtime) => {
  it('names with newlines and a forged count line, symlinks named .py pointing out, a .py directory: node wins with its 2 real files', async () => {
    canary ??= await HostCanary.create();
    const dir = await repo('forged');
    await writeFile(join(dir, 'index.mjs'), "console.log('node ran');\n");
    await writeFile(join(dir, 'b.mjs'), '');
    // One real .py file whose name has newlines (counted once: names are never printed).
    await writeFile(join(dir, 'w\nca-sbx-root-sources py py py py py \n.py'), '');
    // A name that is the count line itself, newlines and all: not a source file.
    await writeFile(join(dir, '\nca-sbx-root-sources py py py py py py py py \n'), '');
    await writeFile(join(dir, 'py py py py .txt'), '');
    // Symlinks named like python sources, out to the host and to the helper's own files.
    await symlink(canary.file, join(dir, 'x.py'));
    await symlink('/etc/passwd', join(dir, 'y.py'));
    await symlink('../../../../../../../../etc/hostname', join(dir, 'z.py'));
    for (const n of [1, 2, 3]) await mkdir(join(dir, `pkg${n}.py`));
    await mkdir(join(dir, 'sub'));
    for (const n of [1, 2, 3, 4]) await writeFile(join(dir, 'sub', `deep${n}.py`), '');

    const box = await createSaying(dir, runtime);
    try {
      expect(box.stderr).toContain('no manifest; 2 .mjs files at the root: the node toolchain image');
      const list = JSON.parse((await cli(['list', '--json'])).stdout) as { id: string; provider: string }[];
      expect(list.find((row) => row.id === box.id)?.provider).toBe('node');
      // The decoys reached the helper as they are: the symlinks are there, and were not counted.
      const links = await execBox(box.id, [
        'sh',
        '-c',
        'test -L x.py && test -L y.py && test -L z.py && echo links',
      ]);
      expect(links.stdout).toBe('links\n');
      const ran = await execBox(box.id, ['node', 'index.mjs']);
      expect(ran).toMatchObject({ exitCode: 0, stdout: 'node ran\n' });
    } finally {
      await destroyBox(box.id);
    }
    await canary.assertUntouched();
  }, 300_000);
});

describe('root source files choose the toolchain: thousands of files', () => {
  it('7,000 .go files named with newlines and one main.py: go, the listing capped, create in time', async () => {
    const dir = await repo('many');
    await writeFile(join(dir, 'main.py'), 'print(1)\n');
    const names = Array.from({ length: 7000 }, (_, i) => `g\n${i}\n.go`);
    for (let i = 0; i < names.length; i += 500)
      await Promise.all(names.slice(i, i + 500).map((name) => writeFile(join(dir, name), '')));
    const started = Date.now();
    const box = await createSaying(dir, 'runc');
    try {
      // The count is capped (ROOT_SOURCES_MAX_BYTES: 20,000 bytes of `go ` tokens, 6,666 files).
      const said = /no manifest; (\d+) \.go files at the root: the go toolchain image/.exec(box.stderr);
      expect(said, box.stderr).not.toBeNull();
      expect(Number(said?.[1])).toBeGreaterThan(6000);
      expect(Number(said?.[1])).toBeLessThan(7000);
      expect(Date.now() - started).toBeLessThan(240_000);
      const ran = await execBox(box.id, ['go', 'version']);
      expect(ran.exitCode).toBe(0);
      expect(ran.stdout).toMatch(/^go version go/);
    } finally {
      await destroyBox(box.id);
    }
  }, 300_000);
});
