#!/usr/bin/env node
// Bundles dist/main.js (tsc output) into dist/bundle/: one file per lazily imported part, so a
// command loads only its own chunks, and a few large files instead of hundreds of small modules
// (zod, execa, the MCP SDK), which is most of the start-up cost of an ESM CLI.
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
rmSync(`${root}dist/bundle`, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: ['dist/main.js'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  minify: true,
  sourcemap: 'linked',
  metafile: true,
  legalComments: 'linked',
  // Some dependencies are CommonJS and require node builtins.
  banner: {
    js: "import { createRequire as __caSbxRequire } from 'node:module'; const require = __caSbxRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
// Which source files ended up in which chunk (the start-up test reads it).
writeFileSync(`${root}dist/bundle/meta.json`, JSON.stringify(result.metafile));

// The bin's `exec` fast path: one CommonJS file, so a plain exec skips the ESM loader as well as
// commander. What only failure paths need (the docker barrel with its schemas, execa) stays
// outside and is loaded on first use.
const lazyOutside = {
  name: 'lazy-outside',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^(@ca-sandbox\/docker|zod)$/ }, (args) => ({
      path: args.path,
      external: true,
    }));
  },
};
await build({
  absWorkingDir: root,
  entryPoints: ['dist/fast-exec.js'],
  outfile: 'dist/bundle/fast-exec.cjs',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  minify: true,
  sourcemap: 'linked',
  plugins: [lazyOutside],
  logLevel: 'warning',
});
