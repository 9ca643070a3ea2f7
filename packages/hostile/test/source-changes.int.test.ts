import { appendFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, labeledLeft, uniqueName } from './_harness.js';

// A local directory whose file grows while create copies it in (a watcher, a build, a download
// beside the create, or a repo's own tool doing it on purpose): the tar stream fails on the host.
// It used to hang the create until the exec's time limit (steps × (clone limit + 30 s), over half
// an hour): pipe() left the helper's stdin open and its tar waited for the rest. Now the create
// fails at once with the file's name, exit 1, and nothing is left; the directory is untouched.

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function growingSource(git: boolean): Promise<{ dir: string; stop: () => void }> {
  const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-grow-'));
  dirs.push(dir);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'grows', version: '1.0.0' }));
  if (git) {
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    await execa('git', ['init', '-q', '-b', 'main', dir], { env });
    await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'add', '.'], {
      cwd: dir,
      env,
    });
    await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'x'], {
      cwd: dir,
      env,
    });
  }
  // Untracked in the git case: a local git repo's working tree goes in whole too.
  await writeFile(join(dir, 'grows.log'), Buffer.alloc(4 * 1024 * 1024, 0x61));
  // Appends between the scan (which records the size) and the pack (which checks it again).
  const timer = setInterval(() => appendFileSync(join(dir, 'grows.log'), 'more\n'), 5);
  return { dir, stop: () => clearInterval(timer) };
}

describe.each([
  ['a plain directory', false],
  ['a git repo (the file untracked)', true],
])('a file that grows while create copies %s', (_shape, git) => {
  it('fails the create at once with the file named, exit 1, nothing left, the directory untouched', async () => {
    const { dir, stop } = await growingSource(git);
    const name = uniqueName('grow');
    let result: Awaited<ReturnType<typeof cli>>;
    try {
      // The test's own limit (well under the old hang's half hour) is what catches a regression.
      result = await cli(['create', dir, '--json', '--name', name], {}, 120_000);
    } finally {
      stop();
    }
    expect(result.exitCode, result.stderr).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
    expect(error).toMatchObject({
      code: 'SOURCE_CHANGED',
      message: "'grows.log' changed while create copied the directory in",
    });
    expect(error.hint).toMatch(/stop what writes into it/);
    expect(result.stdout).toBe('');
    expect(await labeledLeft(name)).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual(
      git ? ['.git', 'grows.log', 'package.json'] : ['grows.log', 'package.json'],
    );
    expect((await stat(join(dir, 'grows.log'))).size).toBeGreaterThan(4 * 1024 * 1024);
  }, 180_000);
});
