import { ensureBaseImage, resolveBaseImage } from './base-image.js';
import { type BuilderName, selectBuilder } from './builders.js';
import { loadExtraCa } from './ca-trust.js';
import { CLAUDE_CODE_ADDON } from './claude-code-pin.js';
import { computeDepHash } from './dephash.js';
import { cachedImage } from './image-cache.js';
import { imageToolchain } from './image-toolchain.js';
import type { InstallFallback } from './install-fallbacks.js';
import {
  type ManifestFile,
  type ManifestSet,
  type ReadManifestsOptions,
  readManifestSet,
} from './manifests.js';
import {
  type PrepareEvent,
  type PrepareImageOptions,
  type ResolvedPrepareOptions,
  resolvePrepareOptions,
} from './prepare-options.js';
import { type Detection, detectProvider, type Provider } from './provider.js';
import type { CheckedLockfile } from './providers/node/lockfiles.js';
import { bunSubstitution } from './providers/node/substitution.js';
import { chooseRootProvider } from './root-sources.js';
import { runtimeMismatches } from './runtime-pins.js';
import { imageTag } from './tag.js';
import { parseToolchain, type Toolchain } from './toolchain.js';

export interface PreparedImage {
  image: string;
  cacheHit: boolean;
  dephash: string;
  builder: BuilderName;
  provider: Provider;
  depsInstalled: boolean;
  notes: string[];
  linkNodeModules: boolean;
  /** The source that built `image` (its `ca.sandbox.cache.source` label); empty for a base image. */
  imageSource: string;
  /** The versions of the tools in the image (label ca.sandbox.toolchain), e.g. { node: '22.23.5' }. */
  toolchain: Toolchain;
  /**
   * The sha256 of the user's CA bundle baked into the image (label ca.sandbox.cache.ca; see
   * ca-trust.ts), '' when it has none (no bundle set, or the bare base of an offline box).
   */
  trustedCa: string;
  /** Why the box got this toolchain when the root has no manifest (root-sources.ts); shown by `create`. */
  selection?: string;
  /**
   * One line per runtime the repo pins at its root (`.nvmrc`, `.python-version`, go.mod's `go`)
   * that the image's toolchain misses (runtime-pins.ts); shown by `create` whatever the verbosity.
   */
  runtimeMismatches: string[];
  /**
   * What the install did besides its recipe (install-fallbacks.ts: npm's --legacy-peer-deps after an
   * ERESOLVE), from the image's label, so a cache hit says it too; create shows each as a notice.
   */
  installFallbacks: InstallFallback[];
  /**
   * The repo's own lifecycle scripts the install skipped (`package.json (prepare)`): the repo's
   * code runs in the box only. A cache hit reads them from the image's label.
   */
  skippedScripts: string[];
  /**
   * The root lockfiles the install rewrote (lockfiles.ts), from the image's label; undefined when the
   * image does not say (no install, or built before BUILTIN_VERSION 11): the box's link compares then.
   */
  changedLocks?: CheckedLockfile[];
}

/** Said (without --verbose) whenever a box gets no dependencies. */
export const OFFLINE_NOTICE = 'offline: no dependency install; the box gets the bare toolchain image';

/**
 * Builds (or finds in the cache) the deps-only image for the repo in the helper container's
 * volume. Cache hit ⇒ no `docker build`; `offline` ⇒ no install (the cached image for the
 * dephash, else the toolchain base without deps, said in `notes`).
 */
