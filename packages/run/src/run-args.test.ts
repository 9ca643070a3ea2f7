import {
  GATEWAY_HOSTNAME,
  IMAGE_VIEW_DIR,
  LABEL_EXTRA_NETWORKS,
  parseSize,
  RAW_REPO_DIR,
  type SandboxContainerConfig,
} from '@ca-sandbox/docker';
import { describe, expect, it } from 'vitest';
import { RUN_COMBOS } from '../test/run-combos.js';
import { InvalidRunOptionsError } from './errors.js';
import { resolveRunOptions } from './options.js';
import { BLACKHOLE_DNS, buildContainerConfig, buildRunArgs, PROXY_ENV_NAMES } from './run-args.js';

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
    expect(flagValues(argv, '--memory')).toEqual([String(2 * 1024 ** 3)]);
    expect(flagValues(argv, '--memory-swap')).toEqual([String(2 * 1024 ** 3)]);
    expect(flagValues(argv, '--cpus')).toEqual(['2']);
    expect(flagValues(argv, '--network')).toEqual(['none']);
    expect(flagValues(argv, '--runtime')).toEqual(['runc']);
    expect(flagValues(argv, '--workdir')).toEqual(['/work/repo']);
    expect(flagValues(argv, '--ulimit')).toEqual(['core=0', `fsize=${4 * 1024 ** 3}`]);
    expect(argv.slice(-3)).toEqual(['ca-sbx-base:debian', '/bin/sleep', 'infinity']);
  });

  it('starts the keep-alive by absolute path: no PATH lookup (a deps image puts /deps bins first)', () => {
    const config = buildContainerConfig(resolveRunOptions(base));
    expect(config.Cmd[0]).toBe('/bin/sleep');
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
        command: ['/usr/bin/git', 'version'],
      }),
    );
    expect(flagValues(custom, '--memory')).toEqual([String(512 * 1024 ** 2)]);
    expect(flagValues(custom, '--memory-swap')).toEqual([String(512 * 1024 ** 2)]);
    expect(flagValues(custom, '--cpus')).toEqual(['1.5']);
    expect(flagValues(custom, '--pids-limit')).toEqual(['64']);
    expect(flagValues(custom, '--tmpfs')).toEqual([`/tmp:exec,nosuid,nodev,size=${64 * 1024 ** 2}`]);
    expect(flagValues(custom, '--network')).toEqual(['ca-sbx-abc']);
    expect(flagValues(custom, '--runtime')).toEqual(['runsc']);
    expect(flagValues(custom, '--mount')).toEqual([
      'type=volume,source=ca-sbx-abc,target=/work/repo,readonly,volume-nocopy',
    ]);
    expect(custom.slice(-2)).toEqual(['/usr/bin/git', 'version']);
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

/**
 * The create body a `docker run` argv of ours asks for, read flag by flag as the docker CLI reads
 * them (independently of runArgsOf): an unknown flag fails the test, so a flag with no field in
 * the body cannot slip into the argv either.
 */
