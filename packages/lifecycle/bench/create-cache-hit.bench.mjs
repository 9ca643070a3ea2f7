// A create that reuses a cached deps image, side by side in one run with
//   raw:          `docker run -d <image>` of the very image the box gets (goal: create <= 2x), and
//   devcontainer: `devcontainer up` of the same repo with that image (goal: create < 0.5x),
//   floor:        the two container starts a create makes (the helper's and the box's), raw,
// in rotating order, medians. `ca-sandbox create` is timed through the bin (what a user waits for),
// and createSandbox in-process (what the MCP server waits for), with its phases. Policies: offline
// (the default) and clone-then-cut (whose cache hit installs nothing either).
//
// Inputs: a local git repo made from the build's node fixture (ours, one dependency); the seeded
// `ca-sbx-base:node`; the devcontainer CLI at BENCH_DEVCONTAINER or /tmp/devc/node_modules/.bin/
// devcontainer (`npm i --prefix /tmp/devc @devcontainers/cli`; without it its column is skipped).
// The first create (a cold build) needs the npm registry. Run after `pnpm build`:
//   BENCH_ROUNDS=7 node packages/lifecycle/bench/create-cache-hit.bench.mjs
// BENCH_BASELINE=<another built checkout> adds its createSandbox ('base' columns) to the same
// rounds: a before/after of a change, side by side under the same load.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createSandbox, destroySandbox } from '../dist/index.js';
import { median, raw, time } from './_shared.mjs';

const run = promisify(execFile);
process.env.CA_SANDBOX_BASE_IMAGE_NODE ??= 'ca-sbx-base:node';
const hostCa = [process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'].find(
  (file) => file && existsSync(file),
);
if (hostCa) process.env.CA_SANDBOX_CA_CERTS ??= hostCa;

const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const policies = (process.env.BENCH_POLICIES ?? 'offline,clone-then-cut').split(',');
const bin = new URL('../../cli/bin/ca-sandbox.js', import.meta.url).pathname;
const devcontainer = [process.env.BENCH_DEVCONTAINER, '/tmp/devc/node_modules/.bin/devcontainer'].find(
  (file) => file && existsSync(file),
);
const fixture = new URL('../../build/test/fixtures/node-esm/', import.meta.url).pathname;
const baseline = process.env.BENCH_BASELINE
  ? await import(join(process.env.BENCH_BASELINE, 'packages/lifecycle/dist/index.js'))
  : undefined;

