import { describe, expect, it } from 'vitest';
import { assertSandboxConfig, type SandboxContainerConfig } from './container-create.js';
import { InvariantError } from './error-base.js';

const body = (host: Partial<SandboxContainerConfig['HostConfig']> = {}): SandboxContainerConfig => ({
  Image: 'ca-sbx-base:debian',
  Entrypoint: [],
  Cmd: ['/bin/sleep', 'infinity'],
  User: '1000:1000',
  Hostname: 'sandbox',
  WorkingDir: '/work/repo',
  Env: [],
  Labels: {},
  HostConfig: {
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    ReadonlyRootfs: true,
    PidsLimit: 512,
    Memory: 1 << 30,
    MemorySwap: 1 << 30,
    NanoCpus: 1e9,
    IpcMode: 'private',
    Ulimits: [],
    Init: true,
    Runtime: 'runc',
    NetworkMode: 'none',
    Mounts: [],
    Tmpfs: {},
    ...host,
  },
});

describe('assertSandboxConfig', () => {
  it("takes a PID namespace of another container (the report's lister), never the host's", () => {
    expect(() => assertSandboxConfig(body())).not.toThrow();
    expect(() => assertSandboxConfig(body({ PidMode: 'container:ca-sbx-abc' }))).not.toThrow();
    for (const mode of ['host', 'container:', 'container:x y', 'container:--privileged'])
      expect(() => assertSandboxConfig(body({ PidMode: mode as `container:${string}` }))).toThrow(
        InvariantError,
      );
  });

  it('takes a volume mount with NoCopy only, and no other mount option', () => {
    const volume = { Type: 'volume' as const, Source: 'v', Target: '/work/repo', ReadOnly: true };
    expect(() => assertSandboxConfig(body({ Mounts: [volume] }))).not.toThrow();
    const noCopy = { ...volume, VolumeOptions: { NoCopy: true as const, DriverConfig: {} } };
    expect(() => assertSandboxConfig(body({ Mounts: [noCopy] }))).not.toThrow();
    for (const options of [
      { NoCopy: false, DriverConfig: {} },
      { NoCopy: true, DriverConfig: { Name: 'local' } },
      { NoCopy: true, DriverConfig: { Options: { type: 'none' } } },
      { NoCopy: true, DriverConfig: {}, Labels: {} },
      {},
    ]) {
      const odd = { ...volume, VolumeOptions: options } as unknown as typeof noCopy;
      expect(() => assertSandboxConfig(body({ Mounts: [odd] }))).toThrow(InvariantError);
    }
    const bindOptions = { ...volume, BindOptions: {} } as unknown as typeof volume;
    expect(() => assertSandboxConfig(body({ Mounts: [bindOptions] }))).toThrow(InvariantError);
  });

  it('refuses any key outside the shape', () => {
    const privileged = body({ ...({ Privileged: true } as object) });
    expect(() => assertSandboxConfig(privileged)).toThrow(/HostConfig\.Privileged/);
  });
});
