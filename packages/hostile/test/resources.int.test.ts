import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  HostCanary,
  RUNTIMES,
} from './_harness.js';

async function boxRunning(container: string): Promise<boolean> {
  const state = await docker(['inspect', '--format', '{{.State.Running}}', container]);
  return state.stdout.trim() === 'true';
}

describe.each(RUNTIMES)('resource abuse under %s', (runtime) => {
  afterAll(destroyLeftovers);

  it('a fork bomb stops at the pids limit, the host stays fine and the box is still destroyable', async () => {
    const canary = await HostCanary.create();
    const box = await createBox(join(FIXTURES, 'resources'), { runtime, extra: ['--pids', '128'] });
    const bomb = await execBox(box.id, ['bash', 'fork-bomb.sh', '8'], ['--timeout', '60']);
    if (runtime === 'runc') {
      // runc: fork fails inside the box at the limit, and the box lives on.
      expect(bomb.stdout).toContain('Resource temporarily unavailable');
      expect(bomb.stdout).toContain('bomb over');
      expect((await execBox(box.id, ['sh', '-c', 'echo alive'])).stdout).toBe('alive\n');
    } else {
      // runsc: the limit applies to the gVisor sandbox as a whole, which goes down with the bomb.
      expect(await boxRunning(box.container)).toBe(false);
    }
    expect((await cli(['--version'])).exitCode).toBe(0);
    await destroyBox(box.id);
    await canary.assertUntouched();
    await canary.remove();
  });

  it('a memory bomb is killed inside the box at the memory limit and the host is fine', async () => {
    const box = await createBox(join(FIXTURES, 'resources'), { runtime, extra: ['--memory', '256m'] });
    const bomb = await execBox(box.id, ['perl', 'memory-bomb.pl'], ['--timeout', '30']);
    if (runtime === 'runc') {
      // runc: the kernel's OOM killer takes the bomb (SIGKILL) inside the box's memory cgroup.
      expect(bomb.timedOut).toBe(false);
      expect(bomb.exitCode).toBe(137);
      const oom = await execBox(box.id, ['cat', '/sys/fs/cgroup/memory/memory.oom_control']);
      expect(oom.stdout).toMatch(/oom_kill [1-9]/);
      expect((await execBox(box.id, ['true'])).exitCode).toBe(0);
    } else {
      // runsc: the memory cgroup holds the whole gVisor sandbox, which the OOM killer takes down.
      expect(bomb.exitCode).not.toBe(0);
      expect(await boxRunning(box.container)).toBe(false);
    }
    expect((await cli(['--version'])).exitCode).toBe(0);
    await destroyBox(box.id);
  });

  it('filling /tmp ends in ENOSPC at the tmpfs size', async () => {
    const box = await createBox(join(FIXTURES, 'resources'), { runtime });
    const fill = await execBox(box.id, ['sh', 'fill.sh', '/tmp', '2048'], ['--timeout', '120']);
    expect(fill.stdout + fill.stderr).toMatch(/No space left on device/);
    expect(fill.stdout).toMatch(/536870912 bytes|512 MiB/);
    expect((await execBox(box.id, ['true'])).exitCode).toBe(0);
    await destroyBox(box.id);
  });

  it('one file in the volume cannot outgrow the file size limit and the box is still destroyable', async () => {
    const box = await createBox(join(FIXTURES, 'resources'), { runtime });
    const huge = await execBox(box.id, ['sh', '-c', 'truncate -s 5G /work/repo/huge.bin; echo exit=$?']);
    expect(huge.stdout + huge.stderr).toMatch(/File too large|exit=1/);
    const some = await execBox(box.id, ['sh', 'fill.sh', '/work/repo', '64'], ['--timeout', '120']);
    expect(some.stdout).toMatch(/64 MiB|67108864 bytes/);
    await destroyBox(box.id);
  });

  it("output written to the box's own stdout (/proc/1/fd/1) is stored nowhere on the host", async () => {
    const box = await createBox(join(FIXTURES, 'resources'), { runtime });
    // Any process of the box may write to PID 1's stdout: with a log driver that lands in a file
    // on the host's disk, owned by root and bounded by no limit of the box.
    const flood = await execBox(box.id, [
      'sh',
      '-c',
      'head -c 8388608 /dev/zero | tr "\\0" x > /proc/1/fd/1 && echo wrote',
    ]);
    expect(flood.stdout).toBe('wrote\n');
    const inspect = JSON.parse((await docker(['inspect', box.container])).stdout)[0];
    expect(inspect.HostConfig.LogConfig.Type).toBe('none');
    expect(inspect.LogPath).toBe('');
    const logs = await docker(['logs', box.container], { allowFailure: true });
    expect(logs.exitCode).not.toBe(0);
    expect(logs.stdout).not.toContain('xxxx');
    const verify = await cli(['verify', box.id, '--json']);
    const report = JSON.parse(verify.stdout) as { checks: { check: string; pass: boolean }[] };
    expect(report.checks.find((check) => check.check === 'no-host-log')?.pass).toBe(true);
    await destroyBox(box.id);
  });
});