function configOfArgv(argv: string[]): { name: string; config: SandboxContainerConfig } {
  expect(argv.slice(0, 3)).toEqual(['run', '--detach', '--name']);
  const name = argv[3] ?? '';
  const end = argv.indexOf('--');
  const host: Record<string, unknown> = {
    CapDrop: [],
    SecurityOpt: [],
    Ulimits: [],
    Mounts: [],
    Tmpfs: {},
  };
  const config: Record<string, unknown> = { Env: [], Labels: {}, HostConfig: host };
  const push = (record: Record<string, unknown>, key: string, value: unknown) => {
    record[key] = [...((record[key] as unknown[] | undefined) ?? []), value];
  };
  const size = (text: string) => parseSize(text) ?? Number.NaN;
  for (let at = 4; at < end; at++) {
    const flag = argv[at] ?? '';
    const takes = (): string => {
      at += 1;
      return argv[at] ?? '';
    };
    if (flag === '--entrypoint') config.Entrypoint = takes() === '' ? [] : ['(an image entrypoint)'];
    else if (flag === '--read-only') host.ReadonlyRootfs = true;
    else if (flag === '--init') host.Init = true;
    else if (flag === '--hostname') config.Hostname = takes();
    else if (flag === '--user') config.User = takes();
    else if (flag === '--workdir') config.WorkingDir = takes();
    else if (flag === '--env') push(config, 'Env', takes());
    else if (flag === '--label') {
      const [key = '', ...value] = takes().split('=');
      (config.Labels as Record<string, string>)[key] = value.join('=');
    } else if (flag === '--cap-drop') push(host, 'CapDrop', takes());
    else if (flag === '--security-opt') push(host, 'SecurityOpt', takes());
    else if (flag === '--pids-limit') host.PidsLimit = Number(takes());
    else if (flag === '--memory') host.Memory = size(takes());
    else if (flag === '--memory-swap') host.MemorySwap = size(takes());
    else if (flag === '--cpus') host.NanoCpus = Math.round(Number(takes()) * 1e9);
    else if (flag === '--ipc') host.IpcMode = takes();
    else if (flag === '--pid') host.PidMode = takes();
    else if (flag === '--runtime') host.Runtime = takes();
    else if (flag === '--network') host.NetworkMode = takes();
    else if (flag === '--dns') push(host, 'Dns', takes());
    else if (flag === '--log-driver') host.LogConfig = { Type: takes(), Config: {} };
    else if (flag === '--ulimit') {
      const [limitName = '', values = ''] = takes().split('=');
      const [soft = '', hard = soft] = values.split(':');
      push(host, 'Ulimits', { Name: limitName, Soft: Number(soft), Hard: Number(hard) });
    } else if (flag === '--tmpfs') {
      const spec = takes();
      const colon = spec.indexOf(':');
      (host.Tmpfs as Record<string, string>)[spec.slice(0, colon)] = spec.slice(colon + 1);
    } else if (flag === '--mount') {
      const fields = takes().split(',');
      const field = (key: string) => fields.find((f) => f.startsWith(`${key}=`))?.slice(key.length + 1);
      push(host, 'Mounts', {
        Type: field('type'),
        Source: field('source'),
        Target: field('target'),
        ReadOnly: fields.includes('readonly'),
        ...(fields.includes('volume-nocopy') ? { VolumeOptions: { NoCopy: true, DriverConfig: {} } } : {}),
      });
    } else throw new Error(`a flag the body has no field for: ${flag}`);
  }
  config.Image = argv[end + 1];
  config.Cmd = argv.slice(end + 2);
  return { name, config: config as unknown as SandboxContainerConfig };
}

