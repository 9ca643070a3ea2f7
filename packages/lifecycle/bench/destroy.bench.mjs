// destroySandbox (discovery, removal, label-scoped verification) against raw
// `docker rm -f <box>` + `docker volume rm <volume>`. Goal <= 1.1x (issue 10).
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { sandboxNames } from '@ca-sandbox/docker/contracts';
import { createSandbox, destroySandbox } from '../dist/index.js';
import { ROUNDS, raw, report, smallSource, time } from './_shared.mjs';

const source = smallSource();
const ours = [];
const base = [];
const made = [];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const a = `bench-${randomUUID().slice(0, 8)}`;
    const b = `bench-${randomUUID().slice(0, 8)}`;
    made.push(a, b);
    await createSandbox({ source, name: a });
    await createSandbox({ source, name: b });
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
    if (round % 2 === 0) {
      await measureOurs();
      await measureRaw();
    } else {
      await measureRaw();
      await measureOurs();
    }
  }
  report('destroy', ours, base, 1.1);
} finally {
  for (const id of made) await destroySandbox(id).catch(() => {});
  rmSync(source, { recursive: true, force: true });
}
