// Dephash over a generated tree: 50,000 files of which 2,000 are manifests (goal: under 1 s).
// Times a host-side walk of the tree (pruning .git/node_modules/vendor), reading the manifests
// and computeDepHash. Run after `pnpm build`: node packages/build/bench/dephash.bench.mjs [--docker]
// --docker also times the real path: readManifests (find | tar in a helper container over a
// volume holding the same tree) + computeDepHash.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { computeDepHash, isManifestName, readManifests } from '../dist/index.js';

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

async function inContainer(root) {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const labels = Object.entries(sandboxLabels(id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
  const container = `ca-sbx-${id}-helper`;
  try {
    await docker(['volume', 'create', ...labels, '--', `ca-sbx-${id}`]);
    await docker([
      'run',
      '-d',
      '--name',
      container,
      '--user',
      '1000:1000',
      '--cap-drop',
      'ALL',
      '--read-only',
      '--network',
      'none',
      '--tmpfs',
      '/tmp',
      ...labels,
      '--mount',
      `type=volume,src=ca-sbx-${id},dst=/work/repo`,
      'ca-sbx-base:git',
      'sleep',
      'infinity',
    ]);
    await new Promise((resolve, reject) => {
      const tar = spawn('tar', ['-c', '--owner=1000', '--group=1000', '-C', root, '.'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const sink = spawn('docker', ['exec', '-i', container, 'tar', '-x', '-C', '/work/repo'], {
        stdio: ['pipe', 'ignore', 'inherit'],
      });
      tar.stdout.pipe(sink.stdin);
      sink.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`copy failed: ${code}`))));
    });
    const times = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const files = await readManifests(container);
      computeDepHash(files, { builder: 'builtin', builderVersion: '1', baseImageId: 'sha256:bench' });
      times.push(performance.now() - t0);
      if (files.length !== MANIFESTS)
        throw new Error(`expected ${MANIFESTS} manifests, read ${files.length}`);
    }
    const f0 = performance.now();
    await docker([
      'exec',
      container,
      'sh',
      '-c',
      'cd /work/repo && find . \\( -name .git -o -name node_modules -o -name vendor \\) -prune -o -type f -name package.json -print0 | wc -c',
    ]);
    const findOnly = performance.now() - f0;
    const best = Math.min(...times);
    console.log(`  (docker exec + find over the tree alone: ${findOnly.toFixed(0)} ms)`);
    console.log(
      `  in a helper container: readManifests + hash ${times.map((t) => t.toFixed(0)).join(' / ')} ms (best ${best.toFixed(0)}; goal < 1000 ms): ${best < 1000 ? 'OK' : 'OVER'}`,
    );
  } finally {
    await docker(['rm', '-f', container], { allowFailure: true });
    await docker(['volume', 'rm', '-f', `ca-sbx-${id}`], { allowFailure: true });
  }
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
  if (process.argv.includes('--docker')) await inContainer(root);
} finally {
  await rm(root, { recursive: true, force: true });
}
