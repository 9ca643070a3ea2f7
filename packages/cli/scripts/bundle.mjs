#!/usr/bin/env node
// Bundles dist/main.js (tsc output) into dist/bundle/: one file per lazily imported part, so a
// command loads only its own chunks, and a few large files instead of hundreds of small modules
// (zod, execa, the MCP SDK), which is most of the start-up cost of an ESM CLI.
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
rmSync(`${root}dist/bundle`, { recursive: true, force: true });

// zod's barrel exports `locales` (every language's error messages) on the `z` namespace, which a
// named `import { z }` keeps whole: 264 KB of the zod chunk that every command with a schema
// parsed at start-up. The CLI speaks English (zod configures `en` itself, from locales/en.js),
// and nothing in the bundle reads z.locales, so the barrel of languages is cut to English.
const englishOnlyZod = {
  name: 'english-only-zod',
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({
      contents: 'export { default as en } from "./en.js";',
      loader: 'js',
    }));
  },
};

const result = await build({
  absWorkingDir: root,
  // main.js for the bin, index.js for `import 'ca-sandbox'`: the published package carries no
  // runtime dependency, everything it loads is in dist/bundle.
  entryPoints: ['dist/main.js', 'dist/index.js'],
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
  plugins: [englishOnlyZod],
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
// outside, in its own bundled file, loaded on first use (require of an ES module: Node >= 22.12).
// The destroy fast path's firewall step (only a sandbox with an allowlist has rules) loads
// @ca-sandbox/network the same way.
const DOCKER_BARREL = 'fast-exec-docker.mjs';
const NETWORK_BARREL = 'fast-network.mjs';
const lazyOutside = {
  name: 'lazy-outside',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^@ca-sandbox\/docker$/ }, () => ({
      path: `./${DOCKER_BARREL}`,
      external: true,
    }));
    pluginBuild.onResolve({ filter: /^@ca-sandbox\/network$/ }, () => ({
      path: `./${NETWORK_BARREL}`,
      external: true,
    }));
    pluginBuild.onResolve({ filter: /^zod$/ }, () => {
      throw new Error('the exec and destroy fast paths must not load zod');
    });
  },
};
for (const [barrel, name] of [
  [DOCKER_BARREL, '@ca-sandbox/docker'],
  [NETWORK_BARREL, '@ca-sandbox/network'],
])
  await build({
    absWorkingDir: root,
    stdin: {
      contents: `export * from '${name}';`,
      resolveDir: root,
      sourcefile: 'barrel.js',
    },
    outfile: `dist/bundle/${barrel}`,
    plugins: [englishOnlyZod],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'linked',
    banner: {
      js: "import { createRequire as __caSbxRequire } from 'node:module'; const require = __caSbxRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
for (const entry of ['fast-exec', 'fast-destroy'])
  await build({
    absWorkingDir: root,
    entryPoints: [`dist/${entry}.js`],
    outfile: `dist/bundle/${entry}.cjs`,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node22',
    minify: true,
    sourcemap: 'linked',
    plugins: [lazyOutside],
    logLevel: 'warning',
  });
