// The install's container made from the prep image itself (no pre-install build): the manifests
// put by the archive API land in its layer as the box user's, the variables as installEnv
// resolved them are what the committed image keeps (real engine).
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEPS_SRC, engine, INSTALL_LOG_CONFIG, INSTALL_PID1, installContainerName } from '@ca-sandbox/docker';
import { afterAll, describe, expect, it } from 'vitest';
import { installEnv, manifestsArchive } from './install-image.js';

const made: { containers: string[]; images: string[]; dirs: string[] } = {
  containers: [],
  images: [],
  dirs: [],
};

describe('the install container from the prep image (real engine)', () => {
  afterAll(async () => {
    for (const ref of made.containers) await engine.container.remove(ref, { force: true, volumes: true });
    for (const ref of made.images) await engine.image.remove(ref, { force: true });
    for (const dir of made.dirs) await rm(dir, { recursive: true, force: true });
  });

  it("holds the manifests as the box user's and commits the resolved variables", async () => {
    const base = await engine.image.inspect('ca-sbx-base:node');
    if (!base) throw new Error('ca-sbx-base:node is missing (scripts/setup.sh builds it)');
    const dir = await mkdtemp(join(tmpdir(), 'ca-sbx-install-image-'));
    made.dirs.push(dir);
    await mkdir(join(dir, 'packages', 'a'), { recursive: true });
    await writeFile(join(dir, 'package.json'), '{"name":"root"}');
    await writeFile(join(dir, 'packages', 'a', 'package.json'), '{"name":"a"}');
    const env = installEnv(base.Config.Env, [
      { name: 'NODE_PATH', value: '/deps/node_modules' },
      { name: 'PATH', value: '/deps/node_modules/.bin:$PATH', expand: true },
    ]);
    const container = await engine.container.createInstall(
      installContainerName(randomBytes(12).toString('hex')),
      {
        Image: base.Id,
        Entrypoint: [],
        Cmd: [...INSTALL_PID1],
        User: '1000:1000',
        Env: env,
        Labels: { 'ca.sandbox.build': '1' },
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
      },
    );
    made.containers.push(container);
    // The base image has no /deps/src (the prep image makes it): the tar goes one level up here.
    await engine.container.putArchive(container, '/tmp', await manifestsArchive(dir));
    // Not into a folder that is not there: the engine's error.
    await expect(
      engine.container.putArchive(container, `${DEPS_SRC}/no/such`, Buffer.alloc(1024)),
    ).rejects.toThrow();
    const held = await engine.container.holdStdin(container);
    await engine.container.start(container);
    const read = await engine.exec.run(container, {
      cmd: ['/bin/sh', '-c', 'stat -c "%U %a %n" /tmp/packages /tmp/packages/a/package.json; echo "$PATH"'],
      user: '1000:1000',
    });
    const basePath = base.Config.Env.find((entry) => entry.startsWith('PATH='))?.slice(5);
    expect(read.stdout).toBe(
      `sandbox 755 /tmp/packages\nsandbox 644 /tmp/packages/a/package.json\n/deps/node_modules/.bin:${basePath}\n`,
    );
    held.release();
    expect(await engine.container.wait(container)).toBe(0);
    const image = await engine.container.commit(container, { labels: {}, cmd: ['/bin/sh'], entrypoint: [] });
    made.images.push(image);
    const committed = await engine.image.inspect(image);
    expect(committed?.Config.Env).toEqual(expect.arrayContaining(env));
    expect(committed?.Config.User).toBe('1000:1000');
  }, 120_000);
});
