// prune of 30 sandboxes (box container + volume each) against removing them one by one with raw
// docker (`docker rm -f` then `docker volume rm`, per sandbox). Goal: faster (< 1.0x).
// The prune is narrowed to this bench's own label so that other sandboxes on the engine survive.
import { randomUUID } from 'node:crypto';
import { pruneWhere } from '../dist/teardown.js';
import { raw, report, time } from './_shared.mjs';

const COUNT = Number(process.env.BENCH_SANDBOXES ?? 30);
const ROUNDS = Number(process.env.BENCH_PRUNE_ROUNDS ?? 2);

/** COUNT sandbox-like objects (labeled box + volume), made with raw docker: setup, not measured. */
async function makeSandboxes(tag) {
  const ids = [];
  for (let index = 0; index < COUNT; index += 1) {
    const id = `bench-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const labels = [
      '--label',
      'ca.sandbox=1',
      '--label',
      `ca.sandbox.id=${id}`,
      '--label',
      `ca.sandbox.bench=${tag}`,
    ];
    await raw('volume', 'create', ...labels, `ca-sbx-${id}`);
    await raw(
      'run',
      '-d',
      '--name',
      `ca-sbx-${id}`,
      ...labels,
      '--user',
      '1000:1000',
      '--cap-drop',
      'ALL',
      '--network',
      'none',
      '--read-only',
      '--mount',
      `type=volume,source=ca-sbx-${id},target=/work/repo`,
      'ca-sbx-base:debian',
      'sleep',
      'infinity',
    );
  }
  return ids;
}

const ours = [];
const base = [];
const tags = [];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const tag = randomUUID().slice(0, 8);
    tags.push(tag);
    const ids = await makeSandboxes(tag);
    ours.push(
      await time(async () => {
        const result = await pruneWhere([`label=ca.sandbox.bench=${tag}`], {}, ids);
        if (result.leftovers.length || result.failures.length) throw new Error(JSON.stringify(result));
      }),
    );
    const other = await makeSandboxes(`${tag}-raw`);
    tags.push(`${tag}-raw`);
    base.push(
      await time(async () => {
        for (const id of other) {
          await raw('rm', '-f', `ca-sbx-${id}`);
          await raw('volume', 'rm', `ca-sbx-${id}`);
        }
      }),
    );
  }
  report(`prune of ${COUNT} sandboxes`, ours, base, 1.0);
} finally {
  for (const tag of tags) await pruneWhere([`label=ca.sandbox.bench=${tag}`], {}, []).catch(() => {});
}
