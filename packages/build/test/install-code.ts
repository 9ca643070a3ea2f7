/** The marker the repo's install code prints first: proof that it ran (and not something else). */
export const INSTALL_CODE_MARKER = 'ca-sbx-install-code-ran';

/**
 * A repo whose install runs `script` (sh) as the repo's own code. Its lifecycle scripts are
 * skipped since the install sees only the manifests, but pnpm loads the repo's `.pnpmfile.cjs`
 * while it installs: that is repo code the install step runs, under the build's limits.
 */
export function installCodeRepo(script: string, options: { js?: string } = {}): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name: 'install-code', version: '1.0.0', packageManager: 'pnpm@9.15.9' }),
    '.pnpmfile.cjs': [
      `console.log(${JSON.stringify(INSTALL_CODE_MARKER)});`,
      `require('node:child_process').execSync(${JSON.stringify(script)}, { stdio: 'inherit' });`,
      // Code that runs in pnpm's own process (a bomb here takes pnpm itself down).
      options.js ?? '',
      'module.exports = {};',
      '',
    ].join('\n'),
  };
}
