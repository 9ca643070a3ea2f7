import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidSandboxNameError, InvalidSourceError } from './errors.js';
import { parseRef, parseSource, repoNameOf, validateSandboxName } from './source.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-src-'));
  await writeFile(join(dir, 'file.txt'), 'x');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseSource refuses', () => {
  const refused = [
    '',
    '-oProxyCommand=x@host:path',
    '--upload-pack=touch /tmp/pwned',
    '-',
    'ext::sh -c touch% /tmp/pwned',
    'fd::3',
    'foo::bar',
    'transport+x::https://example.com/r.git',
    'file:///etc',
    'FILE:///etc',
    'ssh://-oProxyCommand=touch%20/tmp/x/repo',
    'ssh://%2doProxyCommand=x/repo',
    'ssh://-user@host/repo',
    'ssh://%2duser@host/repo',
    'https://-host/repo',
    'ftp://example.com/repo',
    'https://example.com/re\npo',
    'https://example.com/repo\u0000',
    'https://example.com/re po',
    'https://exa mple.com/repo',
    'user@-host:path',
    '-user@host:path',
    'https:///nohost',
    'not a url at all',
    'ssh://user:pa:ss@host/repo',
  ];
  for (const source of refused) {
    it(`${JSON.stringify(source)}`, async () => {
      await expect(parseSource(source)).rejects.toBeInstanceOf(InvalidSourceError);
    });
  }

  it('a path that does not exist, and a file', async () => {
    await expect(parseSource(join(dir, 'missing'))).rejects.toThrow(/not an existing directory/);
    await expect(parseSource(join(dir, 'file.txt'))).rejects.toThrow(/not a directory/);
  });

  it('errors are usage errors with a lower-case message', async () => {
    const error = await parseSource('ext::sh').catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'usage', code: 'INVALID_SOURCE' });
    expect((error as Error).message).toMatch(/^[a-z]/);
  });

  it('any string beginning with "-" is refused (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), async (tail) => {
        await expect(parseSource(`-${tail}`)).rejects.toBeInstanceOf(InvalidSourceError);
      }),
    );
  });

  it('any control character is refused (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 0x1f }), fc.string(), async (code, tail) => {
        await expect(
          parseSource(`https://example.com/${String.fromCharCode(code)}${tail}`),
        ).rejects.toBeInstanceOf(InvalidSourceError);
      }),
    );
  });
});

describe('parseSource accepts', () => {
  it('https, http, git and ssh URLs', async () => {
    expect(await parseSource('https://github.com/o/r.git')).toMatchObject({
      kind: 'url',
      scheme: 'https',
      repoName: 'r',
    });
    expect(await parseSource('http://example.com/x/Repo')).toMatchObject({
      scheme: 'http',
      repoName: 'repo',
    });
    expect(await parseSource('git://172.17.0.2:9418/r.git')).toMatchObject({ scheme: 'git', repoName: 'r' });
    expect(await parseSource('ssh://git@example.com:2222/o/r.git')).toMatchObject({ scheme: 'ssh' });
  });

  it('scp-like user@host:path as ssh', async () => {
    expect(await parseSource('git@github.com:o/my-repo.git')).toMatchObject({
      kind: 'url',
      scheme: 'ssh',
      repoName: 'my-repo',
    });
  });

  it('hides a password in the display form', async () => {
    const parsed = await parseSource('https://me:s3cret@example.com/r.git');
    expect(parsed.display).toBe('https://me:***@example.com/r.git');
    expect(parsed.kind === 'url' && parsed.url).toContain('s3cret');
  });

  it('an existing local directory, resolved to an absolute path', async () => {
    const parsed = await parseSource(dir);
    expect(parsed).toMatchObject({ kind: 'local', path: dir });
  });
});

describe('validateSandboxName', () => {
  it.each(['a', 'sbx-1', 'my.box_2', '0abc', 'a'.repeat(63)])('accepts %s', (name) => {
    expect(validateSandboxName(name)).toBe(name);
  });
  it.each(['', '-a', '.a', '_a', 'A', 'a b', 'a/b', 'a'.repeat(64), 'a\n', 'é'])('refuses %j', (name) => {
    expect(() => validateSandboxName(name)).toThrow(InvalidSandboxNameError);
  });
});

describe('parseRef', () => {
  it('tells a commit sha from a branch', () => {
    expect(parseRef('main')).toEqual({ ref: 'main', commit: false });
    expect(parseRef('v1.2.3')).toEqual({ ref: 'v1.2.3', commit: false });
    expect(parseRef('a'.repeat(40))).toEqual({ ref: 'a'.repeat(40), commit: true });
  });
  it.each(['-b', '--upload-pack=x', 'a..b', 'a//b', 'x/', 'a.lock', 'a b', 'a\nb', ''])(
    'refuses %j',
    (ref) => {
      expect(() => parseRef(ref)).toThrow(/invalid ref/);
    },
  );
});

describe('repoNameOf', () => {
  it('sanitises', () => {
    expect(repoNameOf('/o/My Repo.git/')).toBe('my-repo');
    expect(repoNameOf('/')).toBe('repo');
    expect(repoNameOf('/--x--')).toBe('x');
  });
});
