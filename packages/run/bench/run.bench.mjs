// runContainer (Engine API create + start, inspect, isolation gate) for a box and a helper, in
// rotating order with
//   cli: the same start through the docker CLI (`docker run` of buildRunArgs, the argv rendered
//        from the same create body), then the same inspect and gate: what runContainer did before
//        it moved to the Engine API;
//   raw: `docker run -d` of that argv alone (goal: runContainer <= 1.3x raw).
// Medians, with the load average. Run after `pnpm build`: BENCH_ROUNDS=10 node packages/run/bench/run.bench.mjs
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { dockerInfo, engine, inspectContainer } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { buildRunArgs, resolveRunOptions, runContainer, verifyIsolation } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The CLI path as runContainer ran it: `docker run` through the CLI runner, inspect, the gate. */
async function cliRun(input) {
  const options = resolveRunOptions(input);
  const { securityOptions } = await dockerInfo();
  const id = (await docker(buildRunArgs(options))).stdout.trim();
  const report = verifyIsolation(await inspectContainer(id), {
    network: options.network,
    runtime: options.runtime,
    sandboxId: options.sandboxId,
    allowedEnv: Object.keys(options.env),
    daemonSecurityOptions: securityOptions,
    dns: options.dns,
    requireRepoVolume: options.role !== 'gateway',
  });
  if (!report.ok) throw new Error(`cli path: the gate failed on ${options.name}`);
}

const id = `bench-${randomUUID().slice(0, 8)}`;
const volume = `ca-sbx-${id}`;
await engine.volume.create(volume, { labels: { 'ca.sandbox': '1', 'ca.sandbox.id': id } });
await dockerInfo();
const roles = {
  box: { image: 'ca-sbx-base:debian' },
  helper: { image: 'ca-sbx-base:git', role: 'helper', network: 'bridge' },
};
const times = {};
const loads = [];
let count = 0;
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [role, extra] of Object.entries(roles)) {
      const ways = {
        api: (name) => runContainer({ sandboxId: id, name, volume, ...extra }),
        cli: (name) => cliRun({ sandboxId: id, name, volume, ...extra }),
        raw: (name) => docker(buildRunArgs(resolveRunOptions({ sandboxId: id, name, volume, ...extra }))),
      };
      const order = Object.keys(ways);
      for (let turn = 0; turn < order.length; turn += 1) {
        const way = order[(turn + round) % order.length];
        const name = `${volume}-${count++}`;
        const start = performance.now();
        try {
          await ways[way](name);
          const key = `${role} ${way}`;
          times[key] = [...(times[key] ?? []), performance.now() - start];
        } finally {
          await engine.container.remove(name, { force: true });
        }
      }
    }
    loads.push(loadavg()[0]);
  }
} finally {
  await engine.volume.remove(volume, { force: true });
}
for (const role of Object.keys(roles)) {
  const [api, cli, raw] = ['api', 'cli', 'raw'].map((way) => median(times[`${role} ${way}`]));
  console.log(
    `${role.padEnd(6)} runContainer (API) ${api.toFixed(0)} ms | CLI path ${cli.toFixed(0)} ms | raw docker run -d ${raw.toFixed(0)} ms | API/CLI ${(api / cli).toFixed(2)}x | API/raw ${(api / raw).toFixed(2)}x (goal <= 1.30x) ${api / raw <= 1.3 ? 'ok' : 'OVER'}`,
  );
}
console.log(`rounds ${ROUNDS}, load1 ${loads.map((load) => load.toFixed(1)).join(',')}`);
