// The full barrel: the light entry (spawning, errors, labels) plus the engine's answers parsed.
export {
  findExecByArgument,
  type LabeledKind,
  type LabeledObject,
  listLabeled,
  resizeExec,
} from './engine-api.js';
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
  parseContainerInspect,
  type VolumeInspect,
  VolumeInspectSchema,
} from './inspect.js';
export * from './process.js';
