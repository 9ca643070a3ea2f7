import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  HostCanary,
  labeledLeft,
  uniqueName,
} from './_harness.js';

let canary: HostCanary;
const repos: string[] = [];
beforeEach(async () => {
  await canary?.remove();
  canary = await HostCanary.create();
});
afterAll(async () => {
  await destroyLeftovers();
  await canary?.remove();
  for (const dir of repos) await rm(dir, { recursive: true, force: true });
});

/** A committed git repo made by the test; hostile config is appended AFTER the last git command. */
async function makeRepo(files: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-repo-'));
  repos.push(dir);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  const git = (...args: string[]) =>
    execa(
      'git',
      ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', '-c', 'core.hooksPath=/dev/null', ...args],
      {
        cwd: dir,
        env: { GIT_CONFIG_NOSYSTEM: '1', HOME: dir },
      },
    );
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  return { dir, git };
}

async function appendConfig(dir: string, text: string): Promise<void> {
  const path = join(dir, '.git', 'config');
  await writeFile(path, `${await readFile(path, 'utf8')}\n${text}\n`);
}

describe('hostile sources are refused before any process starts', () => {
  const cases: [string, (dir: string) => string][] = [
    ['an --upload-pack argument injection', (d) => `--upload-pack=touch ${d}/pwned`],
    ['an -oProxyCommand argument injection', (d) => `-oProxyCommand=touch ${d}/pwned`],
    ['an ssh host beginning with a dash', (d) => `ssh://-oProxyCommand=touch ${d}/pwned/repo`],
    ['an ssh user beginning with a dash', (d) => `ssh://-oProxyCommand=touch ${d}@host/repo`],
    ['the ext:: transport', (d) => `ext::sh -c touch% ${d}/pwned`],
    ['the fd:: transport', () => 'fd::3'],
    ['a file:// URL', () => 'file:///etc'],
    ['control characters', (d) => `https://example.invalid/\u001b]52;c;x\u0007${d}`],
  ];
  it.each(cases)('%s exits 2 and runs nothing', async (_name, source) => {
    const result = await cli(['create', '--json', '--', source(canary.dir)]);
    expect(result.exitCode).toBe(2);
    expect(JSON.parse(result.stderr).error.code).toBeTruthy();
    await canary.assertUntouched();
  });
});