describe('buildContainerConfig', () => {
  const config = buildContainerConfig(resolveRunOptions(base));

  it('always hardens: cap-drop ALL, non-root, read-only, no-new-privileges, init, private IPC', () => {
    expect(config.User).toBe('1000:1000');
    expect(config.HostConfig).toMatchObject({
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Init: true,
      IpcMode: 'private',
      // What the box writes to its stdout is kept nowhere (not in a log file on the host).
      LogConfig: { Type: 'none', Config: {} },
    });
    const keys = Object.keys(config.HostConfig);
    for (const forbidden of ['Privileged', 'Binds', 'Devices', 'PortBindings', 'CapAdd', 'PublishAllPorts'])
      expect(keys).not.toContain(forbidden);
    expect(config.HostConfig.Mounts.every((mount) => mount.Type === 'volume')).toBe(true);
  });

  it('sizes in bytes and CPUs in nano-CPUs, as docker stores them', () => {
    expect(config.HostConfig).toMatchObject({
      Memory: 2 * 1024 ** 3,
      MemorySwap: 2 * 1024 ** 3,
      NanoCpus: 2e9,
      PidsLimit: 512,
      Ulimits: [
        { Name: 'core', Soft: 0, Hard: 0 },
        { Name: 'fsize', Soft: 4 * 1024 ** 3, Hard: 4 * 1024 ** 3 },
      ],
      Tmpfs: { '/tmp': `exec,nosuid,nodev,size=${512 * 1024 ** 2}` },
      Mounts: [{ Type: 'volume', Source: 'ca-sbx-abc', Target: '/work/repo', ReadOnly: false }],
      NetworkMode: 'none',
      Runtime: 'runc',
    });
    expect(config.HostConfig.Dns).toBeUndefined();
    expect(config).toMatchObject({ Image: 'ca-sbx-base:debian', Cmd: ['/bin/sleep', 'infinity'] });
    expect(config).toMatchObject({ WorkingDir: '/work/repo', Hostname: 'sandbox' });
  });

  it.each(RUN_COMBOS.map((combo) => [combo.label, combo] as const))(
    'says what its docker run argv says, field by field: %s',
    (_label, combo) => {
      const options = resolveRunOptions({
        ...combo.options({ id: 'abc', volume: 'ca-sbx-abc', network: 'ca-sbx-abc-net' }),
        name: 'ca-sbx-abc',
      });
      const body = buildContainerConfig(options);
      const read = configOfArgv(buildRunArgs(options));
      expect(read.name).toBe('ca-sbx-abc');
      for (const key of Object.keys(body) as (keyof SandboxContainerConfig)[]) {
        if (key !== 'HostConfig') expect(read.config[key], key).toEqual(body[key]);
      }
      for (const key of new Set([...Object.keys(body.HostConfig), ...Object.keys(read.config.HostConfig)]))
        expect(
          (read.config.HostConfig as unknown as Record<string, unknown>)[key],
          `HostConfig.${key}`,
        ).toEqual((body.HostConfig as unknown as Record<string, unknown>)[key]);
      expect(Object.keys(read.config).sort()).toEqual(Object.keys(body).sort());
    },
  );

  it("lets the report's lister join its own sandbox's box PID namespace, and nothing else", () => {
    const options = resolveRunOptions({
      ...base,
      name: 'ca-sbx_helper-abc',
      role: 'helper',
      pidOf: 'ca-sbx-abc',
    });
    const body = buildContainerConfig(options);
    expect(body.HostConfig.PidMode).toBe('container:ca-sbx-abc');
    const argv = buildRunArgs(options);
    expect(flagValues(argv, '--pid')).toEqual(['container:ca-sbx-abc']);
    expect(configOfArgv(argv).config.HostConfig).toEqual(body.HostConfig);
    expect(buildContainerConfig(resolveRunOptions(base)).HostConfig.PidMode).toBeUndefined();
    expect(flagValues(buildRunArgs(resolveRunOptions(base)), '--pid')).toEqual([]);
  });

  it("mounts a box's own image view at the view's path, writable, as the argv does", () => {
    const options = resolveRunOptions({ ...base, imageView: 'ca-sbx_view-abc' });
    const body = buildContainerConfig(options);
    expect(body.HostConfig.Mounts).toEqual([
      { Type: 'volume', Source: 'ca-sbx-abc', Target: '/work/repo', ReadOnly: false },
      { Type: 'volume', Source: 'ca-sbx_view-abc', Target: IMAGE_VIEW_DIR, ReadOnly: false },
    ]);
    expect(configOfArgv(buildRunArgs(options)).config.HostConfig).toEqual(body.HostConfig);
  });

  it("mounts a box's repo view at /work/repo and its own volume read-only beside, as the argv does", () => {
    const options = resolveRunOptions({ ...base, repoView: 'ca-sbx_repo-abc' });
    const body = buildContainerConfig(options);
    expect(body.HostConfig.Mounts).toEqual([
      // nocopy: the engine mounts nothing at create (a box made beside the clone).
      {
        Type: 'volume',
        Source: 'ca-sbx_repo-abc',
        Target: '/work/repo',
        ReadOnly: false,
        VolumeOptions: { NoCopy: true, DriverConfig: {} },
      },
      {
        Type: 'volume',
        Source: 'ca-sbx-abc',
        Target: RAW_REPO_DIR,
        ReadOnly: true,
        VolumeOptions: { NoCopy: true, DriverConfig: {} },
      },
    ]);
    expect(body.WorkingDir).toBe('/work/repo');
    expect(configOfArgv(buildRunArgs(options)).config.HostConfig).toEqual(body.HostConfig);
  });

  it('puts the gateway on its network only (extra networks are joined after start) and without a volume', () => {
    const gateway = RUN_COMBOS.find((combo) => combo.label.startsWith('gateway'));
    const options = resolveRunOptions({
      ...gateway?.options({ id: 'abc', volume: 'v', network: 'ca-sbx-abc-out' }),
      name: 'ca-sbx-abc-gw',
    });
    const body = buildContainerConfig(options);
    expect(body.HostConfig.NetworkMode).toBe('ca-sbx-abc-out');
    expect(body.HostConfig.Mounts).toEqual([]);
    expect(body.Labels[LABEL_EXTRA_NETWORKS]).toBe('ca-sbx-abc-out-in');
    expect(body).toMatchObject({ WorkingDir: '/tmp', Hostname: GATEWAY_HOSTNAME });
    // Its log is the egress record: the daemon's driver.
    expect(body.HostConfig.LogConfig).toBeUndefined();
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
    ["a box joining a PID namespace (only the report's lister may)", { ...base, pidOf: 'ca-sbx-abc' }],
    ["a helper joining another sandbox's box", { ...base, role: 'helper', pidOf: 'ca-sbx-other' }],
    ["a helper joining the host's PID namespace", { ...base, role: 'helper', pidOf: 'host' }],
    ["another sandbox's image view", { ...base, imageView: 'ca-sbx_view-other' }],
    ['an image view for a helper', { ...base, role: 'helper', imageView: 'ca-sbx_view-abc' }],
    ["another sandbox's repo view", { ...base, repoView: 'ca-sbx_repo-other' }],
    ['a repo view for a helper', { ...base, role: 'helper', repoView: 'ca-sbx_repo-abc' }],
    ['a repo view over another volume', { ...base, volume: 'ca-sbx-other', repoView: 'ca-sbx_repo-abc' }],
    ['a repo view over a read-only volume', { ...base, volumeReadOnly: true, repoView: 'ca-sbx_repo-abc' }],
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
