export {
  buildMountArgs,
  buildMountConfig,
  buildVolumeCreateArgs,
  type MountConfig,
  mountConfigArgs,
  type VolumeCreateSpec,
  volumeCreateSpec,
} from './build-mount-args.js';
export { BindMountRejectedError, InvalidMountError } from './errors.js';
export type { MountSpec, TmpfsMountSpec, VolumeMountSpec } from './mount-spec.js';