export async function prepareImage(input: PrepareImageOptions): Promise<PreparedImage> {
  const opts = resolvePrepareOptions(input);
  const log = (line: string) => opts.onLog?.(line);
  const emit = (event: PrepareEvent) => opts.onEvent?.(event);
  const notes: string[] = [];
  const found = await lookAround(opts);
  emit({ type: 'manifests', count: found.files.length, skipped: found.skipped.length });
  if (found.skipped.length)
    notes.push(
      `skipped ${found.skipped.length} manifest entr${found.skipped.length === 1 ? 'y' : 'ies'}: ${found.skipped.slice(0, 5).join('; ')}`,
    );
  const { files, builder } = found;
  const detection = detectProvider(files);
  // No manifest: the root's source files pick the toolchain image; the recipe stays plain's
  // (nothing to install), built on that provider's base.
  const choice = detection.provider === 'plain' ? chooseRootProvider(found.rootSources) : undefined;
  const provider = choice?.provider ?? detection.provider;
  if (choice) notes.push(choice.reason);
  const base = resolveBaseImage(provider, opts);
  const baseImageId = await ensureBaseImage(base.image, provider, opts.signal);
  // Read once: the digest in the key and the bytes baked into the image are the same bundle.
  const ca = opts.caFile ? loadExtraCa(opts.caFile) : undefined;
  const dephash = computeDepHash(files, {
    builder: builder.name,
    builderVersion: builder.version,
    baseImageId,
    ...(opts.withClaude ? { addOns: [CLAUDE_CODE_ADDON] } : {}),
    ca: ca?.hash,
    rootProvider: choice?.provider,
  });
  const image = imageTag(opts.repoName, dephash, opts.source);
  emit({ type: 'dephash', dephash, image });
  log(
    `dephash ${dephash} (${files.length} manifests, provider ${provider}, builder ${builder.name}, base ${base.image})`,
  );
  const result = {
    dephash,
    builder: builder.name,
    provider,
    ...(choice ? { selection: choice.reason } : {}),
  };
  const built = { ...result, imageSource: opts.imageSource };

  const cached = await cachedImage(image, opts.repoPart, opts.imageSource);
  if (cached !== undefined) {
    emit({ type: 'cache-hit', image });
    log(`cache hit: ${image} (built from ${opts.imageSource})`);
    return {
      ...built,
      image,
      cacheHit: true,
      depsInstalled: true,
      notes,
      linkNodeModules: detection.provider === 'node',
      ...withToolchain(
        files,
        parseToolchain(cached.toolchain),
        builder.name === 'builtin' ? detection : undefined,
      ),
      trustedCa: cached.ca,
      installFallbacks: cached.installFallbacks,
      skippedScripts: cached.skippedScripts,
      ...(cached.changedLocks ? { changedLocks: cached.changedLocks } : {}),
    };
  }
  if (opts.policy === 'offline') {
    emit({ type: 'no-install', image: base.image });
    // A root chosen by its source files has nothing to install: offline misses nothing there.
    if (!choice)
      notes.push(
        `${OFFLINE_NOTICE} (no cached image for dephash ${dephash}): the toolchain base ${base.image} without dependencies`,
      );
    return {
      ...result,
      imageSource: '',
      image: base.image,
      cacheHit: false,
      depsInstalled: choice !== undefined,
      notes,
      linkNodeModules: false,
      ...withToolchain(files, await imageToolchain(base.image)),
      trustedCa: '',
      installFallbacks: [],
      skippedScripts: [],
    };
  }
  // The cold path's code (context writing, Dockerfile, install log, the recipes) loads only here.
  const { buildImage } = await import('./build-image.js');
  const { recipe, toolchain, installFallbacks, changedLocks, skippedScripts } = await buildImage({
    opts,
    files,
    detection,
    provider,
    builder,
    baseImage: base.image,
    baseImageId,
    image,
    dephash,
    ca,
    emit,
    log,
  });
  // plain's recipe note ('no known provider') would contradict the choice said above.
  if (!choice) notes.push(...recipe.notes);
  return {
    ...built,
    image,
    cacheHit: false,
    depsInstalled: true,
    notes,
    linkNodeModules: recipe.linkNodeModules,
    ...withToolchain(files, toolchain, builder.name === 'builtin' ? detection : undefined),
    trustedCa: ca?.hash ?? '',
    installFallbacks,
    skippedScripts,
    ...(changedLocks ? { changedLocks } : {}),
  };
}

/**
 * The image's toolchain and what of the repo's runtime pins it misses; `builtinInstall`: the
 * detection the built-in recipe installed from (it installs a bun repo with npm).
 */
function withToolchain(files: readonly ManifestFile[], toolchain: Toolchain, builtinInstall?: Detection) {
  const substituted = builtinInstall ? bunSubstitution(files, builtinInstall) : undefined;
  return {
    toolchain,
    runtimeMismatches: [...runtimeMismatches(files, toolchain), ...(substituted ? [substituted] : [])],
  };
}

/** What one manifest read of a checkout gave, with the entries it skipped (described). */
export interface ManifestRead extends ManifestSet {
  skipped: string[];
}

/**
 * Starts the manifest read of the checkout in `containerId` now; with `after`, the exec starts
 * beside the clone and reads once `after` settles true (prepareImage's `manifests`).
 */
export async function startManifestRead(
  containerId: string,
  options: Omit<ReadManifestsOptions, 'onSkip'> = {},
): Promise<ManifestRead> {
  const skipped: string[] = [];
  const set = await readManifestSet(containerId, {
    ...options,
    onSkip: (skip) => skipped.push(`${JSON.stringify(skip.path)}: ${skip.reason}`),
  });
  return { ...set, skipped };
}

/**
 * The cache-hit path is on every `create`: the manifest read and the builder probe run at once;
 * a hit then costs two image inspects (the base's id for the dephash, the tag it names).
 */
async function lookAround(opts: ResolvedPrepareOptions) {
  const [{ files, rootSources, skipped }, builder] = await Promise.all([
    opts.manifests ??
      startManifestRead(opts.containerId, {
        ...(opts.maxFiles ? { maxFiles: opts.maxFiles } : {}),
        ...(opts.maxFileBytes ? { maxFileBytes: opts.maxFileBytes } : {}),
        ...(opts.maxTotalBytes ? { maxTotalBytes: opts.maxTotalBytes } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    selectBuilder(opts.builder),
  ]);
  return { files, rootSources, builder, skipped };
}
