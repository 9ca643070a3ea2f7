#!/usr/bin/env node
// CommonJS and tiny on purpose: `--version` answers before the ESM loader or any dependency
// starts, and a plain `exec` or `destroy` skips commander (all measured against node and raw docker).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${require('../package.json').version}\n`);
} else {
  // V8 code cache on disk (Node >= 22.1): the bundle is parsed once, not on every run.
  require('node:module').enableCompileCache?.();
  // --verbose prints stacks: with the bundle's maps they name our source files, not minified
  // chunks. Only then: reading the maps costs every module load.
  if (args.includes('--verbose')) process.setSourceMapsEnabled?.(true);
  // `ca-sandbox ... | head` closes our stdout early: that is the reader's choice, not an error.
  process.stdout.on('error', (error) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  (async () => {
    if (args[0] === 'exec') {
      const code = await require('../dist/bundle/fast-exec.cjs').fastExec(args);
      if (code !== undefined) {
        process.exitCode = code;
        return;
      }
    }
    if (args[0] === 'destroy' || args[0] === 'rm') {
      const code = await require('../dist/bundle/fast-destroy.cjs').fastDestroy(args);
      if (code !== undefined) {
        process.exitCode = code;
        return;
      }
    }
    const { main } = await import('../dist/bundle/main.js');
    process.exitCode = await main(args);
  })();
}
