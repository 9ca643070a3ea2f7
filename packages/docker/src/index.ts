// The full barrel: the light entry (spawning, errors, labels) plus the engine's answers parsed.
export {
  assertSandboxConfig,
  isNameConflict,
  type SandboxContainerConfig,
  type SandboxHostConfig,
  type UlimitConfig,
  type VolumeMountConfig,
} from './container-create.js';
export {
  type ContainerSummary,
  type ContainerVerbs,
  type Engine,
  type ExecVerbs,
  engine,
  filterRecord,
  type ImageSummary,
  type ImageVerbs,
  type ListFilter,
  type NetworkCreateOptions,
  type NetworkVerbs,
  type SystemVerbs,
  type VolumeVerbs,
} from './engine.js';
export {
  type LabeledKind,
  type LabeledObject,
  listLabeled,
  resizeExec,
} from './engine-api.js';
export {
  CONFINEMENT_MARKER,
  CONFINEMENT_PROBE,
  type ConfinementRow,
  CPU_PERIOD,
  confinementGuard,
  cpuQuota,
  installConfinementRows,
  type ProcessLimits,
  processUlimits,
  ulimitFlags,
  ulimitRows,
} from './hardening.js';
export {
  depsSourceIn,
  type ImageViewFacts,
  type ImageViewPlan,
  imageViewFacts,
  imageViewMatches,
  imageViewOptions,
  prepareImageView,
  viewEnv,
} from './image-view.js';
export { holdVolumes, inertContainerConfig, unmountedViewVolumes } from './inert-container.js';
export { type DockerInfo, dockerInfo, parseDockerInfo, runtimeIsNetworkless } from './info.js';
export {
  type ContainerInspect,
  ContainerInspectSchema,
  type ImageInspect,
  ImageInspectSchema,
  imageExists,
  inspectContainer,
  inspectImage,
  inspectVolume,
  type NetworkInspect,
  NetworkInspectSchema,
  parseContainerInspect,
  type VolumeInspect,
  VolumeInspectSchema,
} from './inspect.js';
export {
  assertInstallConfig,
  type CommitChanges,
  type HeldStdin,
  INSTALL_LOG_CONFIG,
  INSTALL_PID1,
  type InstallContainerConfig,
  type InstallHostConfig,
  installContainerName,
} from './install-container.js';
export * from './process.js';
export {
  hasRepoView,
  prepareRepoView,
  type RepoViewFacts,
  repoViewFacts,
  repoViewMatches,
  repoViewOptions,
  viewEnvFor,
} from './repo-view.js';
