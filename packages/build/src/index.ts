export {
  type BaseImageChoice,
  CA_CERTS_ENV,
  DEFAULT_BASE_IMAGES,
  ensureBaseImage,
  readExtraCa,
  resolveBaseImage,
  resolveCaCertificates,
} from './base-image.js';
export { type BuildArgvInput, type BuildLimits, buildArgv, PROXY_BUILD_ARGS } from './build-argv.js';
export {
  BUILD_DIR_PREFIX,
  type BuildLeftoverRemoval,
  type BuildLeftoverScope,
  type BuildLeftovers,
  findBuildLeftovers,
  isOwnBuildCommand,
  removeBuildLeftovers,
  staleBuildDirectories,
} from './build-leftovers.js';
export {
  BUILTIN_VERSION,
  type Builder,
  type BuilderChoice,
  type BuilderName,
  builtinBuilder,
  selectBuilder,
} from './builders.js';
export { claudeImageTag, ensureClaudeImage, renderClaudeDockerfile } from './claude-code.js';
export {
  CLAUDE_CODE_BIN,
  CLAUDE_CODE_PACKAGE,
  CLAUDE_CODE_VERSION,
  LABEL_CLAUDE_CODE,
} from './claude-code-pin.js';
export { computeDepHash, DEPHASH_LENGTH, type DepHashKey } from './dephash.js';
export { claudeProbe, LABEL_BUILD_ID, NO_NEW_PRIVS, renderDockerfile } from './dockerfile.js';
export {
  BaseImageMissingError,
  BuildConfigError,
  type BuildFailureReport,
  DepsImageTooLargeError,
  ImageBuildError,
  ImageBuildTimeoutError,
  InvalidBuildOptionsError,
  ManifestLimitError,
  ManifestReadError,
  NixpacksMissingError,
  NixpacksPlanError,
} from './errors.js';
export { InstallLog, installLogDir, meaningfulLines } from './install-log.js';
export { type LinkResult, linkDependencies } from './link.js';
export { isManifestName, MANIFEST_NAMES } from './manifest-names.js';
export {
  type ManifestFile,
  parseManifestTar,
  type ReadManifestsOptions,
  readManifests,
  type SkippedManifest,
} from './manifests.js';
export { nixpacksVersion, translatePlan } from './nixpacks.js';
export {
  BUILD_TIMEOUT_ENV,
  DEFAULT_BUILD_CPUS,
  DEFAULT_BUILD_FILE_SIZE,
  DEFAULT_BUILD_MEMORY,
  DEFAULT_BUILD_PROCESSES,
  DEFAULT_BUILD_TIMEOUT_MS,
  DEFAULT_MAX_DEPS_SIZE,
  MAX_DEPS_SIZE_ENV,
  type NetworkPolicy,
  OFFLINE_NOTICE,
  type PreparedImage,
  type PrepareEvent,
  type PrepareImageOptions,
  prepareImage,
  type ResolvedPrepareOptions,
  removeBuildImages,
  removeImage,
  resolvePrepareOptions,
} from './prepare.js';
export { type Detection, detectProvider, PROVIDERS, type Provider } from './provider.js';
export { builtinRecipe, GO_DEFAULT_PROXY, type InstallRecipe } from './recipe.js';
export { developerRequirementFiles } from './recipe-python.js';
export {
  REGISTRY_ENV,
  type Registries,
  RegistriesSchema,
  type RegistryKind,
  registryInstallEnv,
  resolveRegistries,
} from './registries.js';
export { imageTag, SOURCE_KEY_LENGTH, sanitiseRepoName, sourceKey } from './tag.js';
export {
  formatToolchain,
  LABEL_TOOLCHAIN,
  parseToolchain,
  TOOLCHAIN_PROBE,
  type Toolchain,
  toolchainFromOutput,
} from './toolchain.js';
