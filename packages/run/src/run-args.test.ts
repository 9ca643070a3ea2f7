import { describe, expect, it } from 'vitest';
import { InvalidRunOptionsError } from './errors.js';
import { resolveRunOptions } from './options.js';
import { BLACKHOLE_DNS, buildRunArgs, PROXY_ENV_NAMES } from './run-args.js';

const base = { sandboxId: 'abc', name: 'ca-sbx-abc', image: 'ca-sbx-base:debian', volume: 'ca-sbx-abc' };

function flagValues(argv: string[], flag: string): string[] {
  return argv.flatMap((arg, index) => (arg === flag ? [argv[index + 1] ?? ''] : []));
}

describe('buildRunArgs', () => {
  const argv = buildRunArgs(resolveRunOptions(base));

  it('always hardens: cap-drop ALL, non-root, read-only, no-new-privileges, init', () => {
    expect(flagValues(argv, '--cap-drop')).toEqual(['ALL']);
    expect(flagValues(argv, '--user')).toEqual(['1000:1000']);
    expect(flagValues(argv, '--security-opt')).toEqual(['no-new-privileges']);
    expect(argv).toContain('--read-only');
    expect(argv).toContain('--init');
    expect(argv).not.toContain('--privileged');
    expect(
      argv.some((arg) => /^(-p|--publish|-P|--publish-all|--cap-add|--device|-v|--volume)/.test(arg)),
    ).toBe(false);
  });

  it('uses the documented defaults', () => {
    expect(flagValues(argv, '--pids-limit')).toEqual(['512']);
    expect(flagValues(argv, '--memory')).toEqual(['2g']);
    expect(flagValues(argv, '--memory-swap')).toEqual(['2g']);
    expect(flagValues(argv, '--cpus')).toEqual(['2']);
    expect(flagValues(argv, '--network')).toEqual(['none']);
    expect(flagValues(argv, '--runtime')).toEqual(['runc']);
    expect(flagValues(argv, '--workdir')).toEqual(['/work/repo']);
    expect(flagValues(argv, '--ulimit')).toEqual([`fsize=${4 * 1024 ** 3}`]);
    expect(argv.slice(-3)).toEqual(['ca-sbx-base:debian', 'sleep', 'infinity']);
  });

  it('mounts the source volume only at /work/repo and /tmp as a sized nosuid,nodev tmpfs', () => {
    expect(flagValues(argv, '--mount')).toEqual(['type=volume,source=ca-sbx-abc,target=/work/repo']);
    expect(flagValues(argv, '--tmpfs')).toEqual([`/tmp:exec,nosuid,nodev,size=${512 * 1024 ** 2}`]);
  });

  it('labels the container as ours, and caller labels cannot override ours', () => {
    const labeled = buildRunArgs(
      resolveRunOptions({
        ...base,
        labels: { 'ca.sandbox': '0', 'ca.sandbox.id': 'other', 'ca.sandbox.repo': 'r' },
      }),
    );
    const labels = flagValues(labeled, '--label');
    expect(labels).toContain('ca.sandbox=1');
    expect(labels).toContain('ca.sandbox.id=abc');
    expect(labels).toContain('ca.sandbox.repo=r');
    expect(labels).not.toContain('ca.sandbox=0');
    expect(labels).not.toContain('ca.sandbox.id=other');
  });

  it('passes each option through to its flag', () => {
    const custom = buildRunArgs(
      resolveRunOptions({
        ...base,
        memory: '512m',
        cpus: 1.5,
        pidsLimit: 64,
        tmpfsSize: '64m',
        network: 'ca-sbx-abc',
        runtime: 'runsc',
        volumeReadOnly: true,
        command: ['git', 'version'],
      }),
    );
    expect(flagValues(custom, '--memory')).toEqual(['512m']);
    expect(flagValues(custom, '--memory-swap')).toEqual(['512m']);
    expect(flagValues(custom, '--cpus')).toEqual(['1.5']);
    expect(flagValues(custom, '--pids-limit')).toEqual(['64']);
    expect(flagValues(custom, '--tmpfs')).toEqual([`/tmp:exec,nosuid,nodev,size=${64 * 1024 ** 2}`]);
    expect(flagValues(custom, '--network')).toEqual(['ca-sbx-abc']);
    expect(flagValues(custom, '--runtime')).toEqual(['runsc']);
    expect(flagValues(custom, '--mount')).toEqual([
      'type=volume,source=ca-sbx-abc,target=/work/repo,readonly',
    ]);
    expect(custom.slice(-2)).toEqual(['git', 'version']);
  });

  it('passes no host environment variable, only the named ones, HOME=/tmp and blank proxies', () => {
    process.env.CA_SANDBOX_CANARY_SECRET = 'canary-value';
    try {
      const named = buildRunArgs(resolveRunOptions({ ...base, env: { FOO: 'bar' } }));
      const env = flagValues(named, '--env');
      expect(env.filter((pair) => !pair.endsWith('=')).sort()).toEqual(['FOO=bar', 'HOME=/tmp']);
      expect(named.join(' ')).not.toContain('canary-value');
    } finally {
      delete process.env.CA_SANDBOX_CANARY_SECRET;
    }
  });

  it('sets every proxy variable empty so the docker client cannot inject config.json proxies', () => {
    const env = flagValues(argv, '--env');
    expect(PROXY_ENV_NAMES).toHaveLength(10);
    for (const name of [
      'HTTP_PROXY',
      'HTTPS_PROXY',
      'FTP_PROXY',
      'NO_PROXY',
      'ALL_PROXY',
      'http_proxy',
      'https_proxy',
      'ftp_proxy',
      'no_proxy',
      'all_proxy',
    ]) {
      // `NAME=` (not bare `NAME`, which the CLI would fill from its own environment).
      expect(env).toContain(`${name}=`);
    }
  });

  it('keeps a proxy variable the caller names and blanks only the others', () => {
    const named = buildRunArgs(
      resolveRunOptions({ ...base, env: { HTTPS_PROXY: 'http://proxy.local:3128', no_proxy: 'x' } }),
    );
    const env = flagValues(named, '--env');
    expect(env).toContain('HTTPS_PROXY=http://proxy.local:3128');
    expect(env).not.toContain('HTTPS_PROXY=');
    expect(env).toContain('no_proxy=x');
    expect(env).not.toContain('no_proxy=');
    expect(env).toContain('https_proxy=');
    expect(env.filter((pair) => pair.startsWith('HTTPS_PROXY='))).toHaveLength(1);
    expect(flagValues(named, '--label')).toContain('ca.sandbox.allowed-env=HTTPS_PROXY,no_proxy');
  });

  it('records the caller env names in a label the caller cannot override', () => {
    const labeled = buildRunArgs(
      resolveRunOptions({ ...base, labels: { 'ca.sandbox.allowed-env': 'HTTP_PROXY' } }),
    );
    const labels = flagValues(labeled, '--label');
    expect(labels).toContain('ca.sandbox.allowed-env=');
    expect(labels).not.toContain('ca.sandbox.allowed-env=HTTP_PROXY');
  });

  it('points the resolver at the box loopback only with dns blackhole', () => {
    expect(argv).not.toContain('--dns');
    const blackhole = buildRunArgs(resolveRunOptions({ ...base, network: 'ca-sbx-abc', dns: 'blackhole' }));
    expect(flagValues(blackhole, '--dns')).toEqual(['127.0.0.1']);
    expect(BLACKHOLE_DNS).toBe('127.0.0.1');
    expect(blackhole.indexOf('--dns')).toBeLessThan(blackhole.indexOf('--'));
  });

  it('ends the options with -- so an image name cannot become a flag', () => {
    const index = argv.indexOf('--');
    expect(argv[index + 1]).toBe('ca-sbx-base:debian');
  });
});

