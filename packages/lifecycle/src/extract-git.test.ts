import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractTar } from './extract.js';
import { minimalGitConfig } from './git-guard.js';

type Item = Partial<tar.Header> & { name: string } & { body?: string };

function tarOf(items: Item[]): Readable {
  const pack = tar.pack();
  for (const { body, ...header } of items) {
    if (body !== undefined) pack.entry({ type: 'file', mode: 0o644, ...header }, body);
    else pack.entry({ type: 'directory', mode: 0o755, ...header });
  }
  pack.finalize();
  return Readable.from(pack);
}

const LIMITS = { maxBytes: 1024 * 1024, maxEntries: 1000 };
const dir = (name: string): Item => ({ name, type: 'directory', mode: 0o755 });
const file = (name: string, body = 'x', mode = 0o644): Item => ({ name, type: 'file', mode, body });

/** A git directory the box booby-trapped: fsmonitor, hooks, hooksPath, a filter, attributes. */
function trappedGitDir(root: string): Item[] {
  return [
    dir(root),
    file(`${root}/HEAD`, 'ref: refs/heads/main\n'),
    file(
      `${root}/config`,
      '[core]\n\tfsmonitor = touch /tmp/pwned\n\thooksPath = .evil\n[extensions]\n\tobjectformat = sha256\n',
    ),
    dir(`${root}/hooks`),
    file(`${root}/hooks/pre-commit`, '#!/bin/sh\ntouch /tmp/pwned\n', 0o755),
    dir(`${root}/info`),
    file(`${root}/info/attributes`, '* filter=evil\n'),
    file(`${root}/info/exclude`, '*.log\n'),
    dir(`${root}/objects`),
    dir(`${root}/objects/ab`),
    file(`${root}/objects/ab/${'c'.repeat(38)}`, 'zlib', 0o755),
    dir(`${root}/objects/ab/evil`),
    dir(`${root}/objects/info`),
    file(`${root}/objects/info/alternates`, '/home/user/other/.git/objects\n'),
    file(`${root}/objects/info/packs`, 'P x\n'),
    dir(`${root}/objects/pack`),
    file(`${root}/objects/pack/pack-${'1'.repeat(40)}.pack`, 'PACK'),
    file(`${root}/objects/pack/notes.txt`, 'x'),
    dir(`${root}/refs`),
    dir(`${root}/refs/heads`),
    file(`${root}/refs/heads/main`, `${'a'.repeat(40)}\n`),
    // A ref directory shaped like a repository of its own, with a config.
    dir(`${root}/refs/heads/nest`),
    file(`${root}/refs/heads/nest/HEAD`, 'ref: refs/heads/main\n'),
    dir(`${root}/refs/heads/nest/objects`),
    dir(`${root}/refs/heads/nest/refs`),
    file(`${root}/refs/heads/nest/config`, '[core]\n\tfsmonitor = touch /tmp/pwned\n'),
    file(`${root}/packed-refs`, '# pack-refs\n'),
    file(`${root}/index`, 'DIRC'),
    file(`${root}/shallow`, `${'a'.repeat(40)}\n`),
    dir(`${root}/modules`),
    file(`${root}/modules/x`, 'x'),
    dir(`${root}/rebase-merge`),
    file(`${root}/rebase-merge/git-rebase-todo`, 'exec touch /tmp/pwned\n'),
    { name: `${root}/link-to-config`, type: 'symlink', linkname: 'config' },
  ];
}

let target: string;
beforeEach(async () => {
  target = await mkdtemp(join(tmpdir(), 'ca-lc-git-'));
});
afterEach(async () => {
  await rm(target, { recursive: true, force: true });
});

