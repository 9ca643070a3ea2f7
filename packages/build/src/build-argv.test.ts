import { ConfigError } from '@ca-sandbox/config';
import { afterEach, describe, expect, it } from 'vitest';
import { buildArgv, PROXY_BUILD_ARGS } from './build-argv.js';
import { BUILD_TIMEOUT_ENV } from './build-settings.js';
import { InvalidBuildOptionsError } from './errors.js';
import { resolvePrepareOptions } from './prepare-options.js';

const base = {
  containerId: 'helper1',
  repoName: 'octo/hello',
  source: 'https://example.com/octo/hello.git',
  policy: 'clone-then-cut',
} as const;
const limits = { memory: '2g', cpus: 2, processes: 4096, fileSize: 4 * 1024 ** 3 };

function argv(overrides: Partial<Parameters<typeof buildArgv>[0]> = {}): string[] {
  return buildArgv({
    image: 'ca-sbx:octo-hello-abc',
    network: 'bridge',
    labels: { 'ca.sandbox.cache': '1' },
    dockerfile: '/tmp/ctx/Dockerfile',
    context: '/tmp/ctx',
    limits,
    ...overrides,
  });
}

/** The value following each occurrence of `flag`. */
function values(args: string[], flag: string): string[] {
  return args.flatMap((arg, i) => (arg === flag ? [args[i + 1] ?? ''] : []));
}

describe('buildArgv', () => {
  it('limits memory without swap, cpus, processes and file size on every build', () => {
    const args = argv();
    expect(values(args, '--memory')).toEqual(['2g']);
    expect(values(args, '--memory-swap')).toEqual(['2g']);
    expect(values(args, '--cpu-period')).toEqual(['100000']);
    expect(values(args, '--cpu-quota')).toEqual(['200000']);
    expect(values(args, '--ulimit')).toEqual(['core=0', 'fsize=4294967296', 'nproc=4096']);
    const none = argv({ network: 'none', limits: { ...limits, memory: '128m', cpus: 0.5 } });
    expect(values(none, '--memory')).toEqual(['128m']);
    expect(values(none, '--memory-swap')).toEqual(['128m']);
    expect(values(none, '--cpu-quota')).toEqual(['50000']);
  });

  it('sets every proxy build arg empty so config.json proxies (and their credentials) never reach the install', () => {
    const args = argv();
    expect(PROXY_BUILD_ARGS).toHaveLength(10);
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'FTP_PROXY', 'NO_PROXY', 'ALL_PROXY']) {
      expect(PROXY_BUILD_ARGS).toContain(name);
      expect(PROXY_BUILD_ARGS).toContain(name.toLowerCase());
    }
    expect(values(args, '--build-arg').sort()).toEqual(PROXY_BUILD_ARGS.map((name) => `${name}=`).sort());
    // Nothing else is a build arg: no host value can reach the image through one.
    expect(args.filter((arg) => arg.startsWith('--build-arg'))).toHaveLength(10);
  });

  it('ends with the Dockerfile and the context (options never after the context)', () => {
    const args = argv();
    expect(args[0]).toBe('build');
    expect(args.slice(-3)).toEqual(['--file', '/tmp/ctx/Dockerfile', '/tmp/ctx']);
    expect(values(args, '--network')).toEqual(['bridge']);
    expect(args).toEqual(expect.arrayContaining(['--rm', '--force-rm', '--no-cache']));
  });

  it('a deps build: no tag and no --label (each would be a step), the image id written to a file', () => {
    const args = buildArgv({
      network: 'bridge',
      iidFile: '/tmp/ctx/image.id',
      dockerfile: '/tmp/ctx/Dockerfile',
      context: '/tmp/ctx',
      limits,
    });
    expect(values(args, '--iidfile')).toEqual(['/tmp/ctx/image.id']);
    expect(args).not.toContain('--tag');
    expect(args).not.toContain('--label');
    expect(values(argv(), '--tag')).toEqual(['ca-sbx:octo-hello-abc']);
  });
});

describe('resolvePrepareOptions: build limits', () => {
  const saved = process.env[BUILD_TIMEOUT_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[BUILD_TIMEOUT_ENV];
    else process.env[BUILD_TIMEOUT_ENV] = saved;
  });

  it('defaults to 2g, 2 cpus, 4096 processes, 4 GiB files and 15 minutes', () => {
    delete process.env[BUILD_TIMEOUT_ENV];
    expect(resolvePrepareOptions(base)).toMatchObject({
      buildMemory: '2g',
      buildCpus: 2,
      buildProcesses: 4096,
      buildFileSize: 4 * 1024 ** 3,
      buildTimeoutMs: 15 * 60_000,
    });
  });

  it('takes the time limit from CA_SANDBOX_BUILD_TIMEOUT (seconds) unless the option is given', () => {
    process.env[BUILD_TIMEOUT_ENV] = '90';
    expect(resolvePrepareOptions(base).buildTimeoutMs).toBe(90_000);
    expect(resolvePrepareOptions({ ...base, buildTimeoutMs: 5000 }).buildTimeoutMs).toBe(5000);
  });

  it.each(['0', '-5', '1.5', 'abc', '999999', '10s'])('rejects CA_SANDBOX_BUILD_TIMEOUT=%j', (raw) => {
    process.env[BUILD_TIMEOUT_ENV] = raw;
    // The settings package owns the variable: a usage error naming it.
    expect(() => resolvePrepareOptions(base)).toThrow(ConfigError);
    expect(() => resolvePrepareOptions(base)).toThrow(/^CA_SANDBOX_BUILD_TIMEOUT: /);
  });

  it.each([
    [{ buildMemory: '1k' }, /buildMemory/],
    [{ buildMemory: '2g,x' }, /buildMemory/],
    [{ buildMemory: '--privileged' }, /buildMemory/],
    [{ buildMemory: '0' }, /buildMemory/],
    [{ buildCpus: 0 }, /buildCpus/],
    [{ buildProcesses: 1.5 }, /buildProcesses/],
    [{ buildFileSize: 10 }, /buildFileSize/],
    [{ buildTimeoutMs: 10 }, /buildTimeoutMs/],
  ])('rejects %j with a usage error naming the field', (bad, field) => {
    expect(() => resolvePrepareOptions({ ...base, ...bad })).toThrow(InvalidBuildOptionsError);
    expect(() => resolvePrepareOptions({ ...base, ...bad })).toThrow(field);
  });
});
