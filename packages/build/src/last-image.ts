import { CACHE_IMAGE_REPOSITORY, CACHE_LABEL_DEPHASH, engine } from '@ca-sandbox/docker';
import type { BuilderName } from './builders.js';
import { cacheImageLabels, LABEL_CACHE_BUILDER, LABEL_CACHE_PROVIDER } from './image-cache.js';
import type { PreparedImage } from './prepare.js';
import { PROVIDERS, type Provider } from './provider.js';
import { imageTag, sanitiseRepoName, sourceKey } from './tag.js';
import { parseToolchain } from './toolchain.js';

/** Who a source is, as the cache keys it (see prepareImage's repoName, source and sourceDisplay). */
export interface CacheSource {
  repoName: string;
  /** The source's identity (the tag's source key). */
  source: string;
  /** Its `ca.sandbox.cache.source` label (sourceDisplay, else source). */
  imageSource: string;
}

/**
 * `ca-sbx:<repo>-<source key>-last`: a second tag on the deps image the last create of a source
 * got. Not hex, so never a dephash tag; removed with the other `ca-sbx:*` tags by `prune --images`.
 * One inspect answers "which deps image did this source use last" (a label-filtered `image ls`
 * walks every local image: seconds on a busy engine, longer than the clone it would overlap).
 */
export function lastImageTag(cache: CacheSource): string {
  return `${CACHE_IMAGE_REPOSITORY}:${lastTagPart(cache)}`;
}

function lastTagPart(cache: CacheSource): string {
  return `${sanitiseRepoName(cache.repoName)}-${sourceKey(cache.source)}-last`;
}

/** A guess at a create's deps image, made before its manifests are read. */
export interface LastDepsImage {
  /** The image id the guess is about (a tag may move; the id does not). */
  id: string;
  /** What prepareImage returns when its dephash names this image (a cache hit). */
  prepared: PreparedImage;
}

/**
 * The deps image the last create of `cache` used, as prepareImage would return it on a cache hit
 * of that image, or undefined. Only a guess: the image is one of ours, of this repo and source
 * (cachedImage's label checks), whose dephash tag still names it; whether it is the right one is
 * known only once the helper computed the dephash of this checkout.
 */
export async function lastDepsImage(cache: CacheSource): Promise<LastDepsImage | undefined> {
  const last = await engine.image.inspect(lastImageTag(cache));
  const labels = last?.Config.Labels ?? {};
  const dephash = labels[CACHE_LABEL_DEPHASH];
  const provider = labels[LABEL_CACHE_PROVIDER] as Provider | undefined;
  const builder = labels[LABEL_CACHE_BUILDER];
  if (!last || !dephash || !provider || !PROVIDERS.includes(provider)) return undefined;
  if (builder !== 'builtin' && builder !== 'nixpacks') return undefined;
  const image = imageTag(cache.repoName, dephash, cache.source);
  const tagged = await engine.image.inspect(image);
  const cached = cacheImageLabels(tagged, sanitiseRepoName(cache.repoName), cache.imageSource);
  if (cached === undefined || tagged?.Id !== last.Id) return undefined;
  return {
    id: last.Id,
    prepared: {
      image,
      cacheHit: true,
      dephash,
      builder: builder satisfies BuilderName,
      provider,
      depsInstalled: true,
      notes: [],
      linkNodeModules: provider === 'node',
      imageSource: cache.imageSource,
      toolchain: parseToolchain(cached.toolchain),
      installFallbacks: cached.installFallbacks,
      skippedScripts: cached.skippedScripts,
      ...(cached.changedLocks ? { changedLocks: cached.changedLocks } : {}),
      // The guess reads nothing of the repo: the dephash's prepareImage says what its pins miss.
      runtimeMismatches: [],
      trustedCa: cached.ca,
    },
  };
}

/**
 * Points the source's `-last` tag at the deps image `prepared` names (a cache image: built or
 * hit), unless it already does (`knownId`). A base image (offline without deps) is never one.
 */
export async function rememberDepsImage(
  cache: CacheSource,
  prepared: PreparedImage,
  knownId: string | undefined,
): Promise<void> {
  if (!prepared.depsInstalled || prepared.imageSource === '') return;
  const image = await engine.image.inspect(prepared.image);
  if (!image || image.Id === knownId) return;
  await engine.image.tag(image.Id, CACHE_IMAGE_REPOSITORY, lastTagPart(cache));
}