describe('extractTar and git directories', () => {
  it('withholds .git directories and .git files at any depth, reported once each', async () => {
    const summary = await extractTar(
      tarOf([
        dir('repo'),
        file('repo/keep.txt'),
        ...trappedGitDir('repo/.git'),
        dir('repo/vendor'),
        dir('repo/vendor/lib'),
        ...trappedGitDir('repo/vendor/lib/.GIT'),
        dir('repo/sub'),
        file('repo/sub/.git', 'gitdir: ../evil\n'),
        dir('repo/other'),
        { name: 'repo/other/.g\u200cit', type: 'symlink', linkname: '../sub' },
      ]),
      target,
      'repo',
      LIMITS,
    );
    expect(summary.skipped.map((s) => s.path)).toEqual([
      'repo/.git',
      'repo/vendor/lib/.GIT',
      'repo/sub/.git',
      'repo/other/.g\u200cit',
    ]);
    expect(summary.skipped[0]?.reason).toMatch(/git directory withheld/);
    expect(summary.skipped[2]?.reason).toMatch(/\.git file withheld/);
    expect((await readdir(join(target, 'repo'), { recursive: true })).sort()).toEqual([
      'keep.txt',
      'other',
      'sub',
      'vendor',
      'vendor/lib',
    ]);
    // Nothing of the git directories counted as written.
    expect(summary.bytes).toBe(1);
  });

  it('withholds any directory git would open as a repository, before links are made', async () => {
    const summary = await extractTar(
      tarOf([
        dir('repo'),
        ...trappedGitDir('repo/fixtures/bare.git').map((item) => ({ ...item })),
        dir('repo/worktree-of'),
        file('repo/worktree-of/HEAD', 'ref: refs/heads/main\n'),
        file('repo/worktree-of/commondir', '../elsewhere\n'),
        dir('repo/plain'),
        file('repo/plain/HEAD', 'just a file named HEAD'),
        { name: 'repo/to-config', type: 'symlink', linkname: 'fixtures/bare.git/config' },
        { name: 'repo/to-bare', type: 'symlink', linkname: 'fixtures/bare.git' },
        { name: 'repo/hard-config', type: 'link', linkname: 'repo/fixtures/bare.git/config' },
      ]),
      target,
      'repo',
      LIMITS,
    );
    const skipped = Object.fromEntries(summary.skipped.map((s) => [s.path, s.reason]));
    expect(skipped['repo/fixtures/bare.git']).toMatch(/open this directory as a repository/);
    expect(skipped['repo/worktree-of']).toMatch(/open this directory as a repository/);
    expect(skipped['repo/to-config']).toBeDefined();
    expect(skipped['repo/to-bare']).toMatch(/git directory/);
    expect(skipped['repo/hard-config']).toBeDefined();
    expect((await readdir(join(target, 'repo'), { recursive: true })).sort()).toEqual([
      'fixtures',
      'plain',
      'plain/HEAD',
    ]);
  });

  it('sanitized: keeps history, writes its own config, drops hooks, attributes, alternates and exec bits', async () => {
    const summary = await extractTar(
      tarOf([dir('repo'), file('repo/run.sh', '#!/bin/sh\n', 0o755), ...trappedGitDir('repo/.git')]),
      target,
      'repo',
      LIMITS,
      { git: 'sanitized' },
    );
    const git = join(target, 'repo/.git');
    expect((await readdir(git, { recursive: true })).sort()).toEqual([
      'HEAD',
      'config',
      'index',
      'info',
      'info/exclude',
      'objects',
      'objects/ab',
      `objects/ab/${'c'.repeat(38)}`,
      'objects/info',
      'objects/info/packs',
      'objects/pack',
      `objects/pack/pack-${'1'.repeat(40)}.pack`,
      'packed-refs',
      'refs',
      'refs/heads',
      'refs/heads/main',
      'shallow',
    ]);
    // The box's object format is carried over (history would not read otherwise), nothing else.
    expect(await readFile(join(git, 'config'), 'utf8')).toBe(
      minimalGitConfig({ bare: false, objectFormat: 'sha256' }),
    );
    for (const name of await readdir(git, { recursive: true })) {
      const info = await lstat(join(git, name));
      if (info.isFile()) expect(info.mode & 0o111, name).toBe(0);
      expect(info.isSymbolicLink()).toBe(false);
    }
    // The worktree keeps its own modes.
    expect((await stat(join(target, 'repo/run.sh'))).mode & 0o777).toBe(0o755);
    const dropped = summary.skipped.map((s) => s.path);
    expect(dropped).toEqual(
      expect.arrayContaining([
        'repo/.git/config',
        'repo/.git/hooks',
        'repo/.git/info/attributes',
        'repo/.git/objects/info/alternates',
        'repo/.git/objects/ab/evil',
        'repo/.git/objects/pack/notes.txt',
        'repo/.git/refs/heads/nest',
        'repo/.git/modules',
        'repo/.git/rebase-merge',
        'repo/.git/link-to-config',
      ]),
    );
  });

  it('sanitized: a repository-shaped directory becomes a bare repository with our config; .git files stay withheld', async () => {
    const summary = await extractTar(
      tarOf([
        dir('repo'),
        ...trappedGitDir('repo/bare.git'),
        dir('repo/sub'),
        file('repo/sub/.git', 'gitdir: ../bare.git\n'),
      ]),
      target,
      'repo',
      LIMITS,
      { git: 'sanitized' },
    );
    expect(await readFile(join(target, 'repo/bare.git/config'), 'utf8')).toBe(
      minimalGitConfig({ bare: true, objectFormat: 'sha256' }),
    );
    await expect(lstat(join(target, 'repo/bare.git/hooks'))).rejects.toThrow(/ENOENT/);
    await expect(lstat(join(target, 'repo/sub/.git'))).rejects.toThrow(/ENOENT/);
    expect(summary.skipped.find((s) => s.path === 'repo/sub/.git')?.reason).toMatch(/\.git file withheld/);
  });

  it('the copied path itself being a git directory: withheld (nothing written) or sanitised', async () => {
    const withheld = await extractTar(tarOf(trappedGitDir('.git')), target, '.git', LIMITS);
    expect(withheld.skipped).toEqual([{ path: '.git', reason: expect.stringMatching(/withheld/) }]);
    expect(await readdir(target)).toEqual([]);
    await extractTar(tarOf(trappedGitDir('.git')), target, '.git', LIMITS, { git: 'sanitized' });
    expect(await readFile(join(target, '.git/config'), 'utf8')).not.toMatch(/fsmonitor/);
  });
});

