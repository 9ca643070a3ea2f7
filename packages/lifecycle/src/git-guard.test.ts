import { describe, expect, it } from 'vitest';
import {
  isDotGit,
  keptInGitDir,
  looksLikeGitDir,
  minimalGitConfig,
  parseRepositoryFormats,
} from './git-guard.js';

describe('git names', () => {
  it('.git as a case-insensitive or HFS+ file system sees it', () => {
    for (const name of ['.git', '.GIT', '.Git', '.g\u200cit', '\ufeff.git', '.git.', '.git ']) {
      expect(isDotGit(name), JSON.stringify(name)).toBe(true);
    }
    for (const name of ['git', '.gitignore', '.git2', '..git', 'x.git', '.gi t']) {
      expect(isDotGit(name), name).toBe(false);
    }
  });

  it('a repository layout is HEAD with objects and refs, or HEAD with commondir', () => {
    expect(looksLikeGitDir(new Set(['head', 'objects', 'refs']))).toBe(true);
    expect(looksLikeGitDir(new Set(['head', 'commondir']))).toBe(true);
    expect(looksLikeGitDir(new Set(['head', 'objects']))).toBe(false);
    expect(looksLikeGitDir(new Set(['objects', 'refs', 'config']))).toBe(false);
    expect(looksLikeGitDir(undefined)).toBe(false);
  });
});

describe('the sanitised git directory', () => {
  it('keeps history and drops what git could run', () => {
    expect(keptInGitDir(['HEAD'], false)).toBe(true);
    expect(keptInGitDir(['refs', 'tags', 'v1'], false)).toBe(true);
    expect(keptInGitDir(['objects', 'pack', `pack-${'0'.repeat(40)}.idx`], false)).toBe(true);
    expect(keptInGitDir(['objects', 'info', 'commit-graphs', 'commit-graph-chain'], false)).toBe(true);
    for (const path of [
      ['config'],
      ['config.worktree'],
      ['hooks'],
      ['hooks', 'pre-commit'],
      ['info', 'attributes'],
      ['objects', 'info', 'alternates'],
      ['objects', 'info', 'http-alternates'],
      ['commondir'],
      ['modules'],
      ['worktrees'],
      ['sequencer'],
      ['HEAD', 'x'],
    ]) {
      expect(keptInGitDir(path, path.length === 1 && path[0] === 'hooks'), path.join('/')).toBe(false);
    }
  });

  it('reads only the two format extensions, by exact value', () => {
    expect(
      parseRepositoryFormats(
        '[core]\n\tfsmonitor = x\n[extensions]\n\tobjectFormat = sha256\n\trefStorage = reftable\n\tworktreeConfig = true\n',
      ),
    ).toEqual({ objectFormat: 'sha256', refStorage: 'reftable' });
    expect(parseRepositoryFormats('[extensions]\n\tobjectformat = "sha256; touch x"\n')).toEqual({});
    expect(parseRepositoryFormats('[core]\n\tobjectformat = sha256\n')).toEqual({});
  });

  it('writes a config that names no command, path or remote', () => {
    expect(minimalGitConfig({ bare: false })).toBe(
      '# Written by ca-sandbox: the box config was not copied (sanitised copy-out).\n[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n',
    );
    expect(minimalGitConfig({ bare: true, objectFormat: 'sha256' })).toContain(
      'repositoryformatversion = 1\n\tfilemode = true\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n',
    );
  });
});
