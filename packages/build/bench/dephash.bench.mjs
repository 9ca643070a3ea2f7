// Dephash over a generated tree: 50,000 files of which 2,000 are manifests (goal: under 1 s).
// Times a host-side walk of the tree (pruning .git/node_modules/vendor), reading the manifests
// and computeDepHash. Run after `pnpm build`: node packages/build/bench/dephash.bench.mjs
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { computeDepHash, isManifestName } from '../dist/index.js';

const TOTAL = 50_000;
const MANIFESTS = 2_000;
const PRUNED = new Set(['.git', 'node_modules', 'vendor']);
const names = [
  'package.json',
  'package-lock.json',
  'go.mod',
  'go.sum',
  'requirements.txt',
  'Cargo.toml',
  'pyproject.toml',
  'yarn.lock',
];

async function generate(root) {
  // 500 packages × 4 manifests; the rest source files spread over nested dirs.
  const packages = MANIFESTS / 4;
  let written = 0;
  for (let p = 0; p < packages; p++) {
    const dir = join(root, `group${p % 25}`, `pkg${p}`);
    await mkdir(join(dir, 'src', 'lib'), { recursive: true });
    for (let m = 0; m < 4; m++) {
      await writeFile(
        join(dir, names[(p + m) % names.length]),
        `{"name":"pkg${p}","v":${m},"deps":{"a":"1.0.${p}"}}\n`.repeat(8),
      );
      written++;
    }
  }
  for (let i = 0; written < TOTAL; i++, written++) {
    const p = i % packages;
    await writeFile(
      join(root, `group${p % 25}`, `pkg${p}`, i % 2 ? 'src' : join('src', 'lib'), `file${i}.js`),
      `export const x${i} = ${i};\n`,
    );
  }
  await mkdir(join(root, 'node_modules', 'dep'), { recursive: true });
  await writeFile(join(root, 'node_modules', 'dep', 'package.json'), '{}');
}

async function walk(root) {
  const found = [];
  const stack = [''];
  while (stack.length) {
    const rel = stack.pop();
    for (const entry of await readdir(join(root, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!PRUNED.has(entry.name)) stack.push(path);
      } else if (entry.isFile() && isManifestName(entry.name)) found.push(path);
    }
  }
  return found;
}

const root = await mkdtemp(join(tmpdir(), 'ca-sbx-dephash-bench-'));
try {
  await generate(root);
  const t0 = performance.now();
  const paths = await walk(root);
  const t1 = performance.now();
  const files = await Promise.all(
    paths.map(async (path) => ({ path, content: await readFile(join(root, path)) })),
  );
  const t2 = performance.now();
  const hash = computeDepHash(files, {
    builder: 'builtin',
    builderVersion: '1',
    baseImageId: 'sha256:bench',
  });
  const t3 = performance.now();
  const total = t3 - t0;
  console.log(`dephash bench: ${TOTAL} files, ${files.length} manifests -> ${hash}`);
  console.log(
    `  walk ${(t1 - t0).toFixed(1)} ms, read ${(t2 - t1).toFixed(1)} ms, hash ${(t3 - t2).toFixed(1)} ms`,
  );
  console.log(`  total ${total.toFixed(1)} ms (goal < 1000 ms): ${total < 1000 ? 'OK' : 'OVER'}`);
} finally {
  await rm(root, { recursive: true, force: true });
}
