// Each typed verb against the real engine: what it returns, and how a refusal or a missing object
// is told (DockerNotFoundError, DockerEngineError with the engine's message).
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { isNameConflict, type SandboxContainerConfig } from './container-create.js';
import { engine, filterRecord } from './engine.js';
import { DockerCommandError, DockerEngineError, DockerNotFoundError } from './errors.js';

const id = `sbx-${randomUUID().slice(0, 8)}`;
const name = `ca-sbx-${id}`;
const labels = { 'ca.sandbox': '1', 'ca.sandbox.id': id };
const mine = [`ca.sandbox.id=${id}`];

/** A hardened body as @ca-sandbox/run makes one (written out here: this package does not import it). */
function sandboxConfig(
  cmd: string[],
  overrides: Partial<SandboxContainerConfig> = {},
): SandboxContainerConfig {
  return {
    Image: 'ca-sbx-base:debian',
    Entrypoint: [],
    Cmd: cmd,
    User: '1000:1000',
    Hostname: 'sandbox',
    WorkingDir: '/tmp',
    Env: ['HOME=/tmp'],
    Labels: labels,
    HostConfig: {
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      PidsLimit: 64,
      Memory: 256 * 1024 ** 2,
      MemorySwap: 256 * 1024 ** 2,
      NanoCpus: 1e9,
      IpcMode: 'private',
      Ulimits: [{ Name: 'fsize', Soft: 1024 ** 2, Hard: 1024 ** 2 }],
      Init: true,
      Runtime: 'runc',
      NetworkMode: 'none',
      Mounts: [],
      Tmpfs: { '/tmp': 'exec,nosuid,nodev,size=16777216' },
    },
    ...overrides,
  };
}

afterAll(async () => {
  await engine.container.remove(name, { force: true }).catch(() => false);
  await engine.container.remove(`${name}-b`, { force: true }).catch(() => false);
  await engine.container.remove(`${name}-log`, { force: true }).catch(() => false);
  await engine.network.remove(name).catch(() => false);
  await engine.volume.remove(name).catch(() => false);
});

