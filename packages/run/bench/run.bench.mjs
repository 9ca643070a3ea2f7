// runContainer (docker run -d + inspect + isolation gate) against raw `docker run -d` with the
// same flags. Goal: ratio <= 1.3.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { buildRunArgs, resolveRunOptions, runContainer } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const docker = (...args) => execFileSync('docker', args, { encoding: 'utf8' }).trim();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const id = `bench-${randomUUID().slice(0, 8)}`;
const volume = `ca-sbx-${id}`;
docker('volume', 'create', '--label', 'ca.sandbox=1', '--label', `ca.sandbox.id=${id}`, volume);
const ours = [];
const raw = [];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const options = { sandboxId: id, name: `${volume}-o${round}`, image: 'ca-sbx-base:debian', volume };
    let start = performance.now();
    await runContainer(options);
    ours.push(performance.now() - start);
    docker('rm', '-f', options.name);

    const argv = buildRunArgs(resolveRunOptions({ ...options, name: `${volume}-r${round}` }));
    start = performance.now();
    docker(...argv);
    raw.push(performance.now() - start);
    docker('rm', '-f', `${volume}-r${round}`);
  }
} finally {
  docker('volume', 'rm', '-f', volume);
}
const ratio = median(ours) / median(raw);
console.log(`runContainer start+verify: median ${median(ours).toFixed(0)} ms`);
console.log(`raw docker run -d:         median ${median(raw).toFixed(0)} ms`);
console.log(`ratio ${ratio.toFixed(2)}x (goal <= 1.30x) ${ratio <= 1.3 ? 'ok' : 'OVER'}`);
