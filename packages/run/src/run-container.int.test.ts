import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dockerInfo, inspectContainer, sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
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

/** Runs `body` with DOCKER_CONFIG pointing at a config.json whose proxies carry a credential. */
async function withProxyConfig<T>(body: () => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'ca-sbx-docker-config-'));
  const saved = process.env.DOCKER_CONFIG;
  try {
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({
        proxies: {
          default: { httpProxy: 'http://user:secret@proxy.invalid:3128', allProxy: 'socks5://secret@p:1' },
        },
      }),
    );
    process.env.DOCKER_CONFIG = dir;
    return await body();
  } finally {
    if (saved === undefined) delete process.env.DOCKER_CONFIG;
    else process.env.DOCKER_CONFIG = saved;
    await rm(dir, { recursive: true, force: true });
  }
}

describe('proxies from the docker client config.json', () => {
  it('do not reach the box, although the client injects them into a plain docker run', async () => {
    const id = uniqueId();
    const raw = `ca-sbx-${id}-raw`;
    created.containers.add(raw);
    const labels = sandboxLabels(id, { 'ca.sandbox.network': 'none', 'ca.sandbox.runtime': 'runc' });
    const { name, rawEnv, box, boxReport, rawReport } = await withProxyConfig(async () => {
      // The control: the same client, a plain `docker create`, gets the credential injected.
      await docker([
        'create',
        '--name',
        raw,
        '--network',
        'none',
        ...Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
        IMAGE,
      ]);
      const { name, box } = await startBox();
      return {
        name,
        box,
        rawEnv: (await inspectContainer(raw)).Config.Env,
        rawReport: await verifyContainer(raw),
        boxReport: await verifyContainer(name),
      };
    });
    expect(process.env.DOCKER_CONFIG ?? '').not.toMatch(/ca-sbx-docker-config/);
    expect(rawEnv).toContain('HTTP_PROXY=http://user:secret@proxy.invalid:3128');
    const rawRow = rawReport.checks.find((check) => check.id === 'no-proxy-env');
    expect(rawRow?.pass).toBe(false);
    expect(
      rawRow?.seen
        .replace(/^set: /, '')
        .split(',')
        .sort(),
    ).toEqual(['ALL_PROXY', 'HTTP_PROXY', 'all_proxy', 'http_proxy']);
    expect(JSON.stringify(rawReport)).not.toContain('secret');

    expect(JSON.stringify((await inspectContainer(name)).Config.Env)).not.toContain('secret');
    expect(box.report.checks.find((check) => check.id === 'no-proxy-env')?.pass).toBe(true);
    expect(boxReport.ok).toBe(true);
    const env = await sh(name, 'env');
    expect(env.stdout).not.toContain('secret');
    expect(env.stdout).not.toMatch(/proxy\.invalid/);
  });
});

describe('dns blackhole on a user-defined network', () => {
  it("resolves no name through the host: the embedded resolver forwards only to the box's own loopback", async () => {
    const id = uniqueId();
    const network = `ca-sbx-${id}`;
    await docker(['network', 'create', '--label', 'ca.sandbox=1', '--label', `ca.sandbox.id=${id}`, network]);
    const name = `ca-sbx-${id}`;
    try {
      const volume = await newVolume(id);
      created.containers.add(name);
      const box = await runContainer({
        sandboxId: id,
        name,
        image: IMAGE,
        volume,
        network,
        dns: 'blackhole',
      });
      expect(box.report.ok).toBe(true);
      const dns = await docker(['inspect', '--format', '{{json .HostConfig.Dns}}', name]);
      expect(JSON.parse(dns.stdout)).toEqual(['127.0.0.1']);
      expect(box.report.checks.find((check) => check.id === 'dns-blackhole')).toMatchObject({
        pass: true,
        expected: '127.0.0.1',
      });
      // The box still uses Docker's embedded resolver; only its upstream is the black hole.
      expect((await sh(name, 'cat /etc/resolv.conf')).stdout).toMatch(/nameserver 127\.0\.0\.11/);
      // Nothing listens on the box's loopback: no name resolves (a .test name: nothing to ask outside).
      const lookup = await sh(name, 'timeout 30 getent hosts probe-none.test; echo "exit=$?"', 60_000);
      expect(lookup.stdout).not.toMatch(/^\d+\.\d+\.\d+\.\d+\s+/m);
      expect(lookup.stdout).toMatch(/exit=[1-9]/);
      // The upstream is dialled inside the box: a listener the box starts on 127.0.0.1:53 gets it.
      const listen =
        'perl -MIO::Socket::INET -e \'my $s=IO::Socket::INET->new(LocalAddr=>"127.0.0.1",LocalPort=>53,Proto=>"udp") or die "bind: $!"; alarm 20; $s->recv(my $d, 512); $d =~ tr/a-z0-9-/./c; print "GOT $d\\n"\' > /tmp/got 2>&1 & sleep 1; timeout 10 getent hosts probe-inside.test; wait; cat /tmp/got';
      const inside = await sh(name, listen, 60_000);
      expect(inside.stdout).toMatch(/GOT .*probe-inside.test/);
    } finally {
      await docker(['rm', '-f', name], { allowFailure: true });
      created.containers.delete(name);
      await docker(['network', 'rm', network], { allowFailure: true });
    }
  });
});

describe('daemon security options', () => {
  it('gate every box on the daemon seccomp profile docker info reports', async () => {
    const { securityOptions } = await dockerInfo();
    const { box } = await startBox();
    const row = box.report.checks.find((check) => check.id === 'daemon-seccomp');
    const seccomp = securityOptions.find((option) => option.startsWith('name=seccomp'));
    expect(row?.seen).toBe(seccomp?.replace(/^name=seccomp,/, ''));
    expect(row?.pass).toBe(true);
    const apparmor = box.report.checks.find((check) => check.id === 'apparmor-confined');
    expect(apparmor?.seen).toBe(
      securityOptions.includes('name=apparmor') ? 'default' : 'not available on this host',
    );
  });
});
