// The cost of the egress gateway on a cold install: the helper with a one-dependency npm repo, then
// prepareImage, its install
//   serial:  through a fresh gateway started when the install asks for it and removed after it
//            (the whole cost of a gateway on the path),
//   overlap: through a gateway started while the repo is copied into the helper and pointed at the
//            registries when the install asks (what create does for a local source; create removes
//            it while the box starts, so its removal is not timed here),
//   direct:  straight on Docker's default bridge (no gateway: what create did before it),
// in rotating order. Every round changes the manifest, so all are cache misses. Goal: <= 1.1x.
// Run after `pnpm build`:  node packages/lifecycle/bench/egress.bench.mjs [rounds]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { prepareImage, removeImage } from '@ca-sandbox/build';
import { DEFAULT_HELPER_IMAGE } from '@ca-sandbox/config';
import { sandboxLabels } from '@ca-sandbox/docker';
import { sandboxNames } from '@ca-sandbox/docker/contracts';
import { installEgressRules } from '@ca-sandbox/network';
import { reconfigureGateway, startGateway, stopGateway } from '@ca-sandbox/run';
import { sendLocalTree } from '../dist/clone.js';
import { cleanupCreate } from '../dist/create/cleanup.js';
import { createOwnVolume, startHelper } from '../dist/create/workspace.js';
import { DEFAULT_PACK_LIMITS, scanDirectory } from '../dist/pack-local.js';
import { LABEL_INSTANCE } from '../dist/record.js';
import { median } from './_shared.mjs';

const rounds = Number(process.argv[2] ?? 5);
// A TLS-intercepting upstream (as the test runs have): the install trusts the host's bundle.
const caCertificates = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
/** Each round's sandbox id and its per-call instance label (what create's cleanup removes by). */
const created = [];
const images = [];

/** What create does before an install: the volume, the hardened helper, the repo copied in. */
async function helper(id) {
  const instance = randomUUID().replaceAll('-', '');
  const labels = sandboxLabels(id, { [LABEL_INSTANCE]: instance });
  created.push({ id, instance });
  await createOwnVolume(id, labels);
  const stopHeartbeat = await startHelper({ id, image: DEFAULT_HELPER_IMAGE, labels, network: 'none' });
  const manifest = {
    name: 'bench-egress',
    version: '1.0.0',
    private: true,
    description: `round ${id}`,
    dependencies: { 'is-number': '7.0.0' },
  };
  const dir = mkdtempSync(join(tmpdir(), 'ca-bench-egress-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest));
    await sendLocalTree(sandboxNames(id).helper, await scanDirectory(dir, DEFAULT_PACK_LIMITS));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return stopHeartbeat;
}

async function install(id, mode) {
  const start = performance.now();
  // create's prestart: the gateway comes up, allowing nothing, while the repo is copied.
  const prestarted = mode === 'overlap' ? startGateway({ sandboxId: id, rules: [] }) : undefined;
  prestarted?.catch(() => undefined);
  let stopHeartbeat = () => {};
  try {
    stopHeartbeat = await helper(id);
    const prepared = await prepareImage({
      containerId: sandboxNames(id).helper,
      repoName: 'bench-egress',
      source: `/bench/egress/${id}`,
      policy: 'clone-then-cut',
      builder: 'builtin',
      baseImages: { node: process.env.CA_SANDBOX_BASE_IMAGE_NODE ?? 'ca-sbx-base:node' },
      ...(caCertificates ? { caCertificates } : {}),
      ...(mode === 'direct'
        ? {}
        : {
            egress: async (provider) => {
              const rules = installEgressRules(provider);
              let gateway;
              if (prestarted) {
                gateway = await prestarted;
                await reconfigureGateway(gateway, rules);
              } else gateway = await startGateway({ sandboxId: id, rules });
              return { network: gateway.network, proxyUrl: gateway.proxyUrl };
            },
          }),
    });
    images.push(prepared.image);
    if (prepared.cacheHit) throw new Error('expected a cache miss');
    if (mode === 'serial') await stopGateway(id);
    return performance.now() - start;
  } finally {
    stopHeartbeat();
    if (mode !== 'direct') await stopGateway(id);
  }
}

const MODES = ['serial', 'overlap', 'direct'];

try {
  const times = { serial: [], overlap: [], direct: [] };
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < MODES.length; k++) {
      const mode = MODES[(i + k) % MODES.length];
      const id = `sbx-${randomUUID().slice(0, 8)}`;
      times[mode].push(await install(id, mode));
    }
  }
  const [serial, overlap, direct] = MODES.map((mode) => median(times[mode]));
  const ratio = (x) => `${(x / direct).toFixed(2)}x ${x / direct <= 1.1 ? 'ok' : 'OVER'}`;
  console.log(
    `cold install through the egress gateway vs straight on the bridge (${rounds} rounds, medians):`,
  );
  console.log(`  gateway started, used, removed on the path: ${serial.toFixed(0)} ms  ${ratio(serial)}`);
  console.log(`  gateway overlapped as create does:          ${overlap.toFixed(0)} ms  ${ratio(overlap)}`);
  console.log(`  straight on the default bridge:             ${direct.toFixed(0)} ms`);
  console.log('  (goal <= 1.10x)');
} finally {
  for (const { id, instance } of created) {
    await cleanupCreate(id, instance, false).catch(() => undefined);
    await stopGateway(id).catch(() => undefined);
  }
  for (const image of images) await removeImage(image).catch(() => undefined);
}