describe('extractTar warnings', () => {
  it('reports files a host tool may run by itself, and only those', async () => {
    const summary = await extractTar(
      tarOf([
        dir('repo'),
        file('repo/.envrc', 'export X=1'),
        dir('repo/.vscode'),
        file('repo/.vscode/tasks.json', '{}'),
        file('repo/.vscode/settings.json', '{}'),
        file('repo/.vscode/launch.json', '{}'),
        file('repo/.vscode/extensions.json', '{}'),
        file('repo/tasks.json', '{}'),
        dir('repo/.husky'),
        file('repo/.husky/pre-commit', 'npm test', 0o755),
        dir('repo/.devcontainer'),
        file('repo/.gitattributes', '*.png binary\n*.txt text eol=lf\n'),
        dir('repo/assets'),
        file('repo/assets/.gitattributes', '*.bin filter=lfs diff=lfs merge=lfs -text\n'),
        dir('repo/deep'),
        dir('repo/deep/er'),
        file('repo/deep/er/.ENVRC', 'x'),
        file('repo/.yarnrc.yml', 'yarnPath: ./evil.js\n'),
        file('repo/.yarnrc', 'yarn-path "./evil.js"\n'),
        file('repo/.pnpmfile.cjs', 'module.exports = {}'),
        file('repo/x.code-workspace', '{}'),
        dir('repo/.idea'),
        file('repo/.idea/workspace.xml', '<project/>'),
        file('repo/.npmrc', 'registry=https://registry.npmjs.org/\n'),
      ]),
      target,
      'repo',
      LIMITS,
    );
    expect(summary.warnings.map((w) => w.path)).toEqual([
      'repo/.devcontainer',
      'repo/.envrc',
      'repo/.husky',
      'repo/.idea',
      'repo/.pnpmfile.cjs',
      'repo/.vscode/launch.json',
      'repo/.vscode/settings.json',
      'repo/.vscode/tasks.json',
      'repo/.yarnrc',
      'repo/.yarnrc.yml',
      'repo/assets/.gitattributes',
      'repo/deep/er/.ENVRC',
      'repo/x.code-workspace',
    ]);
    expect(summary.warnings.find((w) => w.path === 'repo/assets/.gitattributes')?.reason).toMatch(/filter/);
    // Reported, not withheld.
    expect(await readFile(join(target, 'repo/.envrc'), 'utf8')).toBe('export X=1');
  });
});

describe('extractTar and the metadata of other VCS tools', () => {
  it('withholds .hg, .sl, .jj, _darcs and the rest in any case and spelling, under both git modes', async () => {
    for (const git of ['withhold', 'sanitized'] as const) {
      const out = join(target, git);
      await mkdir(out);
      const summary = await extractTar(
        tarOf([
          dir('repo'),
          dir('repo/.hg'),
          file('repo/.hg/hgrc', '[hooks]\npre-status = touch /tmp/pwned\n'),
          file('repo/.hg/requires', 'store\n'),
          dir('repo/sub'),
          dir('repo/sub/.HG.'),
          file('repo/sub/.HG./hgrc', '[hooks]\n'),
          dir('repo/.sl'),
          file('repo/.sl/config', '[hooks]\n'),
          dir('repo/.jj'),
          dir('repo/.jj/repo'),
          file('repo/.jj/repo/config.toml', 'ui.pager = "touch /tmp/pwned"\n'),
          dir('repo/_darcs'),
          dir('repo/_darcs/prefs'),
          file('repo/_darcs/prefs/defaults', 'ALL posthook touch /tmp/pwned\n'),
          file('repo/.fslckout', 'SQLite'),
          file('repo/.h\u200cg', 'an ignorable character makes it .hg on macOS'),
          file('repo/hg', 'an ordinary file'),
          file('repo/note.hg', 'an ordinary file'),
        ]),
        out,
        'repo',
        LIMITS,
        { git },
      );
      expect(summary.skipped.map((s) => s.path)).toEqual([
        'repo/.hg',
        'repo/sub/.HG.',
        'repo/.sl',
        'repo/.jj',
        'repo/_darcs',
        'repo/.fslckout',
        'repo/.h\u200cg',
      ]);
      expect(summary.skipped[0]?.reason).toMatch(/Mercurial would run the hooks/);
      expect((await readdir(join(out, 'repo'), { recursive: true })).sort()).toEqual([
        'hg',
        'note.hg',
        'sub',
      ]);
    }
  });

  it('a copy of the metadata directory itself writes nothing', async () => {
    const summary = await extractTar(
      tarOf([dir('.hg'), file('.hg/hgrc', '[hooks]\n')]),
      target,
      '.hg',
      LIMITS,
    );
    expect(summary.skipped).toEqual([
      { path: '.hg', reason: expect.stringMatching(/VCS metadata withheld/) },
    ]);
    expect(await readdir(target)).toEqual([]);
  });
});
