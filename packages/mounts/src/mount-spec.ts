import { OBJECT_NAME_PATTERN, parseSize } from '@ca-sandbox/docker';
import { z } from 'zod';
import { BindMountRejectedError, InvalidMountError } from './errors.js';

/** Absolute container paths of plain segments: no `..`, no commas (they split --mount fields). */
const TARGET = /^\/(?:[a-zA-Z0-9_.@+-]+\/?)*$/;

const VolumeSpecSchema = z.strictObject({
  type: z.literal('volume'),
  source: z.string(),
  target: z.string(),
  readonly: z.boolean().optional(),
  /** Take nothing from the image's folder at the target (always so for a read-only mount). */
  nocopy: z.boolean().optional(),
});

const TmpfsSpecSchema = z.strictObject({
  type: z.literal('tmpfs'),
  target: z.string(),
  size: z.string().optional(),
  mode: z.number().int().min(0).max(0o1777).optional(),
  exec: z.boolean().optional(),
});

export type VolumeMountSpec = z.infer<typeof VolumeSpecSchema>;
export type TmpfsMountSpec = z.infer<typeof TmpfsSpecSchema>;
export type MountSpec = VolumeMountSpec | TmpfsMountSpec;

const BIND_KEYS = ['bind-propagation', 'bind-nonrecursive', 'bind-recursive', 'propagation', 'consistency'];
const DRIVER_KEYS = [
  'volume-driver',
  'volume-opt',
  'driver',
  'driverOpts',
  'driver_opts',
  'opt',
  'opts',
  'o',
  'device',
];

function asRecord(value: unknown, index: number): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidMountError(`mount #${index + 1} is not an object`);
  }
  return value as Record<string, unknown>;
}

/** Everything that smells of the host is refused before the schema even looks at the spec. */
function rejectHostShapes(spec: Record<string, unknown>, index: number): void {
  const where = `mount #${index + 1}`;
  const text = JSON.stringify(spec);
  if (/docker\.sock/i.test(text)) throw new BindMountRejectedError(`${where} names the docker socket`);
  const type = spec.type;
  if (typeof type === 'string' && type.trim().toLowerCase() === 'bind') {
    throw new BindMountRejectedError(`${where} is a bind mount`);
  }
  if (typeof type === 'string' && !['volume', 'tmpfs'].includes(type)) {
    throw new BindMountRejectedError(`${where} has type '${type}'`);
  }
  for (const key of Object.keys(spec)) {
    if (BIND_KEYS.includes(key)) throw new BindMountRejectedError(`${where} sets the bind option '${key}'`);
    if (DRIVER_KEYS.includes(key)) {
      throw new BindMountRejectedError(`${where} sets volume driver options ('${key}'), a bind in disguise`);
    }
  }
  const source = spec.source ?? spec.src;
  if (typeof source === 'string' && !OBJECT_NAME_PATTERN.test(source)) {
    throw new BindMountRejectedError(
      `${where} source '${source.slice(0, 80)}' is not a volume name (a host path?)`,
    );
  }
  for (const key of Object.keys(spec)) {
    if (['src', 'destination', 'dst'].includes(key)) {
      throw new InvalidMountError(`${where} uses '${key}': write source/target`);
    }
  }
}

function checkTarget(target: string, index: number): void {
  if (!TARGET.test(target) || target.split('/').some((part) => part === '..' || part === '.')) {
    throw new InvalidMountError(
      `mount #${index + 1} target '${target.slice(0, 80)}' is not a plain absolute path`,
    );
  }
  if (target === '/') throw new InvalidMountError(`mount #${index + 1} cannot cover the root`);
}

/** Validates one untrusted spec; throws BindMountRejectedError for anything bind-like. */
export function parseMountSpec(value: unknown, index = 0): MountSpec {
  const spec = asRecord(value, index);
  rejectHostShapes(spec, index);
  const schema = spec.type === 'tmpfs' ? TmpfsSpecSchema : VolumeSpecSchema;
  const parsed = schema.safeParse(spec);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      throw new BindMountRejectedError(`mount #${index + 1} has unknown keys (${issue.keys.join(', ')})`);
    }
    throw new InvalidMountError(
      `mount #${index + 1}: ${issue?.path.join('.') || 'spec'} ${issue?.message ?? ''}`.trim(),
    );
  }
  const mount = parsed.data;
  checkTarget(mount.target, index);
  if (mount.type === 'tmpfs' && mount.size !== undefined && !((parseSize(mount.size) ?? 0) > 0)) {
    throw new InvalidMountError(`mount #${index + 1} tmpfs size '${mount.size}' is not a size such as 64m`);
  }
  return mount;
}
