import { mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidSandboxIdError, InvalidSourceError } from './errors.js';
import {
  parseRef,
  parseSource,
  redactUserinfo,
  repoNameOf,
  urlIdentity,
  urlWithoutUserinfo,
  validateSandboxName,
} from './source.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-src-'));
  await writeFile(join(dir, 'file.txt'), 'x');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('redactUserinfo and urlWithoutUserinfo', () => {
  it('masks every URL userinfo in a text, user and password alike', () => {
    expect(redactUserinfo('https://ghp_t0ken@github.com/x')).toBe('https://***@github.com/x');
    expect(redactUserinfo("fatal: repository 'https://u:p@h/r/' not found; see http://t@k/y")).toBe(
      "fatal: repository 'https://***@h/r/' not found; see http://***@k/y",
    );
    expect(redactUserinfo('ssh://git@h/r')).toBe('ssh://***@h/r');
    expect(redactUserinfo('/home/me/repo')).toBe('/home/me/repo');
    expect(redactUserinfo('https://h/p@q')).toBe('https://h/p@q');
  });

  it('property: the password and user never survive', () => {
    const part = fc.stringMatching(/^[A-Za-z0-9_~%-]{1,30}$/);
    fc.assert(
      fc.property(part, part, (user, password) => {
        const url = `https://${user}:${password}@example.com/r.git`;
        expect(redactUserinfo(url)).toBe('https://***@example.com/r.git');
        expect(urlWithoutUserinfo({ url, scheme: 'https' })).toBe('https://example.com/r.git');
      }),
    );
  });

  it('the origin URL keeps an ssh user, drops http(s)/git userinfo', () => {
    expect(urlWithoutUserinfo({ url: 'ssh://git@h/r', scheme: 'ssh' })).toBe('ssh://git@h/r');
    expect(urlWithoutUserinfo({ url: 'git://u@h/r', scheme: 'git' })).toBe('git://h/r');
    expect(urlWithoutUserinfo({ url: 'https://h/r', scheme: 'https' })).toBe('https://h/r');
  });
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

  const loopback = [
    'http://localhost/r.git',
    'https://LOCALHOST.:8443/r.git',
    'https://git.localhost/r.git',
    'https://127.0.0.1:8080/r.git',
    'http://127.1/r.git',
    'http://2130706433/r.git',
    'http://0x7f.0.0.1/r.git',
    'git://127.0.0.2/r',
    'http://0.0.0.0/r.git',
    'ssh://git@[::1]/r.git',
    'http://[::ffff:127.0.0.1]/r.git',
    'git@localhost:r.git',
    'git@127.0.0.1:r.git',
    'http://ca-sandbox-gateway.invalid:3128/x.git',
    'https://ip6-localhost/r.git',
    'ssh://git@IP6-LOOPBACK./r.git',
    'git@ip6-loopback:r.git',
  ];
  for (const source of loopback) {
    it(`${JSON.stringify(source)}: a loopback host, which the clone's container cannot mean`, async () => {
      await expect(parseSource(source)).rejects.toThrow(
        /is a loopback address: the clone runs in a container/,
      );
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

  it('hosts that only look like loopback, and LAN addresses (naming one is a decision)', async () => {
    for (const source of [
      'https://127.example.com/r.git',
      'https://localhost.example.com/r.git',
      'https://ip6-localhost.example.com/r.git',
      'http://192.168.1.5/r.git',
      'ssh://git@[fd00::1]/r.git',
    ])
      expect(await parseSource(source)).toMatchObject({ kind: 'url' });
  });

  it('scp-like user@host:path as ssh', async () => {
    expect(await parseSource('git@github.com:o/my-repo.git')).toMatchObject({
      kind: 'url',
      scheme: 'ssh',
      repoName: 'my-repo',
    });
  });

  it('hides all userinfo (user and password) in the display form, keeps it in the clone URL', async () => {
    const parsed = await parseSource('https://me:s3cret@example.com/r.git');
    expect(parsed.display).toBe('https://***@example.com/r.git');
    expect(parsed.kind === 'url' && parsed.url).toContain('s3cret');
    // A token alone sits in the user part.
    expect((await parseSource('https://ghp_t0ken@github.com/x')).display).toBe('https://***@github.com/x');
    expect((await parseSource('http://a%40b:p%3Aw@h:8080/r')).display).toBe('http://***@h:8080/r');
    expect((await parseSource('git@github.com:o/r.git')).display).toBe('***@github.com:o/r.git');
    expect((await parseSource('https://example.com/a@b.git')).display).toBe('https://example.com/a@b.git');
  });

  it('errors do not echo the userinfo of a refused source', async () => {
    for (const source of ['ftp://ghp_t0ken@example.com/r', 'https://ghp_t0ken@exa mple.com/r']) {
      const error = await parseSource(source).catch((caught: unknown) => caught as Error);
      expect(error).toBeInstanceOf(InvalidSourceError);
      expect((error as Error).message).not.toContain('ghp_t0ken');
    }
  });

  it('an existing local directory, resolved to an absolute path; its identity is the realpath', async () => {
    const parsed = await parseSource(dir);
    expect(parsed).toMatchObject({ kind: 'local', path: dir, identity: await realpath(dir) });
    const link = join(dir, 'via-link');
    await symlink(dir, link);
    expect((await parseSource(link)).identity).toBe(await realpath(dir));
  });
});

describe('urlIdentity (the cache key of a URL source)', () => {
  it('drops credentials and lower-cases scheme and host, nothing else', () => {
    expect(urlIdentity({ url: 'HTTPS://ghp_t0ken@GitHub.COM/Owner/Repo.git', scheme: 'https' })).toBe(
      'https://github.com/Owner/Repo.git',
    );
    expect(urlIdentity({ url: 'http://me:pw@10.0.0.1:8080/r.git', scheme: 'http' })).toBe(
      'http://10.0.0.1:8080/r.git',
    );
    expect(urlIdentity({ url: 'git://Host/r', scheme: 'git' })).toBe('git://host/r');
  });

  it('keeps an ssh login (it can select another home directory)', () => {
    expect(urlIdentity({ url: 'ssh://alice@Host/r.git', scheme: 'ssh' })).toBe('ssh://alice@host/r.git');
    expect(urlIdentity({ url: 'alice@Host:r.git', scheme: 'ssh' })).toBe('alice@host:r.git');
    expect(urlIdentity({ url: 'bob@host:r.git', scheme: 'ssh' })).not.toBe(
      urlIdentity({ url: 'alice@host:r.git', scheme: 'ssh' }),
    );
  });

  it('parseSource gives every URL form its identity', async () => {
    expect((await parseSource('https://t0k@Example.com/o/r.git')).identity).toBe(
      'https://example.com/o/r.git',
    );
    expect((await parseSource('git@Example.com:o/r.git')).identity).toBe('git@example.com:o/r.git');
  });
});

describe('validateSandboxName', () => {
  it.each(['a', 'sbx-1', 'my.box_2', '0abc', 'a'.repeat(63)])('accepts %s', (name) => {
    expect(validateSandboxName(name)).toBe(name);
  });
  it.each(['', '-a', '.a', '_a', 'A', 'a b', 'a/b', 'a'.repeat(64), 'a\n', 'é'])('refuses %j', (name) => {
    expect(() => validateSandboxName(name)).toThrow(InvalidSandboxIdError);
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
