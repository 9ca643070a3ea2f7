import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { localOrigin, originUrlFromConfig } from './local-origin.js';
import { scanDirectory } from './pack-local.js';

const config = (origin: string, extra = '') =>
  `[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://other.example/x.git\n[remote "origin"]\n${extra}\turl = ${origin}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`;

describe('originUrlFromConfig', () => {
  it('takes a network origin, without the credentials of an https URL', () => {
    expect(originUrlFromConfig(config('https://github.com/org/repo.git'))).toBe(
      'https://github.com/org/repo.git',
    );
    expect(originUrlFromConfig(config('https://user:ghp_secret@github.com/org/repo.git'))).toBe(
      'https://github.com/org/repo.git',
    );
    expect(
      originUrlFromConfig(config('https://gitlab.example/org/repo.git?private_token=glpat-secret')),
    ).toBe('https://gitlab.example/org/repo.git');
    expect(originUrlFromConfig(config('https://:tok@host.example/r.git?access_token=t&x=1'))).toBe(
      'https://host.example/r.git',
    );
    expect(originUrlFromConfig(config('ssh://git:pw@host.example/r.git?t=1'))).toBe(
      'ssh://git@host.example/r.git',
    );
    expect(originUrlFromConfig(config('ssh://git@host.example:2222/org/repo.git'))).toBe(
      'ssh://git@host.example:2222/org/repo.git',
    );
    expect(originUrlFromConfig(config('git@github.com:org/repo.git'))).toBe('git@github.com:org/repo.git');
  });

  it('gives no origin for a path, file://, anything quoted, escaped or commented, or none', () => {
    for (const value of [
      '/home/me/elsewhere',
      '../sibling',
      'file:///home/me/repo',
      '"https://github.com/org/repo.git"',
      'https://github.com/org/repo.git # note',
      'https://github.com/org/re\\po.git',
      'ext::sh -c touch% /tmp/pwned',
      '-oProxyCommand=x@host:y',
    ]) {
      expect(originUrlFromConfig(config(value)), value).toBeUndefined();
    }
    expect(originUrlFromConfig('[core]\n\tbare = false\n')).toBeUndefined();
  });
});

describe('localOrigin (read from the scanned tree)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const repo = () => {
    const dir = mkdtempSync(join(tmpdir(), 'ca-origin-'));
    dirs.push(dir);
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, 'README.md'), 'x\n');
    return dir;
  };

  it('reads the config the scan saw as a file', async () => {
    const dir = repo();
    writeFileSync(join(dir, '.git', 'config'), config('https://tok@example.com/a/b.git'));
    expect(await localOrigin(await scanDirectory(dir))).toBe('https://example.com/a/b.git');
  });

  it('never follows a config that is a symlink (to a host file holding a URL-looking secret)', async () => {
    const dir = repo();
    const secret = join(dir, '..', `ca-origin-secret-${process.pid}`);
    writeFileSync(secret, config('https://leaked.example/secret.git'));
    dirs.push(secret);
    symlinkSync(secret, join(dir, '.git', 'config'));
    expect(await localOrigin(await scanDirectory(dir))).toBeUndefined();
  });
});
