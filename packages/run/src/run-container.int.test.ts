import { randomUUID } from 'node:crypto';
import { docker, dockerInfo, sandboxLabels } from '@ca-sandbox/docker';
import { getContainerRuntimeClient } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerNameInUseError, UnsupportedCombinationError } from './errors.js';
import { runContainer, verifyContainer } from './run-container.js';

const IMAGE = 'ca-sbx-base:debian';
const hasRunsc = (await dockerInfo().catch(() => ({ runtimes: [] as string[] }))).runtimes.includes('runsc');
const created = { containers: new Set<string>(), volumes: new Set<string>() };

function uniqueId(): string {
  return `sbx-${randomUUID().slice(0, 8)}`;
}

async function newVolume(id: string): Promise<string> {
  const name = `ca-sbx-${id}`;
  const labels = Object.entries(sandboxLabels(id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
  await docker(['volume', 'create', ...labels, '--', name]);
  created.volumes.add(name);
  return name;
}

async function startBox(extra: Record<string, unknown> = {}) {
  const id = uniqueId();
  const volume = await newVolume(id);
  const name = `ca-sbx-${id}`;
  created.containers.add(name);
  const box = await runContainer({ sandboxId: id, name, image: IMAGE, volume, ...extra });
  return { id, name, volume, box };
}

async function sh(container: string, script: string, timeoutMs = 60_000) {
  return docker(['exec', container, 'sh', '-c', script], { allowFailure: true, timeoutMs });
}

afterAll(async () => {
  for (const name of created.containers) await docker(['rm', '-f', name], { allowFailure: true });
  for (const name of created.volumes) await docker(['volume', 'rm', '-f', name], { allowFailure: true });
});

describe('runContainer on the real engine', () => {
  let name: string;
  let id: string;
  beforeAll(async () => {
    ({ name, id } = await startBox());
  });

  it('is isolated as an independent inspect (testcontainers, not our code) sees it', async () => {
    const client = await getContainerRuntimeClient();
    const info = await client.container.inspect(client.container.getById(name));
    const host = info.HostConfig;
    expect(host.Privileged).toBe(false);
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd ?? []).toEqual([]);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(info.Config.User).toBe('1000:1000');
    expect(host.SecurityOpt).toContain('no-new-privileges');
    expect(host.PidsLimit).toBe(512);
    expect(host.Memory).toBe(2 * 1024 ** 3);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.NanoCpus).toBe(2e9);
    expect(host.NetworkMode).toBe('none');
    expect(host.Binds ?? []).toEqual([]);
    expect(host.PortBindings ?? {}).toEqual({});
    expect(info.Mounts.map((m) => [m.Type, m.Destination])).toEqual(
      expect.arrayContaining([['volume', '/work/repo']]),
    );
    expect(info.Mounts.filter((m) => m.Type === 'bind')).toEqual([]);
    expect(info.Config.Labels['ca.sandbox']).toBe('1');
    expect(info.Config.Labels['ca.sandbox.id']).toBe(id);
  });

  it('has no capabilities, no-new-privileges and runs as 1000 inside the box', async () => {
    const status = await sh(name, 'grep -E "^(CapEff|CapPrm|NoNewPrivs)" /proc/self/status; id -u; id -g');
    expect(status.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(status.stdout).toMatch(/CapPrm:\s+0000000000000000/);
    expect(status.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(status.stdout).toMatch(/\n1000\n1000\n$/);
  });

  it('cannot write the root filesystem but can write /tmp and /work/repo', async () => {
    const root = await sh(name, 'touch /evil');
    expect(root.exitCode).not.toBe(0);
    expect(root.stderr).toMatch(/Read-only file system/);
    expect((await sh(name, 'echo hi > /tmp/x && cat /tmp/x')).stdout).toBe('hi\n');
    expect((await sh(name, 'echo hi > /work/repo/x && stat -c %u /work/repo/x')).stdout).toBe('1000\n');
  });

  it('sees only the loopback interface when offline', async () => {
    expect((await sh(name, 'ls /sys/class/net')).stdout.trim()).toBe('lo');
  });

  it('passes verifyContainer with every row', async () => {
    const report = await verifyContainer(name);
    expect(report.checks.filter((check) => !check.pass)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('refuses a second container with the same name and leaves the first alone', async () => {
    const volume = await newVolume(uniqueId());
    await expect(runContainer({ sandboxId: id, name, image: IMAGE, volume })).rejects.toThrow(
      ContainerNameInUseError,
    );
    expect((await sh(name, 'echo alive')).stdout).toBe('alive\n');
  });
});

describe('resource limits', () => {
  it('stops a fork bomb at the pids limit and the host stays fine', async () => {
    const { name } = await startBox({ pidsLimit: 64 });
    // The bomb runs for a few seconds under timeout(1); fork fails inside the box at 64 pids.
    const bomb = await sh(name, 'timeout -s KILL 8 bash -c "b(){ b | b & }; b" 2>&1; echo done', 60_000);
    expect(bomb.stdout).toMatch(/Resource temporarily unavailable|retry: No child processes|fork/);
    const pids = await docker(['top', name, '-eo', 'pid'], { allowFailure: true });
    expect(pids.stdout.trim().split('\n').length - 1).toBeLessThanOrEqual(64);
    const host = await docker(['version', '--format', '{{.Server.Version}}']);
    expect(host.exitCode).toBe(0);
    await docker(['rm', '-f', name]);
    created.containers.delete(name);
  });
});

describe('runtime selection', () => {
  it('refuses runsc with a network (runsc is registered for network-less boxes only)', async () => {
    const id = uniqueId();
    const volume = await newVolume(id);
    await expect(
      runContainer({
        sandboxId: id,
        name: `ca-sbx-${id}`,
        image: IMAGE,
        volume,
        runtime: 'runsc',
        network: 'bridge',
      }),
    ).rejects.toThrow(hasRunsc ? UnsupportedCombinationError : /runtime 'runsc' is not registered/);
    const left = await docker(['ps', '-a', '-q', '--filter', `label=ca.sandbox.id=${id}`]);
    expect(left.stdout.trim()).toBe('');
  });

  it.skipIf(!hasRunsc)('starts a box under gVisor and the gate checks HostConfig.Runtime', async () => {
    const { name } = await startBox({ runtime: 'runsc' });
    const report = await verifyContainer(name);
    expect(report.checks.find((check) => check.id === 'runtime')).toMatchObject({
      seen: 'runsc',
      pass: true,
    });
    expect(report.ok).toBe(true);
    expect((await sh(name, 'dmesg 2>/dev/null | head -1')).stdout).toMatch(/gVisor/);
  });
});

describe('verifyContainer on a container we did not start', () => {
  // --privileged cannot start on this kind of machine (runc cannot apply all caps), so the
  // container breaks the other rows; the privileged row itself is covered by the unit tests.
  it('fails every row that a root, writable, capable container breaks', async () => {
    const id = uniqueId();
    const name = `ca-sbx-${id}`;
    created.containers.add(name);
    const labels = Object.entries(
      sandboxLabels(id, { 'ca.sandbox.network': 'none', 'ca.sandbox.runtime': 'runc' }),
    );
    await docker([
      'run',
      '-d',
      '--name',
      name,
      '--network',
      'none',
      '--cap-add',
      'NET_RAW',
      ...labels.flatMap(([k, v]) => ['--label', `${k}=${v}`]),
      IMAGE,
      'sleep',
      'infinity',
    ]);
    const report = await verifyContainer(name);
    const failed = report.checks.filter((check) => !check.pass).map((check) => check.id);
    expect(report.ok).toBe(false);
    expect(failed).toEqual(
      expect.arrayContaining([
        'cap-drop-all',
        'read-only-rootfs',
        'non-root-user',
        'no-new-privileges',
        'memory-limit',
      ]),
    );
  });
});
