import { currentSettings } from '@ca-sandbox/config';
import {
  BUILDERS,
  DOCKER_MIN_CPUS,
  DOCKER_MIN_MEMORY_BYTES,
  DOCKER_NAME_PATTERN,
  NETWORK_POLICIES,
  parseSize,
  SIZE_SYNTAX,
} from '@ca-sandbox/docker';
import { hasControlCharacter, SANDBOX_ID_PATTERN } from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { parseOptions } from './_utils.js';
import { resolveCaCertificates } from './base-image.js';
import type { BuildLimits } from './build-argv.js';
import {
  DEFAULT_BUILD_CPUS,
  DEFAULT_BUILD_FILE_SIZE,
  DEFAULT_BUILD_MEMORY,
  DEFAULT_BUILD_PROCESSES,
  DEFAULT_BUILD_TIMEOUT_MS,
  MIN_MAX_DEPS_SIZE,
  optionsFromSettings,
  settingMaxDepsSize,
} from './build-settings.js';
import { InvalidBuildOptionsError } from './errors.js';
import type { ManifestRead } from './prepare.js';
import { PROVIDERS, type Provider } from './provider.js';
import { type Registries, RegistriesSchema, resolveRegistries } from './registries.js';
import { sanitiseRepoName } from './tag.js';

export type { NetworkPolicy } from '@ca-sandbox/docker';

/** What happened during prepareImage, for progress output and tests (a cache hit has no `build`). */
export type PrepareEvent =
  | { type: 'manifests'; count: number; skipped: number }
  | { type: 'dephash'; dephash: string; image: string }
  | { type: 'cache-hit'; image: string }
  | { type: 'build'; image: string; network: string }
  | { type: 'built'; image: string }
  | { type: 'no-install'; image: string }
  | { type: 'build-failed'; image: string; logFile?: string };

/** Where an install's traffic goes: a network with no route out and the proxy on it. */
export interface InstallEgress {
  network: string;
  proxyUrl: string;
}

const PrepareOptionsSchema = z.strictObject({
  containerId: z.string().regex(DOCKER_NAME_PATTERN, 'must be a container name or id'),
  /**
   * The sandbox this image is built for (a create): the builds' step containers carry its labels
   * (buildStepLabels), so a killed create's install is found and stopped by `destroy <id>` and
   * `prune`, and `ls` shows it. Library callers without a sandbox leave it out.
   */
  sandboxId: z.string().regex(SANDBOX_ID_PATTERN, 'must be a sandbox id').optional(),
  repoName: z.string().min(1).max(1024),
  /**
   * The source's identity (a URL without credentials, a local directory's realpath): part of the
   * cache key, so a deps image is only ever reused by the source that built it.
   */
  // No control character: the source is a label value (the deps image's, shown by `ls --images`).
  source: z
    .string()
    .min(1)
    .max(4096)
    .refine((value) => !hasControlCharacter(value), 'control character'),
  /** How the source is shown in the image's `ca.sandbox.cache.source` label (default: `source`). */
  sourceDisplay: z
    .string()
    .min(1)
    .max(4096)
    .refine((value) => !hasControlCharacter(value), 'control character')
    .optional(),
  policy: z.enum(NETWORK_POLICIES),
  builder: z.enum(BUILDERS).default('auto'),
  baseImage: z.string().max(255).optional(),
  baseImages: z.partialRecord(z.enum(PROVIDERS), z.string().max(255)).optional(),
  /** PEM bundle the install step trusts (TLS-intercepting proxy); default: setting caCertificates. */
  caCertificates: z.string().max(4096).optional(),
  /** Mirrors every install uses; default env CA_SANDBOX_NPM_REGISTRY / _PIP_INDEX_URL / _GOPROXY. */
  registries: RegistriesSchema.optional(),
  maxFiles: z.number().int().min(1).optional(),
  maxFileBytes: z.number().int().min(1).optional(),
  maxTotalBytes: z.number().int().min(1).optional(),
  /** Memory of each build container (no swap on top), docker syntax: `2g`, `512m`. */
  buildMemory: z
    .string()
    .refine(
      (text) => (parseSize(text) ?? 0) >= DOCKER_MIN_MEMORY_BYTES,
      `must be ${SIZE_SYNTAX}, at least 6m (docker's minimum)`,
    )
    .default(DEFAULT_BUILD_MEMORY),
  buildCpus: z.number().min(DOCKER_MIN_CPUS).max(1024).default(DEFAULT_BUILD_CPUS),
  /** RLIMIT_NPROC of the install user (1000): per uid across the host, see the README. */
  buildProcesses: z.number().int().min(16).max(4_194_304).default(DEFAULT_BUILD_PROCESSES),
  /** RLIMIT_FSIZE in bytes: the largest file an install may write. */
  buildFileSize: z
    .number()
    .int()
    .min(1024 ** 2)
    .max(2 ** 53 - 1)
    .default(DEFAULT_BUILD_FILE_SIZE),
  /**
   * Bytes the install may add to the base image (the deps image's own layers), watched while it
   * runs and checked on the image; default env CA_SANDBOX_MAX_DEPS_SIZE, else 4 GiB.
   */
  maxDepsSize: z
    .number()
    .int()
    .min(MIN_MAX_DEPS_SIZE)
    .max(2 ** 53 - 1)
    .optional(),
  /** Wall-clock limit of `docker build`; default: setting build.timeoutSeconds, else 15 min. */
  buildTimeoutMs: z
    .number()
    .int()
    .min(1000)
    .max(24 * 3_600_000)
    .optional(),
  /**
   * Opens the way out for the install (the lifecycle starts the sandbox's egress gateway here): the
   * build joins `network` and the install's tools get `proxyUrl` as their proxy. Called only when an
   * install really runs. Without it the install uses Docker's default bridge (library callers).
   */
  egress: z.custom<(provider: Provider) => Promise<InstallEgress>>((v) => typeof v === 'function').optional(),
  /**
   * Claude Code in the image (`--with-claude`): its binary, from a Claude Code image built once per
   * version through `claudeEgress` (the npm registry only), is copied to /usr/local/bin/claude,
   * owned by root. A distinct cache entry (part of the dephash). Needs a policy that installs.
   */
  withClaude: z.boolean().default(false),
  /** Opens the way out for the Claude Code image's build (the lifecycle: the npm registry only). */
  claudeEgress: z.custom<() => Promise<InstallEgress>>((v) => typeof v === 'function').optional(),
  onLog: z.custom<(line: string) => void>((v) => typeof v === 'function').optional(),
  onEvent: z.custom<(event: PrepareEvent) => void>((v) => typeof v === 'function').optional(),
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal).optional(),
  /**
   * The manifest read of the helper's checkout, already started (startManifestRead, gated on the
   * clone): prepareImage then waits for it instead of starting one.
   */
  manifests: z.custom<Promise<ManifestRead>>((v) => v instanceof Promise).optional(),
});
export type PrepareImageOptions = z.input<typeof PrepareOptionsSchema>;

