// Cache-hit preparation vs the raw cost of a box: `docker volume create` + `docker run -d`.
// Goal: prepareImage on a cache hit adds ≤ 150 ms. Run after `pnpm build` (needs the local
// ca-sbx-base:* images; a first, uncached build needs npm, and CA_SANDBOX_CA_CERTS behind a TLS proxy):
//   node packages/build/bench/cache-hit.bench.mjs [rounds]
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { pack } from 'tar-stream';
import { prepareImage } from '../dist/index.js';

const rounds = Number(process.argv[2] ?? 7);
const fixture = new URL('../test/fixtures/node-esm/', import.meta.url);
const files = ['package.json', 'package-lock.json', 'index.mjs'];
const labels = (id) => Object.entries(sandboxLabels(id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const created = [];

async function raw(id) {
  const volume = `ca-sbx-${id}`;
  const t0 = performance.now();
  await docker(['volume', 'create', ...labels(id), '--', volume]);
  await docker([
    'run',
    '-d',
    '--name',
    `ca-sbx-${id}-helper`,
    '--user',
    '1000:1000',
    '--cap-drop',
    'ALL',
    '--read-only',
    '--security-opt',
    'no-new-privileges',
    '--network',
    'none',
    '--tmpfs',
    '/tmp',
    ...labels(id),
    '--mount',
    `type=volume,src=${volume},dst=/work/repo`,
    'ca-sbx-base:git',
    'sleep',
    'infinity',
  ]);
  created.push(id);
  return performance.now() - t0;
}

async function fill(id) {
  const tar = pack();
  for (const name of files) tar.entry({ name, uid: 1000, gid: 1000 }, readFileSync(new URL(name, fixture)));
  tar.finalize();
  const chunks = [];
  for await (const chunk of tar) chunks.push(Buffer.from(chunk));
  await docker(['exec', '-i', `ca-sbx-${id}-helper`, 'tar', '-x', '-C', '/work/repo'], {
    input: Buffer.concat(chunks),
  });
}

const prepare = (id) =>
  prepareImage({
    containerId: `ca-sbx-${id}-helper`,
    repoName: 'bench-cache-hit',
    source: '/bench/cache-hit',
    policy: 'clone-then-cut',
    builder: 'builtin',
    baseImages: { node: 'ca-sbx-base:node' },
    ...(process.env.CA_SANDBOX_CA_CERTS ? { caCertificates: process.env.CA_SANDBOX_CA_CERTS } : {}),
  });

try {
  const warm = `sbx-${randomUUID().slice(0, 8)}`;
  await raw(warm);
  await fill(warm);
  const first = await prepare(warm);
  console.log(`warm-up: ${first.image} (cache hit: ${first.cacheHit})`);
  const raws = [];
  const preps = [];
  for (let i = 0; i < rounds; i++) {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    raws.push(await raw(id));
    await fill(id);
    const t0 = performance.now();
    const result = await prepare(id);
    preps.push(performance.now() - t0);
    if (!result.cacheHit) throw new Error('expected a cache hit');
  }
  const r = median(raws);
  const p = median(preps);
  console.log(`cache-hit bench (${rounds} rounds, medians):`);
  console.log(`  raw volume create + docker run: ${r.toFixed(0)} ms`);
  console.log(
    `  prepareImage on a cache hit:    ${p.toFixed(0)} ms (+${((p / r) * 100).toFixed(0)}% of raw; ratio ${((r + p) / r).toFixed(2)})`,
  );
  console.log(`  added: ${p.toFixed(0)} ms (goal <= 150 ms): ${p <= 150 ? 'OK' : 'OVER'}`);
} finally {
  for (const id of created) {
    await docker(['rm', '-f', `ca-sbx-${id}-helper`], { allowFailure: true });
    await docker(['volume', 'rm', '-f', `ca-sbx-${id}`], { allowFailure: true });
  }
}