describe('hostile git repos from a local directory', () => {
  it('a .gitmodules with hostile names and URLs is never recursed', async () => {
    const { dir, git } = await makeRepo({
      'README.md': 'x',
      '.gitmodules': [
        '[submodule "../../../escape"]',
        '\tpath = sub',
        `\turl = ext::sh -c touch% ${canary.dir}/submodule-pwned`,
        '[submodule "evil"]',
        '\tpath = evil',
        `\turl = --upload-pack=touch ${canary.dir}/upload-pwned`,
      ].join('\n'),
    });
    await git('update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},sub`);
    await git('update-index', '--add', '--cacheinfo', `160000,${'2'.repeat(40)},evil`);
    await git('commit', '-q', '-m', 'hostile submodules');
    const box = await createBox(dir);
    const inside = await execBox(box.id, ['sh', '-c', 'ls -A sub evil 2>&1; ls /work']);
    expect(inside.stdout).not.toMatch(/pwned/);
    expect(inside.stdout.trim().split('\n').at(-1)).toBe('repo');
    await destroyBox(box.id);
    await canary.assertUntouched();
  });

  it('hooks in the tree and in .git/hooks never run, on the host or in the box', async () => {
    const hook = `#!/bin/sh\ntouch ${canary.dir}/hook-pwned /work/repo/HOOK_RAN 2>/dev/null\n`;
    const { dir, git } = await makeRepo({
      'README.md': 'x',
      'hooks/post-checkout': hook,
      '.githooks/post-checkout': hook,
    });
    await git('commit', '-q', '-m', 'hooks');
    for (const name of ['post-checkout', 'post-merge', 'reference-transaction', 'pre-commit']) {
      await writeFile(join(dir, '.git', 'hooks', name), hook);
      await chmod(join(dir, '.git', 'hooks', name), 0o755);
    }
    await appendConfig(dir, '[core]\n\thooksPath = .githooks');
    const box = await createBox(dir);
    const inside = await execBox(box.id, ['sh', '-c', 'test -e HOOK_RAN && echo RAN || echo clean']);
    expect(inside.stdout).toBe('clean\n');
    await destroyBox(box.id);
    await canary.assertUntouched();
  });

  it('a smudge filter named in .gitattributes never runs', async () => {
    const { dir, git } = await makeRepo({ '.gitattributes': '* filter=evil\n', 'file.txt': 'content\n' });
    await git('commit', '-q', '-m', 'filter');
    await appendConfig(
      dir,
      `[filter "evil"]\n\tsmudge = sh -c 'touch ${canary.dir}/smudge-pwned /work/repo/SMUDGE_RAN; cat'\n\trequired = true`,
    );
    const box = await createBox(dir);
    const inside = await execBox(box.id, [
      'sh',
      '-c',
      'cat file.txt; test -e SMUDGE_RAN && echo RAN || echo clean',
    ]);
    expect(inside.stdout).toBe('content\nclean\n');
    await destroyBox(box.id);
    await canary.assertUntouched();
  });

  it('core.fsmonitor and core.sshCommand in a local repo never run on the host', async () => {
    const { dir, git } = await makeRepo({ 'README.md': 'x' });
    await git('commit', '-q', '-m', 'init');
    await appendConfig(
      dir,
      `[core]\n\tfsmonitor = touch ${canary.dir}/fsmonitor-pwned\n\tsshCommand = touch ${canary.dir}/ssh-pwned\n[uploadpack]\n\tpackObjectsHook = touch ${canary.dir}/pack-pwned`,
    );
    const box = await createBox(dir);
    expect((await execBox(box.id, ['cat', 'README.md'])).stdout).toBe('x');
    await destroyBox(box.id);
    await canary.assertUntouched();
  });

  it("the box's origin is the repo's own network remote without its token; a hostile one is dropped", async () => {
    const { dir, git } = await makeRepo({ 'README.md': 'x' });
    await git('commit', '-q', '-m', 'init');
    await git('remote', 'add', 'origin', 'https://someone:ghp_tokenThatMustStay@github.com/org/repo.git');
    const box = await createBox(dir);
    const inside = await execBox(box.id, [
      'sh',
      '-c',
      // The box image may have no git: the config file itself, and every file under .git.
      `grep -F -A1 '[remote "origin"]' .git/config; grep -rlF ghp_tokenThatMustStay .git || echo no-token`,
    ]);
    expect(inside.stdout).toBe('[remote "origin"]\n\turl = https://github.com/org/repo.git\nno-token\n');
    await destroyBox(box.id);
    // An origin git would read as a command (ext::) or a host path: the box gets none.
    const hostile = await makeRepo({ 'README.md': 'y' });
    await hostile.git('commit', '-q', '-m', 'init');
    await hostile.git('remote', 'add', 'origin', `ext::sh -c touch% ${canary.dir}/origin-pwned`);
    const second = await createBox(hostile.dir);
    const none = await execBox(second.id, ['sh', '-c', "grep -cF '[remote' .git/config || true"]);
    expect(none.stdout.trim()).toBe('0');
    await destroyBox(second.id);
    await canary.assertUntouched();
  });

  it('a branch and file names made of shell syntax stay names in the clone script (one exec, sh -c)', async () => {
    // Every step of the clone is single-quoted into one generated sh script in the helper: HEAD's
    // branch, file names with quotes, $(), backticks, newlines and option-looking names must be
    // data there. Each payload would leave <tag>-RAN in /work/repo (a file name holds no slash:
    // the path is spelled in octal for printf).
    const at = (tag: string) => `$(printf '\\057work\\057repo\\057${tag}-RAN')`;
    const names = [
      `'$(touch ${at('quote')})'`,
      `\`touch ${at('backtick')}\``,
      `new\nline $(touch ${at('newline')})`,
      `--upload-pack=touch ${at('upload')}`,
      '-c',
      `"; touch ${at('semicolon')}; "`,
    ];
    const { dir, git } = await makeRepo(Object.fromEntries(names.map((name) => [name, 'data\n'])));
    // A ref name holds no space: the shell's own $IFS stands in for one.
    const ifs = '$' + '{IFS}';
    const branch = `main'$(touch${ifs}/work/repo/branch-RAN)'\`touch${ifs}/work/repo/branch2-RAN\``;
    await git('checkout', '-q', '-b', branch);
    await git('commit', '-q', '-m', 'names');
    const box = await createBox(dir);
    const inside = await execBox(box.id, [
      'sh',
      '-c',
      'cat .git/HEAD; for f in ./* ./.??*; do [ -f "$f" ] && cat -- "$f"; done; ls -d /work/repo/*-RAN 2>/dev/null | wc -l',
    ]);
    expect(inside.stdout).toBe(`ref: refs/heads/${branch}\n${'data\n'.repeat(names.length)}0\n`);
    await destroyBox(box.id);
    await canary.assertUntouched();
  });

  it("a clone that fails after a flood of git errors costs the CLI the flood's tail, not the flood", async () => {
    // git reports every line of objects/info/alternates it cannot use, twice: 64 MiB of lines
    // (within the source caps) are ~128 MiB of stderr, then the missing tree fails the clone.
    const { dir, git } = await makeRepo({ 'README.md': 'x' });
    await git('commit', '-q', '-m', 'init');
    const line = `/nonexistent/${'a'.repeat(4000)}\n`;
    await writeFile(join(dir, '.git', 'objects', 'info', 'alternates'), line.repeat(16_000));
    const tree = (await git('rev-parse', 'HEAD^{tree}')).stdout.trim();
    await rm(join(dir, '.git', 'objects', tree.slice(0, 2), tree.slice(2)));
    // The CLI's own peak memory, written by a module node loads before the bin.
    const rssFile = join(canary.dir, 'max-rss');
    const hook = `import{appendFileSync}from'node:fs';process.on('exit',()=>appendFileSync('${rssFile}',process.resourceUsage().maxRSS+'\\n'))`;
    const name = uniqueName();
    const result = await cli(['create', dir, '--json', '--name', name, '--network', 'offline'], {
      NODE_OPTIONS: `--import=data:text/javascript,${hook}`,
    });
    expect(result.exitCode, result.stderr.slice(0, 400)).toBe(1);
    expect(JSON.parse(result.stderr).error.code).toBe('CLONE_FAILED');
    const peakKiB = Math.max(...(await readFile(rssFile, 'utf8')).trim().split('\n').map(Number));
    // It was ~490 MiB when the whole stderr came back (buffers, concat, string); ~115 MiB now.
    expect(peakKiB).toBeLessThan(256 * 1024);
    expect(await labeledLeft(name)).toEqual([]);
    await rm(rssFile);
    await canary.assertUntouched();
  });

  it("a token in the origin's query or password never reaches the box, in any URL form", async () => {
    const secrets = ['glpat-queryTokenMustStay', 'sshPasswordMustStay', 'httpPasswordMustStay'];
    const origins = [
      // A query: git appends its own path to a remote URL, only a token rides there.
      `https://gitlab.example/org/repo.git?private_token=${secrets[0]}`,
      `ssh://git:${secrets[1]}@host.example/org/repo.git`,
      `http://oauth2:${secrets[2]}@host.example:8080/org/repo.git?x=1`,
    ];
    const expected = [
      'https://gitlab.example/org/repo.git',
      'ssh://git@host.example/org/repo.git',
      'http://host.example:8080/org/repo.git',
    ];
    for (const [index, origin] of origins.entries()) {
      const { dir, git } = await makeRepo({ 'README.md': 'x' });
      await git('commit', '-q', '-m', 'init');
      await git('remote', 'add', 'origin', origin);
      const box = await createBox(dir);
      const inside = await execBox(box.id, [
        'sh',
        '-c',
        `grep -F -A1 '[remote "origin"]' .git/config; grep -rlE '${secrets.join('|')}' .git || echo no-token`,
      ]);
      expect(inside.stdout).toBe(`[remote "origin"]\n\turl = ${expected[index]}\nno-token\n`);
      await destroyBox(box.id);
    }
  });

  it('a .git/config that is a FIFO, a link to a host file or oversized gives no origin and never blocks', async () => {
    const hostConfig = join(canary.dir, 'host.gitconfig');
    const shapes: [string, (config: string) => Promise<void>][] = [
      ['fifo', async (config) => void (await execa('mkfifo', [config]))],
      [
        'link',
        async (config) => {
          await writeFile(
            hostConfig,
            '[remote "origin"]\n\turl = https://leak.example/hostSecretMustStay.git\n',
          );
          await symlink(hostConfig, config);
        },
      ],
      [
        'huge',
        async (config) =>
          writeFile(
            config,
            `${'#'.repeat(300 * 1024)}\n[remote "origin"]\n\turl = https://leak.example/hugeMustNotBeRead.git\n`,
          ),
      ],
    ];
    for (const [shape, make] of shapes) {
      const { dir, git } = await makeRepo({ 'README.md': shape });
      await git('commit', '-q', '-m', 'init');
      await rm(join(dir, '.git', 'config'));
      await make(join(dir, '.git', 'config'));
      const box = await createBox(dir);
      const inside = await execBox(box.id, [
        'sh',
        '-c',
        "cat README.md; grep -c 'leak.example' .git/config || true",
      ]);
      expect(inside.stdout, shape).toBe(`${shape}0\n`);
      await destroyBox(box.id);
      await rm(hostConfig, { force: true });
    }
    await canary.assertUntouched();
  });

  it('a symlink to a host secret arrives as a dangling link, never the secret', async () => {
    const { dir, git } = await makeRepo({ 'README.md': 'x' });
    await symlink(canary.file, join(dir, 'secret-link'));
    await git('add', '-A');
    await git('commit', '-q', '-m', 'link');
    const box = await createBox(dir);
    const inside = await execBox(box.id, [
      'sh',
      '-c',
      'readlink secret-link; cat secret-link 2>&1 || echo unreadable',
    ]);
    expect(inside.stdout).toContain(canary.file);
    expect(inside.stdout).toContain('unreadable');
    expect(inside.stdout).not.toContain(canary.content.trim());
    await destroyBox(box.id);
    await canary.assertUntouched();
  });
});
