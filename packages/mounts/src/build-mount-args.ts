import { LABEL_KEY_PATTERN, OBJECT_NAME_PATTERN, parseSize } from '@ca-sandbox/docker';
import { BindMountRejectedError, InvalidMountError } from './errors.js';
import { type MountSpec, parseMountSpec } from './mount-spec.js';

/**
 * The mount chokepoint: turns untrusted mount specs into `docker run` arguments that use only
 * `--mount type=volume,...` and `--tmpfs`. Any bind, in any spelling, throws BindMountRejectedError.
 *
 * @example buildMountArgs([{ type: 'volume', source: 'ca-sbx-abc', target: '/work/repo' }])
 *   // ['--mount', 'type=volume,source=ca-sbx-abc,target=/work/repo']
 */
export function buildMountArgs(specs: unknown): string[] {
  if (!Array.isArray(specs)) throw new InvalidMountError('mount specs must be an array');
  const mounts = specs.map((spec, index) => parseMountSpec(spec, index));
  const targets = new Set<string>();
  for (const mount of mounts) {
    if (targets.has(mount.target)) throw new InvalidMountError(`two mounts target ${mount.target}`);
    targets.add(mount.target);
  }
  return mounts.flatMap(toArgs);
}

function toArgs(mount: MountSpec): string[] {
  if (mount.type === 'volume') {
    // volume-nocopy is left off on purpose: the image's (empty, 1000-owned) dir gives a new
    // volume its owner, so the box can write /work/repo.
    const fields = ['type=volume', `source=${mount.source}`, `target=${mount.target}`];
    if (mount.readonly) fields.push('readonly');
    return ['--mount', fields.join(',')];
  }
  const options = [mount.exec ? 'exec' : 'noexec', 'nosuid', 'nodev'];
  // In bytes: docker hands tmpfs options to the kernel, which knows neither `2gb` nor `1.5g`.
  if (mount.size) options.push(`size=${parseSize(mount.size)}`);
  if (mount.mode !== undefined) options.push(`mode=${mount.mode.toString(8)}`);
  return ['--tmpfs', `${mount.target}:${options.join(',')}`];
}

/** A volume to create: a plain name, labels, the local driver and never a driver option. */
export interface VolumeCreateSpec {
  name: string;
  labels: Record<string, string>;
  driver: 'local';
}

/**
 * The one way a volume is made: a labeled named volume with the local driver and NO driver
 * options (`--opt type=none,o=bind,device=/etc` would be a bind mount in disguise). Validated here,
 * created by `engine.volume.create(spec.name, spec)` (which sends no driver options either).
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
