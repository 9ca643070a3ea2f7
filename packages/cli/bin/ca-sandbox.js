#!/usr/bin/env node
// Kept tiny on purpose: `--version` answers without loading commander or anything else.
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.version}\n`);
} else {
  // V8 code cache on disk (Node >= 22.1): the bundle is parsed once, not on every run.
  const { enableCompileCache } = await import('node:module');
  enableCompileCache?.();
  const { main } = await import('../dist/bundle/main.js');
  process.exitCode = await main(args);
}
