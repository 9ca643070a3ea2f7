// An install container and its commit on the real engine: the hardening as the engine applied it,
// and the committed image's config (labels byte for byte, CMD restored, the container's Env kept).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './engine.js';
import { INSTALL_LOG_CONFIG, installContainerName } from './install-container.js';

const buildId = randomBytes(12).toString('hex');
const made: { containers: string[]; images: string[] } = { containers: [], images: [] };

describe('install container and commit (real engine)', () => {
  afterAll(async () => {
    for (const ref of made.containers) await engine.container.remove(ref, { force: true });
    for (const ref of made.images) await engine.image.remove(ref, { force: true });
  });

  it('runs confined, and its layer commits with the labels as given and the image CMD, not the step', async () => {
    const base = await engine.image.inspect('ca-sbx-base:debian');
    if (!base) throw new Error('ca-sbx-base:debian is missing (scripts/setup.sh builds it)');
    const container = await engine.container.createInstall(installContainerName(buildId), {
      Image: base.Id,
      Entrypoint: [],
      Cmd: [
        '/bin/sh',
        '-c',
        'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; id -u; echo layer > /tmp/written',
      ],
      User: '1000:1000',
      Labels: { 'ca.sandbox.build': '1', 'ca.sandbox.cache.build': buildId },
      OpenStdin: true,
      StdinOnce: true,
      HostConfig: {
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: false,
        Memory: 256 * 1024 ** 2,
        MemorySwap: 256 * 1024 ** 2,
        CpuPeriod: 100_000,
        CpuQuota: 100_000,
        PidsLimit: 64,
        Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }],
        Init: false,
        NetworkMode: 'none',
        LogConfig: INSTALL_LOG_CONFIG,
      },
    });
    made.containers.push(container);
    const attach = await engine.container.attachInstall(container);
    let stdout = '';
    attach.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    await engine.container.start(container);
    expect(await engine.container.wait(container)).toBe(0);
    await attach.ended;
    attach.release();
    expect(stdout).toContain('CapEff:\t0000000000000000');
    expect(stdout).toContain('NoNewPrivs:\t1');
    expect(stdout.trim().split('\n').at(-1)).toBe('1000');
    const doc = await engine.container.inspect(container);
    expect(doc.HostConfig.PidsLimit).toBe(64);
    expect(doc.Mounts).toEqual([]);
    const labels = {
      'ca.sandbox.cache': '1',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable reference, kept literal
      'ca.sandbox.cache.source': '/home/a b/"x"/$HOME/${PATH}\\y',
      'ca.sandbox.toolchain': 'node=22.23.5,npm=10.9.9',
    };
    const image = await engine.container.commit(container, { labels, cmd: ['bash'], entrypoint: [] });
    made.images.push(image);
    const committed = await engine.image.inspect(image);
    expect(committed?.Config.Labels).toMatchObject({ ...labels, 'ca.sandbox.cache.build': buildId });
    expect(committed?.Config.Cmd).toEqual(['bash']);
    expect(committed?.Config.Entrypoint).toEqual([]);
    expect(committed?.Config.Env).toEqual(base.Config.Env);
    const history = await engine.image.layers(image);
    expect(history[0]?.size).toBeGreaterThan(0);
  }, 120_000);

  it('its output comes over the attach; a released (or dropped) attach closes its stdin: a watch on it ends the step', async () => {
    const base = await engine.image.inspect('ca-sbx-base:debian');
    if (!base) throw new Error('ca-sbx-base:debian is missing (scripts/setup.sh builds it)');
    const container = await engine.container.createInstall(
      installContainerName(randomBytes(12).toString('hex')),
      {
        Image: base.Id,
        Entrypoint: [],
        // PID 1 is a time bound, as the install's is: the watch's `kill -1` spares it, and it
        // exits with its child.
        Cmd: [
          '/usr/bin/timeout',
          '--signal=KILL',
          '120s',
          '/bin/sh',
          '-c',
          'exec 3<&0 </dev/null\n{ /bin/cat <&3 >/dev/null 2>&1; kill -KILL -1; } &\nexec 3<&-\necho started\nsleep 100',
        ],
        User: '1000:1000',
        Labels: { 'ca.sandbox.build': '1', 'ca.sandbox.cache.build': buildId },
        OpenStdin: true,
        StdinOnce: true,
        HostConfig: {
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ReadonlyRootfs: false,
          Memory: 256 * 1024 ** 2,
          MemorySwap: 256 * 1024 ** 2,
          CpuPeriod: 100_000,
          CpuQuota: 100_000,
          PidsLimit: 64,
          Ulimits: [],
          Init: false,
          NetworkMode: 'none',
          LogConfig: INSTALL_LOG_CONFIG,
        },
      },
    );
    made.containers.push(container);
    const held = await engine.container.attachInstall(container);
    let output = '';
    held.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    await engine.container.start(container);
    // Running while held.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await engine.container.inspect(container)).State.Running).toBe(true);
    held.release();
    // SIGKILL's status: the sleep would have ended it with 0 (and before the bound).
    expect(await engine.container.wait(container)).toBe(137);
    await held.ended;
    expect(output).toBe('started\n');
    // No log file of it on the host: the output came over the attach only.
    expect((await engine.container.inspect(container)).HostConfig.LogConfig.Type).toBe('none');
  }, 120_000);
});
