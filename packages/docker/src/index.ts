export { DOCKER_HINT, DockerCommandError, DockerResponseError, DockerUnavailableError, type ErrorKind } from './errors.js';
export {
  docker,
  dockerEnv,
  dockerSpawnError,
  isDaemonUnreachable,
  setDockerTracer,
  spawnDocker,
  type DockerResult,
  type DockerRunOptions,
  type DockerSpawnOptions,
} from './exec-docker.js';
export { dockerInfo, type DockerInfo } from './info.js';
export {
  ContainerInspectSchema,
  ImageInspectSchema,
  VolumeInspectSchema,
  imageExists,
  inspectContainer,
  inspectImage,
  inspectVolume,
  parseContainerInspect,
  type ContainerInspect,
  type ImageInspect,
  type VolumeInspect,
} from './inspect.js';
export * from './labels.js';