/** The options with every default filled and every derived value computed once. */
export type ResolvedPrepareOptions = z.output<typeof PrepareOptionsSchema> & {
  buildTimeoutMs: number;
  maxDepsSize: number;
  registries: Registries;
  /** The repo name as it appears in tags and labels (sanitiseRepoName). */
  repoPart: string;
  /** The `ca.sandbox.cache.source` label of the images this source builds (sourceDisplay, else source). */
  imageSource: string;
  /** The PEM bundle the installs trust (the option, else setting caCertificates); none: undefined. */
  caFile: string | undefined;
  /** The resource limits of every build container (the deps image's and the Claude Code image's). */
  limits: BuildLimits;
};

/**
 * Validates prepareImage options (InvalidBuildOptionsError, usage) and fills the defaults, once:
 * the rest of the build reads only the resolved options. What the options leave out comes from
 * the settings (file, env: @ca-sandbox/config), checked by the same schema as an option.
 */
export function resolvePrepareOptions(input: unknown): ResolvedPrepareOptions {
  const settings = currentSettings();
  const merged =
    input !== null && typeof input === 'object' && !Array.isArray(input)
      ? { ...optionsFromSettings(settings), ...input }
      : input;
  const opts = parseOptions(PrepareOptionsSchema, merged, 'prepareImage');
  if (opts.withClaude && opts.policy === 'offline')
    throw new InvalidBuildOptionsError(
      'invalid prepareImage option withClaude: Claude Code is installed while the network is on, not under the offline policy',
    );
  return {
    ...opts,
    buildTimeoutMs: opts.buildTimeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS,
    maxDepsSize: opts.maxDepsSize ?? settingMaxDepsSize(settings),
    registries: resolveRegistries(opts.registries),
    repoPart: sanitiseRepoName(opts.repoName),
    imageSource: opts.sourceDisplay ?? opts.source,
    caFile: resolveCaCertificates(opts.caCertificates),
    limits: {
      memory: opts.buildMemory,
      cpus: opts.buildCpus,
      processes: opts.buildProcesses,
      fileSize: opts.buildFileSize,
    },
  };
}