describe('resolveRunOptions', () => {
  it.each([
    ['an unknown key (no docker flag passes through)', { ...base, privileged: true }],
    ['an extra docker flag', { ...base, extraArgs: ['--privileged'] }],
    ['a flag as image', { ...base, image: '--privileged' }],
    ['a path as volume', { ...base, volume: '/etc' }],
    ['host network', { ...base, network: '--network=host' }],
    ['an unknown runtime', { ...base, runtime: 'kata' }],
    ['a bad env name', { ...base, env: { 'A=B': 'x' } }],
    ['a bad memory size', { ...base, memory: '2g --privileged' }],
    ['a tiny pids limit', { ...base, pidsLimit: 0 }],
    ['a bad id', { ...base, sandboxId: 'A B' }],
    ['a dns server address (only default or blackhole)', { ...base, dns: '8.8.8.8' }],
  ])('rejects %s', (_name, input) => {
    expect(() => resolveRunOptions(input)).toThrow(InvalidRunOptionsError);
  });

  it('names the unknown option in the message', () => {
    expect(() => resolveRunOptions({ ...base, privileged: true })).toThrow(/unknown option\(s\) privileged/);
  });

  it('takes sizes as docker parses them, and refuses what docker would refuse', () => {
    expect(resolveRunOptions({ ...base, memory: '2gb', tmpfsSize: '64 MiB' })).toMatchObject({
      memory: '2gb',
    });
    expect(() => resolveRunOptions({ ...base, memory: '1k' })).toThrow(/memory must be a number/);
    expect(() => resolveRunOptions({ ...base, tmpfsSize: '0' })).toThrow(/tmpfsSize/);
    expect(() => resolveRunOptions({ ...base, maxFileSize: '4g,uid=0' })).toThrow(/maxFileSize/);
  });
});
