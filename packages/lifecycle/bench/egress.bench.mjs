// The cost of the egress gateway on a cold install: prepareImage of a one-dependency npm repo whose
// install goes through a fresh gateway (started, used, removed: what create does) against the same
// install straight on Docker's default bridge (no gateway: what create did before it), A B A B ...
// Every round changes the manifest, so both are cache misses. Goal: ≤ 1.1x. Run after `pnpm build`:
//   node packages/lifecycle/bench/egress.bench.mjs [rounds]
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { prepareImage, removeImage } from '@ca-sandbox/build';
import { docker, sandboxLabels } from '@ca-sandbox/docker';
import { installEgressRules } from '@ca-sandbox/network';
import { startGateway, stopGateway } from '@ca-sandbox/run';
import { pack } from 'tar-stream';
import { median } from './_shared.mjs';

const rounds = Number(process.argv[2] ?? 5);
const labels = (id) => Object.entries(sandboxLabels(id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
const created = [];
const images = [];

async function helper(id) {
  await docker(['volume', 'create', ...labels(id), '--', `ca-sbx-${id}`]);
  created.push(id);
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
    `type=volume,src=ca-sbx-${id},dst=/work/repo`,
    'ca-sbx-base:git',
    'sleep',
    'infinity',
  ]);
  const manifest = {
    name: 'bench-egress',
    version: '1.0.0',
    private: true,
    description: `round ${id}`,
    dependencies: { 'is-number': '7.0.0' },
  };
  const tar = pack();
  tar.entry({ name: 'package.json', uid: 1000, gid: 1000 }, JSON.stringify(manifest));
  tar.finalize();
  const chunks = [];
  for await (const chunk of tar) chunks.push(Buffer.from(chunk));
  await docker(['exec', '-i', `ca-sbx-${id}-helper`, 'tar', '-x', '-C', '/work/repo'], {
    input: Buffer.concat(chunks),
  });
}

async function install(id, throughGateway) {
  const start = performance.now();
  try {
    const prepared = await prepareImage({
      containerId: `ca-sbx-${id}-helper`,
      repoName: 'bench-egress',
      source: `/bench/egress/${id}`,
      policy: 'clone-then-cut',
      builder: 'builtin',
      baseImages: { node: process.env.CA_SANDBOX_BASE_IMAGE_NODE ?? 'ca-sbx-base:node' },
      ...(process.env.CA_SANDBOX_CA_CERTS ? { caCertificates: process.env.CA_SANDBOX_CA_CERTS } : {}),
      ...(throughGateway
        ? {
            egress: async (provider) => {
              const gateway = await startGateway({ sandboxId: id, rules: installEgressRules(provider) });
              return { network: gateway.network, proxyUrl: gateway.proxyUrl };
            },
          }
        : {}),
    });
    images.push(prepared.image);
    if (prepared.cacheHit) throw new Error('expected a cache miss');
  } finally {
    if (throughGateway) await stopGateway(id);
  }
  return performance.now() - start;
}

try {
  const viaGateway = [];
  const direct = [];
  for (let i = 0; i < rounds; i++) {
    for (const throughGateway of i % 2 === 0 ? [true, false] : [false, true]) {
      const id = `sbx-${randomUUID().slice(0, 8)}`;
      await helper(id);
      (throughGateway ? viaGateway : direct).push(await install(id, throughGateway));
    }
  }
  const g = median(viaGateway);
  const d = median(direct);
  console.log(
    `cold install through the egress gateway vs straight on the bridge (${rounds} rounds, medians):`,
  );
  console.log(`  through the gateway (start, install, remove): ${g.toFixed(0)} ms`);
  console.log(`  straight on the default bridge:               ${d.toFixed(0)} ms`);
  console.log(`  ratio ${(g / d).toFixed(2)}x (goal <= 1.10x) ${g / d <= 1.1 ? 'ok' : 'OVER'}`);
} finally {
  for (const id of created) {
    await docker(['rm', '-f', `ca-sbx-${id}-helper`], { allowFailure: true });
    await docker(['volume', 'rm', '-f', `ca-sbx-${id}`], { allowFailure: true });
    await stopGateway(id).catch(() => undefined);
  }
  for (const image of images) await removeImage(image).catch(() => undefined);
}