/** A git repo of our own node fixture: the clone is the real `git clone --no-local` path. */
function makeRepo() {
  const dir = mkdtempSync(join(tmpdir(), 'ca-bench-hit-'));
  for (const file of ['package.json', 'package-lock.json', 'index.mjs'])
    copyFileSync(join(fixture, file), join(dir, file));
  return dir;
}
const git = (dir, ...args) =>
  run('git', ['-C', dir, '-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args]);

const repo = makeRepo();
await git(repo, 'init', '-q');
await git(repo, 'add', '.');
await git(repo, 'commit', '-qm', 'fixture');
const made = new Set();

async function destroy(name) {
  await destroySandbox(name).catch(() => undefined);
  made.delete(name);
}

async function binCreate(policy) {
  const name = `bench-${randomUUID().slice(0, 8)}`;
  made.add(name);
  let record;
  const ms = await time(async () => {
    const { stdout } = await run(
      process.execPath,
      [bin, 'create', repo, '--name', name, '--network', policy, '--json'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    record = JSON.parse(stdout);
  });
  await destroy(name);
  if (!record.imageCacheHit) throw new Error(`expected a cache hit, got ${record.image}`);
  return ms;
}

async function libraryCreate(policy, phases, create = createSandbox) {
  const name = `bench-${randomUUID().slice(0, 8)}`;
  made.add(name);
  let record;
  const ms = await time(async () => {
    record = await create(
      { source: repo, name, network: policy },
      {
        onPhase: (event) => {
          if (event.status !== 'done') return;
          phases[event.phase] ??= [];
          phases[event.phase].push(event.elapsedMs);
        },
      },
    );
  });
  await destroy(name);
  if (!record.imageCacheHit) throw new Error(`expected a cache hit, got ${record.image}`);
  return ms;
}

async function rawRun(image) {
  const name = `ca-bench-raw-${randomUUID().slice(0, 8)}`;
  try {
    return await time(() => raw('run', '-d', '--name', name, image, 'sleep', 'infinity'));
  } finally {
    await raw('rm', '-f', name).catch(() => undefined);
  }
}

/**
 * The floor under a create: its two container starts, run raw one after the other (the helper
 * image, where git runs, then the deps image), with nothing of ours in between. A create cannot go
 * below it while the clone runs in a container other than the box.
 */
async function twoRawRuns(image) {
  const names = [`ca-bench-raw-${randomUUID().slice(0, 8)}`, `ca-bench-raw-${randomUUID().slice(0, 8)}`];
  try {
    return await time(async () => {
      await raw('run', '-d', '--name', names[0], '--network', 'none', 'ca-sbx-base:git', 'sleep', 'infinity');
      await raw('run', '-d', '--name', names[1], '--network', 'none', image, 'sleep', 'infinity');
    });
  } finally {
    await raw('rm', '-f', ...names).catch(() => undefined);
  }
}

async function devcontainerUp(image) {
  const dir = makeRepo();
  mkdirSync(join(dir, '.devcontainer'));
  // The image as is: no derived image for a uid change (the host user here may be root anyway).
  writeFileSync(
    join(dir, '.devcontainer', 'devcontainer.json'),
    JSON.stringify({ image, updateRemoteUserUID: false }),
  );
  try {
    return await time(() =>
      run(devcontainer, ['up', '--workspace-folder', dir], { maxBuffer: 16 * 1024 * 1024 }),
    );
  } finally {
    const ids = (await raw('ps', '-aq', '--filter', `label=devcontainer.local_folder=${dir}`))
      .split('\n')
      .filter(Boolean);
    if (ids.length) await raw('rm', '-f', ...ids);
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (ms) => `${ms.toFixed(0).padStart(5)} ms`;

try {
  // The deps image every later create hits: built once, through the gateway (npm).
  const warm = `bench-${randomUUID().slice(0, 8)}`;
  made.add(warm);
  const first = await createSandbox({ source: repo, name: warm, network: 'clone-then-cut' });
  await destroy(warm);
  if (baseline) {
    // The baseline's own cache entry (its dephash key may differ from this checkout's).
    const baseWarm = `bench-${randomUUID().slice(0, 8)}`;
    made.add(baseWarm);
    await baseline.createSandbox({ source: repo, name: baseWarm, network: 'clone-then-cut' });
    await destroy(baseWarm);
  }
  const image = first.image;
  console.log(`deps image: ${image} (cache hit on the warm-up: ${first.imageCacheHit})`);
  console.log(
    `load average at start: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  // A column only for the jobs that run (no devcontainer CLI: no devcontainer column).
  const times = { raw: [], floor: [], ...(devcontainer ? { devcontainer: [] } : {}) };
  const phases = {};
  for (const policy of policies) {
    times[`bin ${policy}`] = [];
    times[`lib ${policy}`] = [];
    phases[policy] = {};
    if (baseline) {
      times[`base ${policy}`] = [];
      phases[`base ${policy}`] = {};
    }
  }
  const jobs = [
    ['raw', () => rawRun(image)],
    ['floor', () => twoRawRuns(image)],
    ...(devcontainer ? [['devcontainer', () => devcontainerUp(image)]] : []),
    ...policies.flatMap((policy) => [
      [`bin ${policy}`, () => binCreate(policy)],
      [`lib ${policy}`, () => libraryCreate(policy, phases[policy])],
      ...(baseline
        ? [[`base ${policy}`, () => libraryCreate(policy, phases[`base ${policy}`], baseline.createSandbox)]]
        : []),
    ]),
  ];
  for (let round = 0; round < rounds; round += 1) {
    // Rotate who goes first: the engine's caches and the machine's load fall on all alike.
    for (let k = 0; k < jobs.length; k += 1) {
      const [label, job] = jobs[(round + k) % jobs.length];
      times[label].push(await job());
    }
    console.log(
      `round ${round + 1}: ${Object.entries(times)
        .map(([label, xs]) => `${label} ${xs.at(-1).toFixed(0)}`)
        .join(', ')} (ms)`,
    );
  }
  const rawMedian = median(times.raw);
  const dcMedian = devcontainer ? median(times.devcontainer) : undefined;
  console.log(`\ncreate on a cache hit (${rounds} rounds, medians, image ${image}):`);
  console.log(`  raw docker run -d:  ${fmt(rawMedian)}`);
  const floorMedian = median(times.floor);
  console.log(
    `  floor, two raw runs (helper image, then the deps image): ${fmt(floorMedian)} = ${(floorMedian / rawMedian).toFixed(2)}x raw`,
  );
  if (dcMedian) console.log(`  devcontainer up:    ${fmt(dcMedian)}`);
  else console.log('  devcontainer up:    skipped (no devcontainer CLI; set BENCH_DEVCONTAINER)');
  for (const policy of policies) {
    for (const kind of ['bin', 'lib', ...(baseline ? ['base'] : [])]) {
      const ours = median(times[`${kind} ${policy}`]);
      const vsRaw = ours / rawMedian;
      const parts = [`${(vsRaw).toFixed(2)}x raw (goal <= 2.00x) ${vsRaw <= 2 ? 'ok' : 'OVER'}`];
      if (dcMedian) {
        const vsDc = ours / dcMedian;
        parts.push(`${vsDc.toFixed(2)}x devcontainer up (goal < 0.50x) ${vsDc < 0.5 ? 'ok' : 'OVER'}`);
      }
      parts.push(`+${(ours - floorMedian).toFixed(0)} ms over the floor`);
      const what = { bin: 'ca-sandbox create', lib: 'createSandbox()  ', base: 'baseline lib     ' }[kind];
      console.log(`  ${what} --network ${policy}: ${fmt(ours)}  ${parts.join(', ')}`);
    }
    for (const key of [policy, ...(baseline ? [`base ${policy}`] : [])])
      console.log(
        `    phases (${key === policy ? 'lib' : 'baseline'}): ${Object.entries(phases[key])
          .map(([phase, xs]) => `${phase} ${median(xs)}`)
          .join(', ')} (ms)`,
      );
  }
  console.log(
    `load average at end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
} finally {
  for (const name of [...made]) await destroy(name);
  rmSync(repo, { recursive: true, force: true });
}
