import { docker, internalExecArgs, SH_BIN } from '@ca-sandbox/docker';
import { ManifestReadError } from './errors.js';

export interface LinkResult {
  linked: boolean;
  /** Why nothing was linked: not needed, or the repo has its own node_modules. */
  reason?: string;
}

const SCRIPT = [
  'cd -- "$1" || exit 97',
  // Anything named node_modules (dir, file, symlink) is the repo's: never replaced.
  'if [ -e node_modules ] || [ -L node_modules ]; then echo exists; exit 0; fi',
  'ln -s /deps/node_modules node_modules && echo linked',
].join('\n');

/**
 * ESM ignores NODE_PATH: for `import 'dep'` from /work/repo, the helper container (volume at
 * `root`) gets a `node_modules` symlink to /deps/node_modules — a dangling link in the helper,
 * resolved in the box, whose image has the deps. Never over the repo's own node_modules.
 */
export async function linkDependencies(
  containerId: string,
  prepared: { linkNodeModules: boolean },
  options: { root?: string } = {},
): Promise<LinkResult> {
  if (!prepared.linkNodeModules) return { linked: false, reason: 'not needed' };
  const root = options.root ?? '/work/repo';
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/.test(containerId) || !/^\/[A-Za-z0-9._/-]*$/.test(root)) {
    throw new ManifestReadError('invalid container reference or root for linkDependencies');
  }
  const { stdout } = await docker(
    internalExecArgs(containerId, [SH_BIN, '-c', SCRIPT, 'sh', root], { user: '1000:1000' }),
    { timeoutMs: 60_000 },
  );
  return stdout.trim() === 'linked'
    ? { linked: true }
    : { linked: false, reason: 'the repo has its own node_modules' };
}
