import {
  BOX_LIMITS,
  DOCKER_NAME_PATTERN,
  ENV_NAME_PATTERN,
  IMAGE_REF_PATTERN,
  LABEL_KEY_PATTERN,
  OBJECT_NAME_PATTERN,
  parseSize,
  RUNTIMES,
  SANDBOX_ID_PATTERN,
  SANDBOX_ID_SYNTAX,
  SIZE_SYNTAX,
  sandboxNames,
} from '@ca-sandbox/docker';
import { z } from 'zod';
import { InvalidRunOptionsError } from './errors.js';

/** A size as docker parses it (@ca-sandbox/docker parseSize), at least `min` bytes. */
function dockerSize(min: number) {
  return z
    .string()
    .refine((text) => (parseSize(text) ?? -1) >= min, `must be ${SIZE_SYNTAX}, at least ${min} bytes`);
}

/** The only knobs a sandbox container has. Unknown keys are rejected: no docker flag passes through. */
export const RunOptionsSchema = z.strictObject({
  sandboxId: z.string().regex(SANDBOX_ID_PATTERN, `must match ${SANDBOX_ID_SYNTAX}`),
  name: z.string().regex(OBJECT_NAME_PATTERN, 'must be a plain container name'),
  image: z.string().regex(IMAGE_REF_PATTERN, 'must be an image reference'),
  /** `gateway`: the egress proxy of a sandbox; it alone runs without the source volume. */
  role: z.enum(['box', 'helper', 'gateway']).default('box'),
  volume: z.string().regex(OBJECT_NAME_PATTERN, 'must be a volume name').optional(),
  volumeReadOnly: z.boolean().default(false),
  /** A box's writable view of its image, mounted at IMAGE_VIEW_DIR (prepareImageView's volume). */
  imageView: z.string().regex(OBJECT_NAME_PATTERN, 'must be a volume name').optional(),
  /**
   * A box's repo view (prepareRepoView's overlay volume): mounted at REPO_DIR instead of `volume`,
   * which the box then has read-only at RAW_REPO_DIR.
   */
  repoView: z.string().regex(OBJECT_NAME_PATTERN, 'must be a volume name').optional(),
  network: z.string().regex(DOCKER_NAME_PATTERN, 'must be none, bridge or a network name').default('none'),
  /** Networks a gateway joins after start (`docker network connect`); only gateways have any. */
  extraNetworks: z.array(z.string().regex(DOCKER_NAME_PATTERN, 'must be a network name')).max(4).default([]),
  runtime: z.enum(RUNTIMES).default('runc'),
  memory: dockerSize(BOX_LIMITS.memory.minBytes).default(BOX_LIMITS.memory.default),
  cpus: z.number().min(BOX_LIMITS.cpus.min).max(256).default(BOX_LIMITS.cpus.default),
  pidsLimit: z
    .number()
    .int()
    .min(BOX_LIMITS.pids.min)
    .max(BOX_LIMITS.pids.max)
    .default(BOX_LIMITS.pids.default),
  tmpfsSize: dockerSize(1).default('512m'),
  /** RLIMIT_FSIZE: the volume has no quota on the local driver, so one file cannot outgrow this. */
  maxFileSize: dockerSize(1).default('4g'),
  /**
   * `blackhole` points the box's resolver (Docker's embedded 127.0.0.11 on user-defined networks)
   * at the box's own loopback (BLACKHOLE_DNS), so no name resolves through the host's resolvers.
   */
  dns: z.enum(['default', 'blackhole']).default('default'),
  env: z
    .record(
      z.string().regex(ENV_NAME_PATTERN, 'env names are [A-Za-z_][A-Za-z0-9_]*'),
      z.string().refine((value) => !value.includes('\0'), 'no NUL in env values'),
    )
    .default({}),
  labels: z
    .record(
      z.string().regex(LABEL_KEY_PATTERN, 'label keys are lower-case dotted names'),
      z.string().refine((value) => !/[\0\n\r]/.test(value), 'no control characters in labels'),
    )
    .default({}),
  /**
   * A helper only, and only its own sandbox's box: join that box's PID namespace. The vetting
   * report's lister does, with the box frozen, to list the box's own tmpfs (/proc/1/root/tmp),
   * which no other container reaches.
   */
  pidOf: z.string().regex(OBJECT_NAME_PATTERN, 'must be a container name').optional(),
  command: z
    .array(z.string().refine((arg) => !arg.includes('\0')))
    .min(1)
    // Never looked up on the image's PATH, where a deps image puts the dependencies' bins first.
    .refine((argv) => argv[0]?.startsWith('/'), 'the command must be named by an absolute path')
    .optional(),
});

export type RunOptionsInput = z.input<typeof RunOptionsSchema>;

/** Boxes and helpers work on the source volume; a gateway must never see it. */
function volumeProblem(options: z.output<typeof RunOptionsSchema>): string | undefined {
  if (options.role === 'gateway' && options.volume !== undefined)
    return 'volume is not allowed for a gateway';
  if (options.role !== 'gateway' && options.volume === undefined) return 'volume is required';
  if (options.role !== 'gateway' && options.extraNetworks.length > 0)
    return 'extraNetworks is only for a gateway';
  if (options.pidOf !== undefined && options.role !== 'helper') return 'pidOf is only for a helper';
  if (options.imageView !== undefined && options.role !== 'box') return 'imageView is only for a box';
  if (options.imageView !== undefined && options.imageView !== sandboxNames(options.sandboxId).imageView.view)
    return "imageView names only the box's own sandbox view";
  if (options.repoView !== undefined && options.role !== 'box') return 'repoView is only for a box';
  if (options.repoView !== undefined && options.repoView !== sandboxNames(options.sandboxId).repoView.view)
    return "repoView names only the box's own sandbox repo view";
  if (
    options.repoView !== undefined &&
    (options.volume !== sandboxNames(options.sandboxId).volume || options.volumeReadOnly)
  )
    return "repoView needs the sandbox's own volume, writable through the view";
  if (options.pidOf !== undefined && options.pidOf !== sandboxNames(options.sandboxId).box)
    return "pidOf names only the helper's own sandbox box";
  return undefined;
}
export type RunOptions = z.output<typeof RunOptionsSchema>;

/** Validates untrusted options and fills every default. */
export function resolveRunOptions(input: unknown): RunOptions {
  const parsed = RunOptionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'options';
    const detail =
      issue?.code === 'unrecognized_keys'
        ? `unknown option(s) ${issue.keys.join(', ')}`
        : `${where} ${issue?.message ?? 'is invalid'}`;
    throw new InvalidRunOptionsError(detail);
  }
  const problem = volumeProblem(parsed.data);
  if (problem) throw new InvalidRunOptionsError(problem);
  return parsed.data;
}
