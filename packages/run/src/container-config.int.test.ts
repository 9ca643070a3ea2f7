// The create body runContainer sends and the `docker run` argv rendered from it, read by docker
// itself: one container made each way (`docker create` through the CLI, `engine.container.create`
// over the API), for every option combination of test/run-combos.ts, and their inspect documents
// compared field by field. What docker records must not depend on which way the container came.
import { randomUUID } from 'node:crypto';
import { dockerInfo, engine, sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_COMBOS } from '../test/run-combos.js';
import { resolveRunOptions } from './options.js';
import { buildContainerConfig, runArgsOf } from './run-args.js';

const id = `sbx-${randomUUID().slice(0, 8)}`;
const volume = `ca-sbx-${id}`;
const network = `ca-sbx-${id}-net`;
const made: string[] = [];
const hasRunsc = (await dockerInfo()).runtimes.includes('runsc');

/** Fields that name the instance (its id, name, paths, creation time), not its configuration. */
const INSTANCE = new Set([
  'Id',
  'Created',
  'Name',
  'GraphDriver',
  'ResolvConfPath',
  'HostnamePath',
  'HostsPath',
  'LogPath',
  'State',
]);

/**
 * What the two ways may differ in without meaning anything different: an empty list or map the
 * CLI sends where the API body leaves the field out (null), the restart policy `no` the CLI
 * spells out (the engine's empty name means the same), the environment's order (the CLI sends it
 * from a map), and Attach* (`docker create` attaches, `docker run --detach` does not).
 */
function normalized(inspect: Record<string, unknown>): Record<string, unknown> {
  const empty = (value: unknown) =>
    value === null ||
    (Array.isArray(value) && value.length === 0) ||
    (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);
  const clean = (record: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(record).map(([key, value]) => [key, empty(value) ? null : value]));
  const config = clean(inspect.Config as Record<string, unknown>);
  config.Env = [...((config.Env as string[] | null) ?? [])].sort();
  delete config.AttachStdout;
  delete config.AttachStderr;
  const host = clean(inspect.HostConfig as Record<string, unknown>);
  const restart = host.RestartPolicy as { Name: string; MaximumRetryCount: number };
  host.RestartPolicy = { ...restart, Name: restart.Name || 'no' };
  const settings = inspect.NetworkSettings as { Networks?: Record<string, unknown> };
  return {
    ...Object.fromEntries(Object.entries(inspect).filter(([key]) => !INSTANCE.has(key))),
    Config: config,
    HostConfig: host,
    NetworkSettings: { Networks: Object.keys(settings.Networks ?? {}).sort() },
  };
}

async function rawInspect(name: string): Promise<Record<string, unknown>> {
  const { stdout } = await docker(['container', 'inspect', '--', name]);
  return (JSON.parse(stdout) as Record<string, unknown>[])[0] ?? {};
}

beforeAll(async () => {
  await engine.volume.create(volume, { labels: sandboxLabels(id) });
  await engine.network.create(network, { internal: true, labels: sandboxLabels(id) });
});

afterAll(async () => {
  for (const name of made) await engine.container.remove(name, { force: true }).catch(() => false);
  await engine.network.remove(network).catch(() => false);
  await engine.volume.remove(volume, { force: true }).catch(() => false);
});

describe('the create body and its docker run argv, as docker records them', () => {
  it.each(RUN_COMBOS.map((combo, index) => [combo.label, combo, index] as const))(
    '%s',
    async (_label, combo, index) => {
      const input = combo.options({ id, volume, network });
      if (input.runtime === 'runsc' && !hasRunsc) return;
      const options = resolveRunOptions({ ...input, name: `${volume}-${index}` });
      const config = buildContainerConfig(options);
      const viaApi = `${volume}-${index}-api`;
      const viaCli = `${volume}-${index}-cli`;
      made.push(viaApi, viaCli);
      await engine.container.create(viaApi, config);
      const argv = runArgsOf(viaCli, config);
      expect(argv.slice(0, 2)).toEqual(['run', '--detach']);
      await docker(['create', ...argv.slice(2)]);
      const api = normalized(await rawInspect(viaApi));
      const cli = normalized(await rawInspect(viaCli));
      for (const part of ['Config', 'HostConfig'] as const) {
        const a = api[part] as Record<string, unknown>;
        const c = cli[part] as Record<string, unknown>;
        for (const key of new Set([...Object.keys(a), ...Object.keys(c)]))
          expect(a[key], `${part}.${key}`).toEqual(c[key]);
      }
      expect(api).toEqual(cli);
      // And what the body asked for is what docker recorded (the gate reads these fields).
      expect(api.HostConfig).toMatchObject({
        CapDrop: ['ALL'],
        ReadonlyRootfs: true,
        Privileged: false,
        Binds: null,
        Devices: null,
        PortBindings: null,
        NetworkMode: options.network,
        Runtime: options.runtime,
        Memory: config.HostConfig.Memory,
        Dns: config.HostConfig.Dns ?? null,
      });
    },
    60_000,
  );
});
