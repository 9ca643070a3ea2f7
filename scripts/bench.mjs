// Runs every packages/*/bench/*.bench.mjs in turn (or those whose path contains argv[2]).
// Benchmarks print medians and ratios against the raw docker commands; they never fail a build.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv[2];
const files = readdirSync(join(root, 'packages'))
  .flatMap((pkg) => {
    const dir = join(root, 'packages', pkg, 'bench');
    return existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.bench.mjs'))
          .map((f) => join(dir, f))
      : [];
  })
  .filter((file) => !only || file.includes(only));
let failed = 0;
for (const file of files) {
  console.log(`\n## ${file.slice(root.length)}`);
  const result = spawnSync(process.execPath, [file], {
    stdio: 'inherit',
    env: { ...process.env, TESTCONTAINERS_RYUK_DISABLED: 'true' },
  });
  if (result.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);
