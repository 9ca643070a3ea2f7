import type { ManifestFile } from '../../manifests.js';
import type { Detection } from '../../provider.js';
// Light on purpose: prepare.ts (every create's cache-hit path) loads it, never the recipe.

/**
 * Said by every create of a bun repo whose deps the built-in recipe installed: bun does not run in
 * the build (nor in the box), so npm resolved package.json's ranges and bun's lockfile was not
 * read: versions can differ from the ones the repo's developers get. Undefined for any other repo.
 */
export function bunSubstitution(files: readonly ManifestFile[], detection: Detection): string | undefined {
  if (detection.packageManager !== 'bun') return undefined;
  const lock = ['bun.lock', 'bun.lockb'].find((name) => files.some((file) => file.path === name));
  const from = lock ?? 'packageManager in package.json';
  return `the repo installs with bun (${from}), which does not run here: npm installed its dependencies from package.json's version ranges${lock ? `, not ${lock}'s versions` : ''}, and the box has no bun`;
}
