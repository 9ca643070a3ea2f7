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

  it('refuses any key outside the shape', () => {
    const privileged = body({ ...({ Privileged: true } as object) });
    expect(() => assertSandboxConfig(privileged)).toThrow(/HostConfig\.Privileged/);
  });
});
