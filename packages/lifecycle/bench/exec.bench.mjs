// execInSandbox against raw `docker exec -u 1000:1000 -w /work/repo <box> <cmd>`. Goal <= 1.2x.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createSandbox, destroySandbox, execInSandbox } from '../dist/index.js';
import { ROUNDS, raw, report, smallSource, time } from './_shared.mjs';

const source = smallSource();
const id = `bench-${randomUUID().slice(0, 8)}`;
const box = `ca-sbx-${id}`;
await createSandbox({ source, name: id });
try {
  const command = ['sh', '-c', 'echo hello; echo err >&2'];
  const ours = [];
  const timed = [];
  const base = [];
  await execInSandbox(id, command); // warm-up
  await raw('exec', '-u', '1000:1000', '-w', '/work/repo', box, ...command);
  for (let round = 0; round < ROUNDS * 2; round += 1) {
    ours.push(await time(() => execInSandbox(id, command)));
    base.push(await time(() => raw('exec', '-u', '1000:1000', '-w', '/work/repo', box, ...command)));
    timed.push(await time(() => execInSandbox(id, command, { timeoutMs: 60_000 })));
  }
  report('exec', ours, base, 1.2);
  report('exec with timeoutMs', timed, base, 1.2);
} finally {
  await destroySandbox(id);
  rmSync(source, { recursive: true, force: true });
}
