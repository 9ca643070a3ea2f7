// An install container and its commit on the real engine: the hardening as the engine applied it,
// the PID 1 that only its creator's end can stop, and the committed image's config (labels byte
// for byte, CMD restored, the container's Env kept).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './engine.js';
import {
  INSTALL_LOG_CONFIG,
  INSTALL_PID1,
  type InstallContainerConfig,
  installContainerName,
} from './install-container.js';

const buildId = randomBytes(12).toString('hex');
const made: { containers: string[]; images: string[] } = { containers: [], images: [] };

async function installContainer(): Promise<{ container: string; baseEnv: string[] }> {
  const base = await engine.image.inspect('ca-sbx-base:debian');
  if (!base) throw new Error('ca-sbx-base:debian is missing (scripts/setup.sh builds it)');
  const config: InstallContainerConfig = {
    Image: base.Id,
    Entrypoint: [],
    Cmd: [...INSTALL_PID1],
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
  };
  const container = await engine.container.createInstall(
    installContainerName(randomBytes(12).toString('hex')),
    config,
  );
  made.containers.push(container);
  return { container, baseEnv: base.Config.Env };
}

const asUser = (script: string) => ({ cmd: ['/bin/sh', '-c', script], user: '1000:1000' });

describe('install container and commit (real engine)', () => {
  afterAll(async () => {
    for (const ref of made.containers) await engine.container.remove(ref, { force: true, volumes: true });
    for (const ref of made.images) await engine.image.remove(ref, { force: true });
  });

  it('runs its exec confined; its layer commits with the labels as given and the image CMD, not the step', async () => {
    const { container, baseEnv } = await installContainer();
    const held = await engine.container.holdStdin(container);
    await engine.container.start(container);
    const probe = await engine.exec.run(
      container,
      asUser('grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; id -u; echo layer > /tmp/written'),
    );
    expect(probe.exitCode).toBe(0);
    expect(probe.stdout).toContain('CapEff:\t0000000000000000');
    expect(probe.stdout).toContain('NoNewPrivs:\t1');
    expect(probe.stdout.trim().split('\n').at(-1)).toBe('1000');
    const doc = await engine.container.inspect(container);
    expect(doc.HostConfig.PidsLimit).toBe(64);
    expect(doc.HostConfig.LogConfig.Type).toBe('none');
    expect(doc.Mounts).toEqual([]);
    // Released: PID 1 reads EOF and the container ends by itself, 0.
    held.release();
    expect(await engine.container.wait(container)).toBe(0);
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
    expect(committed?.Config.Env).toEqual(baseEnv);
    const history = await engine.image.layers(image);
    expect(history[0]?.size).toBeGreaterThan(0);
  }, 120_000);

  it('nothing inside can end its PID 1; its creator releasing the stdin (or dying) ends every process in it', async () => {
    const { container } = await installContainer();
    const held = await engine.container.holdStdin(container);
    await engine.container.start(container);
    // A process left running, then every signal the step's user can send, PID 1 included.
    const left = await engine.exec.run(
      container,
      asUser('nohup sleep 300 >/dev/null 2>&1 & kill -KILL -1; kill -KILL 1; kill -TERM 1; echo tried'),
    );
    expect(left.stdout).toContain('tried');
    await engine.exec.run(container, asUser('nohup sleep 300 >/dev/null 2>&1 &'));
    expect((await engine.container.inspect(container)).State.Running).toBe(true);
    held.release();
    // cat's EOF: the container ends (its other processes with it), 0 and not the sleep's 300 s.
    expect(await engine.container.wait(container)).toBe(0);
    expect((await engine.container.inspect(container)).State.Running).toBe(false);
  }, 120_000);
});
