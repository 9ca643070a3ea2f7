// destroySandbox (discovery, removal, label-scoped verification) against raw
// `docker rm -f <box>` + `docker volume rm <volume>`, and `ca-sandbox destroy` through the bin
// (what a user waits for: node's start included). Goal <= 1.1x (issue 10, issue 30).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { sandboxNames } from '@ca-sandbox/docker/contracts';
import { createSandbox, destroySandbox } from '../dist/index.js';
import { ROUNDS, raw, report, smallSource, time } from './_shared.mjs';

const bin = new URL('../../cli/bin/ca-sandbox.js', import.meta.url).pathname;
const node = promisify(execFile);

const source = smallSource();
const ours = [];
const base = [];
const viaBin = [];
const made = [];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const a = `bench-${randomUUID().slice(0, 8)}`;
    const b = `bench-${randomUUID().slice(0, 8)}`;
    const c = `bench-${randomUUID().slice(0, 8)}`;
    made.push(a, b, c);
    await createSandbox({ source, name: a });
    await createSandbox({ source, name: b });
    await createSandbox({ source, name: c });
    // Let the engine settle after the creates, and alternate who goes first.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const measureOurs = async () =>
      ours.push(
        await time(async () => {
          const result = await destroySandbox(a);
          if (result.leftovers.length || result.failures.length) throw new Error(JSON.stringify(result));
        }),
      );
    const measureRaw = async () =>
      base.push(
        await time(async () => {
          await raw('rm', '-f', sandboxNames(b).box);
          await raw('volume', 'rm', sandboxNames(b).volume);
        }),
      );
    const measureBin = async () =>
      viaBin.push(await time(() => node(process.execPath, [bin, 'destroy', c, '--json'])));
    const order = [measureOurs, measureRaw, measureBin];
    for (let turn = 0; turn < order.length; turn += 1) await order[(round + turn) % order.length]();
  }
  report('destroy', ours, base, 1.1);
  report('ca-sandbox destroy (bin)', viaBin, base, 1.1);
} finally {
  for (const id of made) await destroySandbox(id).catch(() => {});
  rmSync(source, { recursive: true, force: true });
}
