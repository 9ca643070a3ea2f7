import {
  CACHE_LABEL,
  CACHE_LABEL_REPO,
  CACHE_LABEL_SOURCE,
  engine,
  type ImageInspect,
  LABEL_CACHE_BUILDER,
} from '@ca-sandbox/docker';
import { LABEL_CA } from './ca-trust.js';
import { type InstallFallback, LABEL_INSTALL_FALLBACKS, parseInstallFallbacks } from './install-fallbacks.js';
import { LABEL_SKIPPED_SCRIPTS, parseSkippedScripts } from './install-scripts.js';
import { type CheckedLockfile, LABEL_CHANGED_LOCKS, parseChangedLocks } from './providers/node/lockfiles.js';
import { LABEL_TOOLCHAIN } from './toolchain.js';

/** What a cache hit tells: the toolchain label and the digest of the CA bundle it trusts ('' none). */
export interface CachedImage {
  toolchain: string;
  ca: string;
  /** The fallbacks its install took (label ca.sandbox.cache.install-fallbacks). */
  installFallbacks: InstallFallback[];
  /** The root lockfiles its install rewrote (label ca.sandbox.cache.changed-locks); undefined: not recorded. */
  changedLocks: CheckedLockfile[] | undefined;
  /** The repo's own lifecycle scripts its install skipped (label ca.sandbox.cache.skipped-scripts). */
  skippedScripts: string[];
}

export const LABEL_CACHE_PROVIDER = 'ca.sandbox.cache.provider';
// Its home is @ca-sandbox/docker (the repo view reads it).
export { LABEL_CACHE_BUILDER };

/**
 * The toolchain and CA labels of our cache image `image` (`name:tag`, the dephash and source key in the
 * tag), or undefined when there is none: one inspect of that tag. An image merely tagged ca-sbx:*
 * by someone else, or built from another source or repo, carries other labels and is no hit.
 * One inspect, not a label-filtered `image ls`: the engine walks every local image for a list
 * (1.3 s on a machine with 5,400 images, on every create), and the tag is known exactly.
 */
export async function cachedImage(
  image: string,
  repoPart: string,
  source: string,
): Promise<CachedImage | undefined> {
  return cacheImageLabels(await engine.image.inspect(image), repoPart, source);
}

/** cachedImage's verdict on an image already inspected (undefined: none, or not our cache's). */
export function cacheImageLabels(
  found: ImageInspect | undefined,
  repoPart: string,
  source: string,
): CachedImage | undefined {
  const labels = found?.Config.Labels ?? {};
  if (labels[CACHE_LABEL] !== '1' || labels[CACHE_LABEL_REPO] !== repoPart) return undefined;
  if (labels[CACHE_LABEL_SOURCE] !== source) return undefined;
  return {
    toolchain: labels[LABEL_TOOLCHAIN] ?? '',
    ca: labels[LABEL_CA] ?? '',
    installFallbacks: parseInstallFallbacks(labels[LABEL_INSTALL_FALLBACKS]),
    changedLocks: parseChangedLocks(labels[LABEL_CHANGED_LOCKS]),
    skippedScripts: parseSkippedScripts(labels[LABEL_SKIPPED_SCRIPTS]),
  };
}
