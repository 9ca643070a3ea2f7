// Shared bits of the lifecycle benches: a tiny local source, raw docker through node's own
// child_process (the baseline), medians.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// No registry here: the plain provider's base is the local stand-in (as vitest.config.ts does).
process.env.CA_SANDBOX_BASE_IMAGE_PLAIN ??= 'ca-sbx-base:debian';

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);

/** Raw `docker <args>` (no wrapper of ours), resolves with stdout. */
export async function raw(...args) {
  const { stdout } = await run('docker', args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function time(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export function smallSource() {
  const dir = mkdtempSync(join(tmpdir(), 'ca-lc-bench-'));
  writeFileSync(join(dir, 'README.md'), '# bench\n');
  return dir;
}

export function report(label, ours, base, goal) {
  const ratio = median(ours) / median(base);
  console.log(
    `${label}: ours median ${median(ours).toFixed(0)} ms, raw median ${median(base).toFixed(0)} ms`,
  );
  console.log(`ratio ${ratio.toFixed(2)}x (goal <= ${goal.toFixed(2)}x) ${ratio <= goal ? 'ok' : 'OVER'}`);
}
