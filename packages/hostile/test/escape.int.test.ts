import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBox,
  destroyBox,
  destroyLeftovers,
  escapes,
  execBox,
  FIXTURES,
  HostCanary,
  RUNTIMES,
  type SandboxRecord,
} from './_harness.js';

describe.each(RUNTIMES)('escape attempts under %s', (runtime) => {
  let canary: HostCanary;
  let box: SandboxRecord;

  beforeAll(async () => {
    canary = await HostCanary.create();
    box = await createBox(join(FIXTURES, 'escape'), { runtime });
  });

  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
    await canary?.remove();
  });

  it('writing host paths (the canary, /proc/1/root, /etc/passwd, the root fs) never reaches the host', async () => {
    const result = await execBox(box.id, ['sh', 'write-host.sh', canary.file]);
    expect(result.stdout).toContain('BLOCKED write /etc/passwd');
    expect(result.stdout).toContain('BLOCKED write the root filesystem');
    expect(result.stdout).toContain('BLOCKED create and read a host block device');
    expect(result.stdout).toContain('BLOCKED chown to root');
    expect(escapes(result.stdout)).toEqual([]);
    await canary.assertUntouched();
  });

  it('finds no docker socket and cannot reach the docker API on the bridge gateway', async () => {
    const result = await execBox(box.id, ['bash', 'probe-docker.sh', '172.17.0.1']);
    expect(result.stdout).toContain('BLOCKED socket /var/run/docker.sock');
    expect(result.stdout).toContain('BLOCKED no socket anywhere');
    expect(result.stdout).toContain('BLOCKED api 172.17.0.1:2375');
    expect(escapes(result.stdout)).toEqual([]);
    await canary.assertUntouched();
  });

  it('mount, unshare, nsenter, chroot and su are refused', async () => {
    const result = await execBox(box.id, ['sh', 'privesc.sh']);
    expect(result.stdout.match(/^BLOCKED/gm)?.length).toBe(7);
    expect(escapes(result.stdout)).toEqual([]);
    await canary.assertUntouched();
  });

  it('writes to /proc/sys, /proc/sysrq-trigger and /sys are refused', async () => {
    const result = await execBox(box.id, ['sh', 'kernel-knobs.sh']);
    expect(result.stdout).toContain('BLOCKED write /proc/sysrq-trigger');
    expect(result.stdout).toContain('BLOCKED write /proc/sys/kernel/hostname');
    expect(escapes(result.stdout)).toEqual([]);
    await canary.assertUntouched();
  });

  it('raw and packet sockets are refused (no CAP_NET_RAW)', async () => {
    const result = await execBox(box.id, ['perl', 'raw-socket.pl']);
    expect(result.stdout).toMatch(/BLOCKED raw socket/);
    expect(result.stdout).toMatch(/BLOCKED packet socket/);
    expect(escapes(result.stdout)).toEqual([]);
  });

  it('runs as 1000:1000 with no capabilities and no way to gain privileges', async () => {
    const result = await execBox(box.id, [
      'sh',
      '-c',
      'id -u; id -g; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status',
    ]);
    expect(result.stdout).toMatch(/^1000\n1000\n/);
    expect(result.stdout).toMatch(/CapEff:\s+0{16}/);
    // gVisor's /proc does not report NoNewPrivs; the setuid test covers it by behaviour.
    if (runtime === 'runc') expect(result.stdout).toMatch(/NoNewPrivs:\s+1/);
  });
});
