import { describe, expect, it } from 'vitest';
import {
  assertInstallConfig,
  INSTALL_LOG_CONFIG,
  type InstallContainerConfig,
  installContainerName,
} from './install-container.js';

const body = (
  host: Partial<InstallContainerConfig['HostConfig']> = {},
  rest: Partial<InstallContainerConfig> = {},
): InstallContainerConfig => ({
  Image: 'sha256:0123',
  Entrypoint: [],
  Cmd: ['/bin/cat'],
  User: '1000:1000',
  Labels: { 'ca.sandbox.build': '1' },
  OpenStdin: true,
  StdinOnce: true,
  HostConfig: {
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    ReadonlyRootfs: false,
    Memory: 2 * 1024 ** 3,
    MemorySwap: 2 * 1024 ** 3,
    CpuPeriod: 100_000,
    CpuQuota: 200_000,
    PidsLimit: 4096,
    Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }],
    Init: false,
    NetworkMode: 'none',
    LogConfig: INSTALL_LOG_CONFIG,
    ...host,
  },
  ...rest,
});

describe('assertInstallConfig', () => {
  it('takes the install shape', () => {
    expect(() => assertInstallConfig(body())).not.toThrow();
  });

  it('refuses what would give the install more than the shape: a mount, privileges, capabilities, root, no limits', () => {
    const cast = (extra: object) => body(extra as Partial<InstallContainerConfig['HostConfig']>);
    expect(() => assertInstallConfig(cast({ Binds: ['/:/host'] }))).toThrow(/HostConfig.Binds/);
    expect(() => assertInstallConfig(cast({ Mounts: [] }))).toThrow(/HostConfig.Mounts/);
    expect(() => assertInstallConfig(cast({ Privileged: true }))).toThrow(/HostConfig.Privileged/);
    expect(() => assertInstallConfig(cast({ CapAdd: ['SYS_ADMIN'] }))).toThrow(/HostConfig.CapAdd/);
    expect(() => assertInstallConfig(cast({ CapDrop: ['NET_RAW'] }))).toThrow(/CapDrop/);
    expect(() => assertInstallConfig(cast({ SecurityOpt: [] }))).toThrow(/no-new-privileges/);
    expect(() => assertInstallConfig(cast({ MemorySwap: -1 }))).toThrow(/no swap/);
    expect(() => assertInstallConfig(cast({ PidsLimit: 0 }))).toThrow(/process limit/);
    expect(() => assertInstallConfig(body({}, { User: '0:0' }))).toThrow(/not root/);
    expect(() => assertInstallConfig(body({}, { User: 'root' }))).toThrow(/not root/);
    // Its PID 1 is INSTALL_PID1 alone: the install is an exec in it.
    expect(() => assertInstallConfig(body({}, { Cmd: ['npm', 'ci'] }))).toThrow(/INSTALL_PID1/);
    expect(() => assertInstallConfig(body({}, { Cmd: ['/bin/sh', '-c', 'npm ci'] }))).toThrow(/INSTALL_PID1/);
    expect(() =>
      assertInstallConfig({ ...body(), OpenStdin: false } as unknown as InstallContainerConfig),
    ).toThrow(/stdin/);
    // Its Env is the deps image's (the commit keeps it): never a proxy, in either case.
    expect(() => assertInstallConfig({ ...body(), Env: ['HTTP_PROXY=x'] })).toThrow(/Env/);
    expect(() => assertInstallConfig({ ...body(), Env: ['A=1', 'https_proxy=x'] })).toThrow(/Env/);
    expect(() => assertInstallConfig({ ...body(), Env: ['NODE_PATH=/deps/node_modules'] })).not.toThrow();
  });

  it('names the container by the build id alone', () => {
    expect(installContainerName('0123456789abcdef01234567')).toBe('ca-sbx_install-0123456789abcdef01234567');
    expect(() => installContainerName('x/../y')).toThrow(/build id/);
  });
});
