import { InvalidSandboxIdError } from '@ca-sandbox/docker/contracts';
import { describe, expect, it } from 'vitest';
import { UsageError } from './errors.js';
import { assertSandboxId, parseCpOperands, resolveCreateOptions, resolveExecOptions } from './options.js';

function usageMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected a usage error');
}

describe('resolveCreateOptions', () => {
  it('defaults to offline and passes on only what was given', () => {
    expect(resolveCreateOptions('./repo', {})).toEqual({ source: './repo', network: 'offline' });
  });

  it('converts numbers and keeps every option', () => {
    const request = resolveCreateOptions('https://example.com/r.git', {
      name: 'demo',
      network: 'allowlist',
      allow: ['192.0.2.1', '198.51.100.0/24'],
      builder: 'builtin',
      ref: 'v1.2.3',
      runtime: 'runsc',
      memory: '1g',
      cpus: '0.5',
      pids: '256',
      baseImage: 'ca-sbx-base:debian',
      depsView: 'overlay',
    });
    expect(request).toEqual({
      source: 'https://example.com/r.git',
      name: 'demo',
      network: 'allowlist',
      allow: ['192.0.2.1', '198.51.100.0/24'],
      builder: 'builtin',
      ref: 'v1.2.3',
      runtime: 'runsc',
      memory: '1g',
      cpus: 0.5,
      pids: 256,
      baseImage: 'ca-sbx-base:debian',
      depsView: 'overlay',
    });
  });

  it.each([
    [{ cpus: 'two' }, '--cpus'],
    [{ cpus: '-1' }, '--cpus'],
    [{ pids: '1.5' }, '--pids'],
    [{ memory: ' ' }, '--memory'],
    [{ name: 'Bad Name' }, '--name'],
    [{ name: '-x' }, '--name'],
    [{ ref: '--upload-pack=evil' }, '--ref'],
    [{ baseImage: '-v /:/host' }, '--base-image'],
    [{ network: 'host' as never }, '--network'],
    [{ runtime: 'kata' as never }, '--runtime'],
    [{ depsView: 'copy' as never }, '--deps-view'],
  ])('rejects %o naming %s', (flags, option) => {
    expect(usageMessage(() => resolveCreateOptions('./repo', flags))).toMatch(option);
  });

  it('leaves the bounds to the lifecycle (BOX_LIMITS), passing the values through', () => {
    expect(resolveCreateOptions('./r', { memory: '1k', cpus: '99', pids: '8' })).toMatchObject({
      memory: '1k',
      cpus: 99,
      pids: 8,
    });
  });

  it('ties --allow to the allowlist policy', () => {
    expect(usageMessage(() => resolveCreateOptions('./r', { allow: ['1.2.3.4'] }))).toMatch(
      /--allow only applies/,
    );
    expect(usageMessage(() => resolveCreateOptions('./r', { network: 'allowlist' }))).toMatch(
      /at least one --allow/,
    );
  });

  it('--with-claude hands the lifecycle only what the user typed: it applies (and checks) the allowlist', () => {
    expect(resolveCreateOptions('./r', { withClaude: true })).toEqual({ source: './r', withClaude: true });
    expect(
      resolveCreateOptions('./r', {
        withClaude: true,
        network: 'offline',
        allow: ['example.com'],
        runtime: 'runc',
      }),
    ).toEqual({
      source: './r',
      withClaude: true,
      network: 'offline',
      allow: ['example.com'],
      runtime: 'runc',
    });
  });

  it('refuses an empty source', () => {
    expect(usageMessage(() => resolveCreateOptions('  ', {}))).toMatch(/repo-url-or-path/);
  });
});

describe('resolveExecOptions', () => {
  it('turns seconds into milliseconds', () => {
    expect(resolveExecOptions({ timeout: '1.5', maxBytes: '4096' })).toEqual({
      timeoutMs: 1500,
      maxBytes: 4096,
    });
    expect(resolveExecOptions({})).toEqual({});
  });

  it('rejects bad values naming the option', () => {
    expect(usageMessage(() => resolveExecOptions({ timeout: '-1' }))).toMatch(/--timeout/);
    expect(usageMessage(() => resolveExecOptions({ maxBytes: '1e9' }))).toMatch(/--max-bytes/);
  });
});

describe('parseCpOperands', () => {
  it('accepts <id>:<path> <dest>', () => {
    expect(parseCpOperands('demo:/work/repo/a b.txt', './out')).toEqual({
      id: 'demo',
      boxPath: '/work/repo/a b.txt',
      hostDest: './out',
    });
    expect(parseCpOperands('demo:dist', '/tmp/x')).toMatchObject({ boxPath: 'dist' });
  });

  it('refuses copying in, saying egress is out-only', () => {
    expect(usageMessage(() => parseCpOperands('./secrets.txt', 'demo:/tmp'))).toMatch(/egress is out-only/);
  });

  it('refuses a source that names no sandbox', () => {
    expect(usageMessage(() => parseCpOperands('/etc/passwd', './out'))).toMatch(/<id>:<path>/);
    expect(usageMessage(() => parseCpOperands('Bad:/x', './out'))).toMatch(/<id>:<path>/);
    expect(usageMessage(() => parseCpOperands('demo:', './out'))).toMatch(/<id>:<path>/);
  });
});

describe('assertSandboxId', () => {
  it('accepts ids and refuses anything else', () => {
    expect(assertSandboxId('sbx-1.a_b')).toBe('sbx-1.a_b');
    // The one error of an invalid id, whoever sees it (@ca-sandbox/docker): a usage error.
    for (const id of ['--all', 'a'.repeat(64)]) {
      expect(() => assertSandboxId(id)).toThrow(InvalidSandboxIdError);
      expect(() => assertSandboxId(id)).toThrow(/^invalid sandbox id '/);
    }
  });
});
