import { spawn } from 'node:child_process';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasControlCharacter } from '@ca-sandbox/docker/contracts';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  type CliResult,
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
  skipped: { path: string; reason: string }[];
  warnings: { path: string; reason: string }[];
  removedStaging: string[];
}

/** The CLI run from `cwd`, as a user in that directory types it. */
async function cliIn(cwd: string, args: string[]): Promise<CliResult> {
  const result = await execa(process.execPath, [BIN, ...args], {
    cwd,
    reject: false,
    stdin: 'ignore',
    timeout: 300_000,
    env: { NO_COLOR: '1' },
  });
  return {
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
    stdoutBytes: Buffer.from(result.stdout),
  };
}

/** Every file under `dir` with its content: what must survive a copy-out untouched. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(dir, { recursive: true })) {
    const path = join(dir, String(name));
    if ((await lstat(path)).isFile()) files[String(name)] = await readFile(path, 'utf8');
  }
  return files;
}

/** Every path under `dir` named like .git, in any case. */
async function gitEntries(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).filter((p) => /(^|\/)\.git$/i.test(p));
}

describe.each(RUNTIMES)('copy-out never lets box code run on the host, under %s', (runtime) => {
  let box: SandboxRecord;
  let canary: HostCanary;
  let work: string;
  let out: string;
  let home: string;

  /** Real host git, as a user without special configuration runs it. */
  const git = (cwd: string, args: string[]) =>
    execa('git', args, {
      cwd,
      reject: false,
      extendEnv: false,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CEILING_DIRECTORIES: out,
        GIT_AUTHOR_NAME: 'host',
        GIT_AUTHOR_EMAIL: 'host@example.invalid',
        GIT_COMMITTER_NAME: 'host',
        GIT_COMMITTER_EMAIL: 'host@example.invalid',
      },
    });

  beforeAll(async () => {
    canary = await HostCanary.create();
    work = await mkdtemp(join(tmpdir(), 'ca-hostile-git-src-'));
    out = await mkdtemp(join(tmpdir(), 'ca-hostile-git-out-'));
    home = await mkdtemp(join(tmpdir(), 'ca-hostile-git-home-'));
    // The source: a small git repository with one commit (the box gets it with its .git).
    await cp(join(FIXTURES, 'copy-out-git'), work, { recursive: true });
    await writeFile(join(work, 'note.txt'), 'from the box\n');
    for (const args of [
      ['init', '-q'],
      ['add', '-A'],
      ['commit', '-qm', 'fixture commit'],
    ]) {
      const result = await git(work, args);
      expect(result.exitCode, result.stderr).toBe(0);
    }
    box = await createBox(work, { runtime });
    const planted = await execBox(box.id, ['sh', 'plant-git-traps.sh', canary.dir]);
    expect(planted.stdout, planted.stderr).toContain('traps planted');
  });

  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
    await canary?.remove();
    for (const dir of [work, out, home]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('by default every git directory and .git file is withheld; host git in the copy runs nothing', async () => {
    const dest = join(out, 'vetted');
    const result = await cli(['cp', `${box.id}:/work/repo`, dest, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const copied = parseJson<CpOutResult>(result);
    expect(copied.skipped.map((s) => s.path)).toEqual(
      expect.arrayContaining([
        'repo/.git',
        'repo/vendor/lib/.git',
        'repo/fixtures/cache.git',
        'repo/pointer/.git',
        'repo/.hg',
        'repo/.jj',
        'repo/_darcs',
        'repo/osc\u001b]52;c;SGVsbG8=\u0007x',
        'repo/csi\u009b2Jx',
      ]),
    );
    expect(copied.skipped.find((s) => s.path === 'repo/.hg')?.reason).toMatch(/Mercurial/);
    expect(copied.skipped.find((s) => s.path.startsWith('repo/osc'))?.reason).toMatch(/control character/);
    expect(copied.warnings.map((w) => w.path)).toEqual(
      expect.arrayContaining([
        'repo/.envrc',
        'repo/.vscode/tasks.json',
        'repo/.husky',
        'repo/.gitattributes',
        'repo/.yarnrc.yml',
      ]),
    );
    expect(await gitEntries(dest)).toEqual([]);
    const names = (await readdir(dest, { recursive: true })).map(String);
    expect(names.filter((name) => /(^|\/)(\.hg|\.jj|_darcs)(\/|$)/i.test(name))).toEqual([]);
    expect(names.filter((name) => hasControlCharacter(name))).toEqual([]);
    await expect(lstat(join(dest, 'fixtures', 'cache.git'))).rejects.toThrow(/ENOENT/);
    expect(await readFile(join(dest, 'note.txt'), 'utf8')).toBe('from the box\n');

    // What a user (or a git-aware prompt) does in the copy.
    for (const cwd of [dest, join(dest, 'pointer'), join(dest, 'vendor', 'lib'), join(dest, 'fixtures')]) {
      expect((await git(cwd, ['status'])).exitCode).toBe(128);
    }
    await writeFile(join(dest, 'note.txt'), 'edited on the host\n');
    for (const args of [
      ['init', '-q'],
      ['add', '-A'],
      ['commit', '-qm', 'vetted'],
      ['status'],
      ['diff', 'HEAD~0'],
    ]) {
      const run = await git(dest, args);
      expect(run.exitCode, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    await canary.assertUntouched();

    // Text mode says the same on stderr.
    const text = await cli(['cp', `${box.id}:/work/repo`, join(out, 'vetted-text')]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stderr).toContain('skipped repo/.git: git directory withheld');
    expect(text.stderr).toContain('may run by itself: repo/.envrc');
    expect(text.stderr).toContain('skipped repo/.hg: VCS metadata withheld');
    // The escape names are reported visibly, never written raw to the user's terminal.
    expect(text.stderr).toMatch(/skipped repo\/osc.*control character/);
    expect(hasControlCharacter(text.stderr.replaceAll('\n', ''))).toBe(false);
  });

  it('--git sanitized keeps history but not one thing of the box config, hooks or attributes', async () => {
    const dest = join(out, 'vetted-git');
    const result = await cli(['cp', `${box.id}:/work/repo`, dest, '--git', 'sanitized', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const copied = parseJson<CpOutResult>(result);
    expect(copied.skipped.map((s) => s.path)).toEqual(
      expect.arrayContaining([
        'repo/.git/config',
        'repo/.git/hooks',
        'repo/.git/info/attributes',
        'repo/fixtures/cache.git/hooks',
        'repo/pointer/.git',
      ]),
    );
    for (const gitDir of ['.git', 'vendor/lib/.git', 'fixtures/cache.git']) {
      const config = await readFile(join(dest, gitDir, 'config'), 'utf8');
      expect(config).not.toMatch(/fsmonitor|hooksPath|filter|alias|sshCommand|textconv|pwned/i);
      await expect(lstat(join(dest, gitDir, 'hooks'))).rejects.toThrow(/ENOENT/);
      await expect(lstat(join(dest, gitDir, 'info', 'attributes'))).rejects.toThrow(/ENOENT/);
      for (const name of await readdir(join(dest, gitDir), { recursive: true })) {
        const info = await lstat(join(dest, gitDir, String(name)));
        expect(info.isSymbolicLink()).toBe(false);
        if (info.isFile()) expect(info.mode & 0o111, `${gitDir}/${name}`).toBe(0);
      }
    }

    const log = await git(dest, ['log', '--format=%s']);
    expect(log.stdout).toBe('fixture commit');
    expect((await git(dest, ['status'])).exitCode).toBe(0);
    await writeFile(join(dest, 'note.txt'), 'edited on the host\n');
    for (const args of [
      ['diff'],
      ['commit', '-qam', 'host edit'],
      ['checkout', '-q', 'HEAD~1', '--', 'note.txt'],
    ]) {
      const run = await git(dest, args);
      expect(run.exitCode, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    expect((await git(join(dest, 'fixtures', 'cache.git'), ['log', '--format=%s'])).stdout).toBe(
      'fixture commit',
    );
    expect((await git(join(dest, 'vendor', 'lib'), ['status'])).exitCode).toBe(0);
    expect((await git(join(dest, 'pointer'), ['status'])).exitCode).toBe(0);
    await canary.assertUntouched();
  });

  it('cp --force into . keeps every file of the host directory; a directory in the way is never deleted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-cwd-'));
    try {
      for (let index = 0; index < 20; index += 1)
        await writeFile(join(dir, `canary-${index}.txt`), `keep ${index}\n`);
      await mkdir(join(dir, 'sub'));
      await writeFile(join(dir, 'sub', 'deep.txt'), 'keep deep\n');
      await writeFile(join(dir, 'note.txt'), 'mine\n');
      const before = await snapshot(dir);

      expect((await cliIn(dir, ['cp', `${box.id}:/work/repo/note.txt`, '.'])).exitCode).toBe(2);
      expect(await snapshot(dir)).toEqual(before);

      const file = await cliIn(dir, ['cp', `${box.id}:/work/repo/note.txt`, '.', '--force', '--json']);
      expect(file.exitCode, file.stderr).toBe(0);
      expect(JSON.parse(file.stdout).destination).toBe(join(dir, 'note.txt'));
      expect(await snapshot(dir)).toEqual({ ...before, 'note.txt': 'from the box\n' });

      const tree = await cliIn(dir, ['cp', `${box.id}:/work/repo`, '.', '--force']);
      expect(tree.exitCode, tree.stderr).toBe(0);
      expect(await readFile(join(dir, 'repo', 'note.txt'), 'utf8')).toBe('from the box\n');
      const withTree = await snapshot(dir);

      const again = await cliIn(dir, ['cp', `${box.id}:/work/repo`, '.', '--force']);
      expect(again.exitCode).toBe(2);
      expect(again.stderr).toMatch(/existing directory; it is never replaced/);
      // A file copied onto an existing directory of its name: also refused, nothing deleted.
      await mkdir(join(dir, 'sub', 'note.txt'));
      expect((await cliIn(dir, ['cp', `${box.id}:/work/repo/note.txt`, 'sub', '--force'])).exitCode).toBe(2);
      expect(await snapshot(dir)).toEqual(withTree);
      expect((await readdir(dir)).filter((name) => name.startsWith('.ca-sbx-cp-'))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await canary.assertUntouched();
  });

  it('a destination that is a symlink, or whose target inside a directory is one, is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-links-'));
    try {
      await symlink(canary.dir, join(dir, 'to-dir'));
      await symlink(canary.file, join(dir, 'note.txt'));
      for (const dest of ['to-dir', 'to-dir/', 'note.txt', '.']) {
        const result = await cliIn(dir, ['cp', `${box.id}:/work/repo/note.txt`, dest, '--force']);
        expect(result.exitCode, dest).toBe(2);
        expect(result.stderr, dest).toMatch(/symlink/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await canary.assertUntouched();
  });

  it('- writes a valid tar stream of the vetted tree (no .git) to stdout', async () => {
    const result = await cli(['cp', `${box.id}:/work/repo`, '-']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain('skipped repo/.git');
    const listing = await execa('tar', ['-t'], { input: result.stdoutBytes });
    const names = listing.stdout.split('\n');
    expect(names).toEqual(expect.arrayContaining(['repo/', 'repo/note.txt', 'repo/.envrc']));
    expect(names.filter((name) => /(^|\/)\.git(\/|$)/i.test(name))).toEqual([]);
    expect(names.filter((name) => name.startsWith('repo/fixtures/cache.git'))).toEqual([]);
    const single = await cli(['cp', `${box.id}:/work/repo/note.txt`, '-']);
    const content = await execa('tar', ['-xO'], { input: single.stdoutBytes });
    expect(content.stdout).toBe('from the box');
  });

  it('a folder the box names like a staging folder never reaches the host, so no later copy deletes it as ours', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-staging-'));
    const forged = '.ca-sbx-cp-999999-abcdef';
    try {
      const planted = await execBox(box.id, [
        'sh',
        '-c',
        `mkdir -p ${forged}/inner sub/${forged} && echo planted > ${forged}/inner/f && echo x > sub/${forged}/g && echo ok > x`,
      ]);
      expect(planted.exitCode, planted.stderr).toBe(0);
      const first = await cli(['cp', `${box.id}:/work/repo`, dir, '--json']);
      expect(first.exitCode, first.stderr).toBe(0);
      const skipped = parseJson<CpOutResult>(first).skipped;
      expect(skipped.filter((note) => /staging folder/.test(note.reason)).length).toBeGreaterThan(0);
      expect(await readdir(join(dir, 'repo'))).not.toContain(forged);
      expect(await readdir(join(dir, 'repo', 'sub'))).not.toContain(forged);
      // The user's own folder of that name (made on the host, say by hand) beside a later target.
      await mkdir(join(dir, 'repo', 'mine'));
      await writeFile(join(dir, 'repo', 'mine', 'keep.txt'), 'user data\n');
      const second = await cli(['cp', `${box.id}:/work/repo/x`, join(dir, 'repo'), '--force', '--json']);
      expect(second.exitCode, second.stderr).toBe(0);
      expect(parseJson<CpOutResult>(second).removedStaging).toEqual([]);
      expect(await readFile(join(dir, 'repo', 'mine', 'keep.txt'), 'utf8')).toBe('user data\n');
      // The copy of the planted folder itself is refused too, not written under another name.
      const direct = await cli(['cp', `${box.id}:/work/repo/${forged}`, dir]);
      expect(direct.exitCode).not.toBe(0);
      expect(await readdir(dir)).not.toContain(forged);
    } finally {
      await execBox(box.id, ['rm', '-rf', forged, 'sub', 'x']);
      await rm(dir, { recursive: true, force: true });
    }
    await canary.assertUntouched();
  });

  it('the staging directory a killed copy left is removed by the next copy, and nothing else', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-killed-'));
    try {
      // Sparse in the box; docker cp still streams every byte, so the copy takes a while.
      await execBox(box.id, ['truncate', '-s', '600M', 'big.bin']);
      await mkdir(join(dir, '.ca-sbx-cp-not-ours'));
      const copy = spawn(process.execPath, [BIN, 'cp', `${box.id}:/work/repo/big.bin`, dir], {
        stdio: 'ignore',
      });
      let staging: string | undefined;
      for (let tries = 0; tries < 600 && !staging; tries += 1) {
        staging = (await readdir(dir)).find((name) => /^\.ca-sbx-cp-\d+-/.test(name));
        if (!staging) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(staging).toBeDefined();
      copy.kill('SIGKILL');
      await new Promise((resolve) => copy.once('exit', resolve));
      expect(await readdir(dir)).toContain(staging);

      const next = await cli(['cp', `${box.id}:/work/repo/note.txt`, dir, '--json']);
      expect(next.exitCode, next.stderr).toBe(0);
      expect(parseJson<CpOutResult>(next).removedStaging).toEqual([join(dir, String(staging))]);
      expect((await readdir(dir)).sort()).toEqual(['.ca-sbx-cp-not-ours', 'note.txt']);
    } finally {
      await execBox(box.id, ['rm', '-f', 'big.bin']);
      await rm(dir, { recursive: true, force: true });
    }
    await canary.assertUntouched();
  });
});
