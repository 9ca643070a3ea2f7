export {
  DOCKER_HINT,
  DockerCommandError,
  DockerResponseError,
  DockerUnavailableError,
  type ErrorKind,
} from './errors.js';
export {
  type DockerChild,
  type DockerProcessResult,
  type DockerResult,
  type DockerRunOptions,
  type DockerSpawnOptions,
  docker,
  dockerEnv,
  dockerSpawnError,
  isDaemonUnreachable,
  setDockerTracer,
  spawnDocker,
} from './exec-docker.js';
export { type DockerInfo, dockerInfo, parseDockerInfo } from './info.js';
export {
  type ContainerInspect,
  ContainerInspectSchema,
  type ImageInspect,
  ImageInspectSchema,
  imageExists,
  inspectContainer,
  inspectImage,
  inspectVolume,
  parseContainerInspect,
  type VolumeInspect,
  VolumeInspectSchema,
} from './inspect.js';
export * from './labels.js';
