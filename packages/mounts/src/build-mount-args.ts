import {
  LABEL_KEY_PATTERN,
  OBJECT_NAME_PATTERN,
  parseSize,
  type VolumeMountConfig,
} from '@ca-sandbox/docker';
import { BindMountRejectedError, InvalidMountError } from './errors.js';
import { parseMountSpec, type TmpfsMountSpec } from './mount-spec.js';

/** Mounts as the Engine API takes them: named volumes in `Mounts`, tmpfs targets in `Tmpfs`. */
export interface MountConfig {
  Mounts: VolumeMountConfig[];
  /** Target → mount options (`noexec,nosuid,nodev,size=<bytes>`). */
  Tmpfs: Record<string, string>;
}

/**
 * The mount chokepoint: turns untrusted mount specs into the create body's `Mounts` (type volume
 * only) and `Tmpfs`. Any bind, in any spelling, throws BindMountRejectedError.
 *
 * @example buildMountConfig([{ type: 'volume', source: 'ca-sbx-abc', target: '/work/repo' }])
 *   // { Mounts: [{ Type: 'volume', Source: 'ca-sbx-abc', Target: '/work/repo', ReadOnly: false }], Tmpfs: {} }
 */
export function buildMountConfig(specs: unknown): MountConfig {
  if (!Array.isArray(specs)) throw new InvalidMountError('mount specs must be an array');
  const mounts = specs.map((spec, index) => parseMountSpec(spec, index));
  const targets = new Set<string>();
  for (const mount of mounts) {
    if (targets.has(mount.target)) throw new InvalidMountError(`two mounts target ${mount.target}`);
    targets.add(mount.target);
  }
  const config: MountConfig = { Mounts: [], Tmpfs: {} };
  for (const mount of mounts) {
    // volume-nocopy is left off a writable mount on purpose: the image's (empty, 1000-owned) dir
    // gives a new volume its owner, so the box can write /work/repo. A read-only mount is only
    // read: the engine must not copy the image's folder (contents, owner, mode) into a volume it
    // finds empty (a box's view upper, mounted by the report's lister while the overlay is live).
    // `nocopy` asks the same of a writable mount (an overlay view, which the engine would
    // otherwise mount at create to see whether it is empty).
    if (mount.type === 'volume')
      config.Mounts.push({
        Type: 'volume',
        Source: mount.source,
        Target: mount.target,
        ReadOnly: mount.readonly === true,
        ...(mount.readonly === true || mount.nocopy === true
          ? { VolumeOptions: { NoCopy: true as const, DriverConfig: {} } }
          : {}),
      });
    else config.Tmpfs[mount.target] = tmpfsOptions(mount);
  }
  return config;
}

function tmpfsOptions(mount: TmpfsMountSpec): string {
  const options = [mount.exec ? 'exec' : 'noexec', 'nosuid', 'nodev'];
  // In bytes: docker hands tmpfs options to the kernel, which knows neither `2gb` nor `1.5g`.
  if (mount.size) options.push(`size=${parseSize(mount.size)}`);
  if (mount.mode !== undefined) options.push(`mode=${mount.mode.toString(8)}`);
  return options.join(',');
}

/**
 * The `docker run` arguments that say what a MountConfig says: `--mount type=volume,...` per
 * volume and `--tmpfs target:options` per tmpfs (for argv renderings of a create body).
 */
export function mountConfigArgs(config: Partial<MountConfig>): string[] {
  const volumes = (config.Mounts ?? []).flatMap((mount) => {
    if (mount.Type !== 'volume') throw new BindMountRejectedError(`a ${String(mount.Type)} mount`);
    const fields = ['type=volume', `source=${mount.Source}`, `target=${mount.Target}`];
    if (mount.ReadOnly) fields.push('readonly');
    if (mount.VolumeOptions?.NoCopy) fields.push('volume-nocopy');
    return ['--mount', fields.join(',')];
  });
  const tmpfs = Object.entries(config.Tmpfs ?? {}).flatMap(([target, options]) => [
    '--tmpfs',
    `${target}:${options}`,
  ]);
  return [...volumes, ...tmpfs];
}

/**
 * buildMountConfig as `docker run` arguments: only `--mount type=volume,...` and `--tmpfs`.
 *
 * @example buildMountArgs([{ type: 'volume', source: 'ca-sbx-abc', target: '/work/repo' }])
 *   // ['--mount', 'type=volume,source=ca-sbx-abc,target=/work/repo']
 */
export function buildMountArgs(specs: unknown): string[] {
  return mountConfigArgs(buildMountConfig(specs));
}

/** A volume to create: a plain name, labels, the local driver and never a driver option. */
export interface VolumeCreateSpec {
  name: string;
  labels: Record<string, string>;
  driver: 'local';
}

/**
 * The way a sandbox's source volume is made: a labeled named volume with the local driver and NO
 * driver options (`--opt type=none,o=bind,device=/etc` would be a bind mount in disguise).
 * Validated here, created by `engine.volume.create(spec.name, spec)` (which sends no driver
 * options either). The one exception is a box's view of its image (@ca-sandbox/docker
 * image-view.ts): an overlay whose every path comes from the engine's own inspect of the image
 * and of two plain volumes of the sandbox, checked again by the gate's image-view row.
 */
export function volumeCreateSpec(name: string, labels: Record<string, string>): VolumeCreateSpec {
  if (!OBJECT_NAME_PATTERN.test(name))
    throw new BindMountRejectedError(`volume name '${name.slice(0, 80)}' is not a plain name`);
  for (const [key, value] of Object.entries(labels)) {
    if (!LABEL_KEY_PATTERN.test(key))
      throw new InvalidMountError(`label key '${key.slice(0, 80)}' is not allowed`);
    if (/[\0\n\r]/.test(value)) throw new InvalidMountError(`label ${key} has control characters`);
  }
  return { name, labels: { ...labels }, driver: 'local' };
}

/** `docker volume create` argv of volumeCreateSpec, for the CLI (tests, scripts). */
export function buildVolumeCreateArgs(name: string, labels: Record<string, string>): string[] {
  const spec = volumeCreateSpec(name, labels);
  const args = ['volume', 'create', '--driver', spec.driver];
  for (const [key, value] of Object.entries(spec.labels)) args.push('--label', `${key}=${value}`);
  args.push('--', spec.name);
  return args;
}
