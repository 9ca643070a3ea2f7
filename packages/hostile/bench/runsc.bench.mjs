// The cost of gVisor: create and exec under --runtime runsc against runc, through the CLI's
// library (in process), medians, printed as ratios. Skipped where runsc is not registered.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dockerInfo } from '@ca-sandbox/docker';
import { createSandbox, destroySandbox, execInSandbox } from '@ca-sandbox/lifecycle';

process.env.CA_SANDBOX_BASE_IMAGE_PLAIN ??= 'ca-sbx-base:debian';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EXECS = 9;
const run = promisify(execFile);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (!(await dockerInfo()).runtimes.includes('runsc')) {
  console.log('runsc is not registered with this engine: skipped');
  process.exit(0);
}
const source = mkdtempSync(join(tmpdir(), 'ca-runsc-bench-'));
writeFileSync(join(source, 'README.md'), '# bench\n');
const made = [];
const times = { runc: { create: [], exec: [], raw: [] }, runsc: { create: [], exec: [], raw: [] } };
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const runtime of round % 2 ? ['runsc', 'runc'] : ['runc', 'runsc']) {
      const name = `bench-${runtime}-${randomUUID().slice(0, 6)}`;
      made.push(name);
      let start = performance.now();
      const record = await createSandbox({ source, name, runtime });
      times[runtime].create.push(performance.now() - start);
      for (let index = 0; index < EXECS; index += 1) {
        start = performance.now();
        await execInSandbox(record.id, ['true']);
        times[runtime].exec.push(performance.now() - start);
        start = performance.now();
        await run('docker', ['exec', record.container, 'true']);
        times[runtime].raw.push(performance.now() - start);
      }
      await destroySandbox(record.id);
      made.pop();
    }
  }
} finally {
  for (const name of made) await destroySandbox(name).catch(() => {});
  rmSync(source, { recursive: true, force: true });
}
for (const key of ['create', 'exec', 'raw']) {
  const runc = median(times.runc[key]);
  const runsc = median(times.runsc[key]);
  const label = key === 'raw' ? 'raw docker exec' : key;
  console.log(
    `${label.padEnd(16)} runc ${runc.toFixed(0).padStart(5)} ms  runsc ${runsc.toFixed(0).padStart(5)} ms  ratio ${(runsc / runc).toFixed(2)}x`,
  );
}
