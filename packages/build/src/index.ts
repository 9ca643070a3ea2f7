// The public surface: what the lifecycle and the CLI call. Internals (the Dockerfile renderer,
// the nixpacks plan translation, the recipes) are imported from their files by the tests.

export { limitFrom, type StartedLimit } from './_utils.js';
export {
  DEFAULT_BASE_IMAGES,
  readExtraCa,
  resolveBaseImage,
  resolveCaCertificates,
} from './base-image.js';
export { type BuildArgvInput, type BuildLimits, buildArgv, PROXY_BUILD_ARGS } from './build-argv.js';
export { removeBuildImages, removeImage } from './build-cleanup.js';
export {
  type BuildLeftoverRemoval,
  type BuildLeftoverScope,
  type BuildLeftovers,
  findBuildLeftovers,
  isOwnBuildCommand,
  type LiveBuild,
  liveBuildOf,
  liveBuilds,
  removeBuildLeftovers,
  staleBuildDirectories,
} from './build-leftovers.js';
export { BUILD_TIMEOUT_ENV, DEFAULT_MAX_DEPS_SIZE, MAX_DEPS_SIZE_ENV } from './build-settings.js';
export type { BuilderChoice } from './builders.js';
export {
  BOX_TRUST_DIR,
  BOX_TRUST_ENV,
  BOX_TRUST_SCRIPT,
  CA_BUNDLE_PATH,
  CA_TRUST_ENV,
  EXTRA_CA_PATH,
  type ExtraCa,
  LABEL_CA,
  loadExtraCa,
} from './ca-trust.js';
export {
  CACHE_FALLBACK_BYTES,
  type CacheEviction,
  type CacheImage,
  cacheLimit,
  describeEviction,
  enforceCacheLimit,
  listCacheImages,
  noteCacheUse,
} from './cache-limit.js';
export { claudeImageTag, ensureClaudeImage } from './claude-code.js';
export {
  CLAUDE_CODE_BIN,
  CLAUDE_CODE_PACKAGE,
  CLAUDE_CODE_VERSION,
  LABEL_CLAUDE_CODE,
} from './claude-code-pin.js';
export { computeDepHash, type DepHashKey } from './dephash.js';
export {
  BaseImageMissingError,
  BuildConfigError,
  type BuildFailureReport,
  baseImageHint,
  DepsImageTooLargeError,
  ImageBuildError,
  ImageBuildTimeoutError,
  InstallConfinementError,
  InvalidBuildOptionsError,
  ManifestLimitError,
  ManifestReadError,
  NixpacksMissingError,
  NixpacksPlanError,
} from './errors.js';
export {
  describeInstallFallback,
  INSTALL_FALLBACKS,
  type InstallFallback,
  parseInstallFallbacks,
} from './install-fallbacks.js';
export { isInstallRecord } from './install-records.js';
export {
  type InstallScript,
  LABEL_INSTALL_SCRIPTS,
  LABEL_SKIPPED_SCRIPTS,
  parseInstallScripts,
} from './install-scripts.js';
export {
  type CacheSource,
  type LastDepsImage,
  lastDepsImage,
  lastImageTag,
  rememberDepsImage,
} from './last-image.js';
export {
  type ManifestFile,
  type ManifestSet,
  type ReadManifestsOptions,
  readManifestSet,
  readManifests,
  type SkippedManifest,
} from './manifests.js';
export { nixpacksVersion } from './nixpacks-run.js';
export { ensurePrepImage, prepImageTag } from './prep-image.js';
export {
  type ManifestRead,
  OFFLINE_NOTICE,
  type PreparedImage,
  prepareImage,
  startManifestRead,
} from './prepare.js';
export type {
  NetworkPolicy,
  PrepareEvent,
  PrepareImageOptions,
  ResolvedPrepareOptions,
} from './prepare-options.js';
export { type Detection, detectProvider, PROVIDERS, type Provider } from './provider.js';
export { type LinkOptions, type LinkResult, linkDependencies } from './providers/node/link.js';
export { type Registries, type RegistryKind, resolveRegistries } from './registries.js';
export {
  chooseRootProvider,
  type RootSourceChoice,
  type RootSourceCounts,
} from './root-sources.js';
export { imageTag, SOURCE_KEY_LENGTH, sanitiseRepoName, sourceKey } from './tag.js';
export { formatToolchain, LABEL_TOOLCHAIN, parseToolchain, type Toolchain } from './toolchain.js';
export { CA_CERTS_ENV, caCertificatesAdvice } from './untrusted-certificate.js';