describe('engine verbs on the real engine', () => {
  it('volume: create, inspect, find, list, remove (false once gone)', async () => {
    const volume = await engine.volume.create(name, { labels });
    expect(volume).toMatchObject({ Name: name, Driver: 'local', Labels: labels });
    expect((await engine.volume.inspect(name)).Name).toBe(name);
    expect(await engine.volume.list({ labels: mine })).toEqual([{ name, labels }]);
    expect(await engine.volume.find(`${name}-none`)).toBeUndefined();
    await expect(engine.volume.inspect(`${name}-none`)).rejects.toBeInstanceOf(DockerNotFoundError);
  });

  it('network: create with options, inspect, list; a duplicate is refused with the engine message', async () => {
    const made = await engine.network.create(name, {
      internal: true,
      enableIPv6: false,
      labels,
      options: { 'com.docker.network.bridge.enable_icc': 'false' },
    });
    expect(made).toMatchObject({ Name: name, Internal: true, EnableIPv6: false, Labels: labels });
    expect(made.IPAM.Config[0]?.Subnet).toMatch(/\//);
    expect((await engine.network.list({ labels: mine })).map((n) => n.name)).toEqual([name]);
    const duplicate = await engine.network.create(name, { labels }).catch((error) => error);
    expect(duplicate).toBeInstanceOf(DockerEngineError);
    expect(duplicate).toBeInstanceOf(DockerCommandError);
    expect(duplicate.message).toMatch(/already exists/);
  });

  it('container: run (create + start), inspect, list, exec, logs, archive, stop, start, wait, remove', async () => {
    const started = await engine.container.run(
      name,
      sandboxConfig(['/bin/sh', '-c', 'echo started; echo warn >&2; exec sleep 600']),
    );
    expect(started).toMatch(/^[0-9a-f]{64}$/);
    const inspect = await engine.container.inspect(name);
    expect(inspect.Id).toBe(started);
    expect(inspect.State.Running).toBe(true);
    // The body arrived as sent: what the isolation gate of @ca-sandbox/run reads back.
    expect(inspect.HostConfig).toMatchObject({
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      PidsLimit: 64,
      Memory: 256 * 1024 ** 2,
      MemorySwap: 256 * 1024 ** 2,
      NanoCpus: 1e9,
      IpcMode: 'private',
      Runtime: 'runc',
      NetworkMode: 'none',
      Privileged: false,
      Binds: [],
    });
    expect(inspect.Config).toMatchObject({ User: '1000:1000', Labels: labels });
    // A taken name: 409, told by isNameConflict, and the container that has it is left alone.
    const taken = await engine.container.run(name, sandboxConfig(['/bin/true'])).catch((error) => error);
    expect(taken).toBeInstanceOf(DockerEngineError);
    expect(taken.status).toBe(409);
    expect(isNameConflict(taken)).toBe(true);
    expect((await engine.container.inspect(name)).Id).toBe(started);
    // The engine's own stat of a path, a link not followed (no process runs for it).
    expect(await engine.container.statPath(name, '/tmp')).toEqual({ kind: 'directory', linkTarget: '' });
    expect(await engine.container.statPath(name, '/bin')).toEqual({
      kind: 'symlink',
      linkTarget: '/usr/bin',
    });
    expect(await engine.container.statPath(name, '/etc/hostname')).toMatchObject({ kind: 'other' });
    expect(await engine.container.statPath(name, '/no/such/path')).toBeUndefined();
    const listed = await engine.container.list({ filters: filterRecord([`label=ca.sandbox.id=${id}`]) });
    expect(listed.map((c) => [c.name, c.state])).toEqual([[name, 'running']]);
    const outcome = await engine.exec.run(name, {
      cmd: ['sh', '-c', 'echo "$A $PWD"; echo e >&2; exit 5'],
      user: '1000:1000',
      workdir: '/tmp',
      env: ['A=b'],
    });
    expect(outcome).toEqual({ exitCode: 5, stdout: 'b /tmp\n', stderr: 'e\n' });
    const internal = await engine.exec.internal(name, ['/usr/bin/env'], {
      user: '1000:1000',
      env: { X: '1' },
    });
    expect(internal.stdout.split('\n').filter(Boolean).sort()).toEqual(
      ['HOME=/tmp', expect.stringMatching(/^PATH=/), 'X=1'].sort(),
    );
    // A terminal session (the shell's verb): one raw stream (stderr merged, no frames), keystrokes
    // in, a resize the program sees, the exit code from exec inspect.
    const tty = engine.exec.start(
      name,
      { cmd: ['/bin/sh', '-i'], user: '1000:1000', tty: true, stdin: true },
      { stdout: 'pipe', stderr: 'ignore' },
    );
    let screen = '';
    tty.stdout?.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    while (!screen.includes('$ ')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(tty.id).toMatch(/^[0-9a-f]{64}$/);
    expect(await engine.exec.resize(tty.id ?? '', 33, 99)).toBe(true);
    tty.stdin?.write('stty size; echo to-stderr >&2; exit 6\r');
    expect(await tty).toEqual({ exitCode: 6 });
    expect(screen).toMatch(/\r\n33 99\r\nto-stderr\r\n/);
    expect(await engine.exec.resize(tty.id ?? '', 20, 80)).toBe(false); // ended: refused
    expect(await engine.container.logs(name)).toEqual({
      stdout: 'started\n',
      stderr: 'warn\n',
      truncated: false,
    });
    const tar = await engine.container.archive(name, '/etc/hostname');
    const chunks: Buffer[] = [];
    for await (const chunk of tar) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).subarray(0, 8).toString()).toBe('hostname');
    await expect(engine.container.archive(name, '/no/such/path')).rejects.toBeInstanceOf(DockerNotFoundError);
    await engine.container.stop(name, { timeoutSeconds: 0 });
    // Under --init the SIGTERM reaches sleep through tini (143) unless the SIGKILL that follows at
    // once wins (137).
    expect([137, 143]).toContain(await engine.container.wait(name));
    const stopped = await engine.exec.run(name, { cmd: ['true'], user: '1000:1000' }).catch((error) => error);
    expect(stopped).toBeInstanceOf(DockerEngineError);
    expect(stopped.status).toBe(409);
    await engine.container.start(name);
    await engine.container.start(name); // already running: fine
    expect((await engine.container.inspect(name)).State.Running).toBe(true);
    expect(await engine.container.remove(name, { force: true })).toBe(true);
    expect(await engine.container.remove(name, { force: true })).toBe(false);
    expect(await engine.container.find(name)).toBeUndefined();
    const missing = await engine.exec.run(name, { cmd: ['true'], user: '1000:1000' }).catch((error) => error);
    expect(missing).toBeInstanceOf(DockerNotFoundError);
    expect(await engine.network.remove(name)).toBe(true);
    expect(await engine.volume.remove(name)).toBe(true);
    expect(await engine.volume.remove(name)).toBe(false);
  }, 120_000);

  it('container: logs keeps at most maxBytes and says the log went on (a flood never fills our memory)', async () => {
    const flooder = `${name}-log`;
    // 4 MiB of 'a' lines on stdout, then a marker line that a capped read never reaches.
    await engine.container.run(
      flooder,
      sandboxConfig(['/bin/sh', '-c', 'yes aaaaaaa | head -c 4194304; echo END-OF-LOG; exec sleep 600']),
    );
    let whole = await engine.container.logs(flooder);
    for (let tries = 0; !whole.stdout.includes('END-OF-LOG') && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      whole = await engine.container.logs(flooder);
    }
    expect(whole.truncated).toBe(false);
    expect(whole.stdout.endsWith('END-OF-LOG\n')).toBe(true);
    const capped = await engine.container.logs(flooder, { maxBytes: 1024 * 1024 });
    expect(capped.truncated).toBe(true);
    expect(capped.stdout.length).toBe(1024 * 1024);
    expect(capped.stdout).not.toContain('END-OF-LOG');
    expect(await engine.container.remove(flooder, { force: true })).toBe(true);
    await expect(engine.container.logs(flooder)).rejects.toBeInstanceOf(DockerNotFoundError);
  }, 120_000);

  it('container: create leaves it created; a start that fails removes what was created', async () => {
    const other = `${name}-b`;
    const made = await engine.container.create(other, sandboxConfig(['/bin/true']));
    expect((await engine.container.inspect(other)).State.Status).toBe('created');
    expect(await engine.container.remove(made, { force: true })).toBe(true);
    // A user the image does not have: the create is accepted, the start refused.
    const failed = await engine.container
      .run(other, sandboxConfig(['/bin/true'], { User: 'ca-sbx-no-such-user' }))
      .catch((error) => error);
    expect(failed).toBeInstanceOf(DockerEngineError);
    expect(failed.message).toMatch(/user/i);
    expect(await engine.container.find(other)).toBeUndefined();
    // A body outside the sandbox shape never reaches the engine.
    const privileged = {
      ...sandboxConfig(['/bin/true']),
      HostConfig: { ...sandboxConfig(['/bin/true']).HostConfig, Privileged: true },
    } as SandboxContainerConfig;
    await expect(engine.container.create(other, privileged)).rejects.toThrow(/HostConfig.Privileged/);
    const bind = sandboxConfig(['/bin/true']);
    bind.HostConfig.Mounts = [{ Type: 'bind', Source: '/etc', Target: '/x', ReadOnly: true } as never];
    await expect(engine.container.create(other, bind)).rejects.toThrow(/only volume mounts/);
    // The image's entrypoint never runs, and the main process is never looked up on its PATH.
    const entrypoint = { ...sandboxConfig(['/bin/true']), Entrypoint: ['docker-entrypoint.sh'] } as never;
    await expect(engine.container.create(other, entrypoint)).rejects.toThrow(/no entrypoint/);
    await expect(engine.container.create(other, sandboxConfig(['true']))).rejects.toThrow(/absolute path/);
    expect(await engine.container.find(other)).toBeUndefined();
  }, 120_000);

  it('image: inspect, exists, list, history; absent images are undefined/false', async () => {
    const image = await engine.image.inspect('ca-sbx-base:debian');
    expect(image?.Id).toMatch(/^sha256:/);
    expect(await engine.image.exists('ca-sbx-no-such:image')).toBe(false);
    const listed = await engine.image.list({ filters: { reference: ['ca-sbx-base:debian'] } });
    expect(listed.map((i) => i.tags)).toEqual([['ca-sbx-base:debian']]);
    expect((await engine.image.history('ca-sbx-base:debian')).length).toBeGreaterThan(0);
    expect(await engine.image.remove('ca-sbx-no-such:image')).toBe(false);
    await expect(engine.image.pull('ca-sbx-no-such-registry.invalid/x:1')).rejects.toBeInstanceOf(
      DockerEngineError,
    );
  }, 120_000);

  it('system: ping and info', async () => {
    expect(await engine.system.ping()).toBe(true);
    expect((await engine.system.info({ fresh: true })).runtimes).toContain('runc');
  });
});
