/**
 * Install fallbacks: what the install step did besides the recipe's command, because the repo's
 * files needed what its developers do by hand. Each is taken once, only on its own failure, said
 * by a marker line in the build's output, kept as a label of the deps image (so a cache hit says
 * it too), and shown by create, in the record and in the MCP notes.
 */

/** The fallbacks there are; a marker naming anything else is ignored. */
export const INSTALL_FALLBACKS = ['npm-legacy-peer-deps'] as const;
export type InstallFallback = (typeof INSTALL_FALLBACKS)[number];

/** Label of a deps image: the fallbacks its install took, comma-joined (absent: none). */
export const LABEL_INSTALL_FALLBACKS = 'ca.sandbox.cache.install-fallbacks';

/** Printed on a line of its own by the install step before it takes fallback `<name>`. */
export const INSTALL_FALLBACK_MARKER = 'ca-sandbox-install-fallback: ';

const DESCRIPTIONS: Record<InstallFallback, string> = {
  'npm-legacy-peer-deps':
    'npm refused the dependency tree (ERESOLVE: peer dependency conflicts that this npm enforces and the npm that wrote the lockfile did not): installed again with --legacy-peer-deps, as the repo’s developers do',
};

export function describeInstallFallback(fallback: InstallFallback): string {
  return DESCRIPTIONS[fallback];
}

const FAILED = '/tmp/.ca-sbx-npm-failed';
const LOG = '/tmp/.ca-sbx-npm-output';

/**
 * Shell lines (inside the install step's `set -eu` subshell) that run an npm install command and,
 * if it fails with ERESOLVE, run it once more with `--legacy-peer-deps`. The output streams as it
 * comes (tee) and is searched afterwards; any other failure keeps its exit code.
 */
export function npmInstallWithPeerFallback(command: string): string[] {
  return [
    `rm -f ${FAILED} ${LOG}`,
    `{ ${command} 2>&1 || echo "$?" > ${FAILED}; } | tee ${LOG}`,
    `if [ -e ${FAILED} ]; then`,
    `  npm_status="$(cat ${FAILED})"; rm -f ${FAILED}`,
    `  if grep -q 'code ERESOLVE' ${LOG}; then`,
    `    rm -f ${LOG}; echo '${INSTALL_FALLBACK_MARKER}npm-legacy-peer-deps'`,
    `    ${command} --legacy-peer-deps`,
    `  else rm -f ${LOG}; exit "$npm_status"; fi`,
    'fi',
    `rm -f ${LOG}`,
  ];
}

/**
 * The fallbacks the build's output says were taken, known names only, once each. The repo's own
 * install code can print a marker line too: the worst it gains is a note that is not true.
 */
export function installFallbacksFromOutput(lines: readonly string[]): InstallFallback[] {
  const found = new Set<InstallFallback>();
  for (const line of lines) {
    if (!line.startsWith(INSTALL_FALLBACK_MARKER)) continue;
    const name = line.slice(INSTALL_FALLBACK_MARKER.length).trim();
    if ((INSTALL_FALLBACKS as readonly string[]).includes(name)) found.add(name as InstallFallback);
  }
  return INSTALL_FALLBACKS.filter((name) => found.has(name));
}

/** The fallbacks of a label value (unknown names dropped). */
export function parseInstallFallbacks(label: string | undefined): InstallFallback[] {
  const names = new Set((label ?? '').split(','));
  return INSTALL_FALLBACKS.filter((name) => names.has(name));
}
