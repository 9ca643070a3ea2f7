import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { BUILD_DEFAULTS, currentSettings, DEFINITIONS } from '@ca-sandbox/config';
import {
  BUILD_LABEL,
  BUILD_LABEL_DEPHASH,
  BUILD_LABEL_REPO,
  BUILDERS,
  CACHE_LABEL,
  CACHE_LABEL_DEPHASH,
  CACHE_LABEL_REPO,
  CACHE_LABEL_SOURCE,
  DOCKER_MIN_CPUS,
  DOCKER_MIN_MEMORY_BYTES,
  docker,
  dockerSpawnError,
  formatSize,
  NETWORK_POLICIES,
  parseSize,
  SANDBOX_LABEL,
  SIZE_SYNTAX,
  spawnDocker,
} from '@ca-sandbox/docker';
import { DOCKER_NAME_PATTERN, sanitizeForTerminal } from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { parseOptions } from './_utils.js';
import {
  ensureBaseImage,
  localImageIds,
  normaliseImageRef,
  readExtraCa,
  resolveBaseImage,
  resolveCaCertificates,
} from './base-image.js';
import { buildArgv, PROXY_BUILD_ARGS } from './build-argv.js';
import { buildDirPrefix } from './build-leftovers.js';
import { isBuilderFraming } from './build-log.js';
import { type Builder, type BuilderName, selectBuilder } from './builders.js';
import { ensureClaudeImage } from './claude-code.js';
import { CLAUDE_CODE_ADDON } from './claude-code-pin.js';
import { computeDepHash } from './dephash.js';
import { DEPS_SIZE_POLL_MS, depsImageBytes, largestBuildLayer } from './deps-size.js';
import { CONTEXT_EXTRA_CA, CONTEXT_MANIFESTS, LABEL_BUILD_ID, renderDockerfile } from './dockerfile.js';
import {
  DepsImageTooLargeError,
  ImageBuildError,
  ImageBuildTimeoutError,
  InvalidBuildOptionsError,
  ManifestReadError,
} from './errors.js';
import { InstallLog, meaningfulLines } from './install-log.js';
import { unsafePathReason } from './manifest-names.js';
import { type ManifestFile, readManifests } from './manifests.js';
import { type Detection, detectProvider, PROVIDERS, type Provider } from './provider.js';
import { contextFiles, type InstallRecipe } from './recipe.js';
import {
  maskSecrets,
  type Registries,
  RegistriesSchema,
  registryInstallEnv,
  registrySecrets,
  resolveRegistries,
} from './registries.js';
import { imageTag, sanitiseRepoName, sourceKey } from './tag.js';
import {
  formatToolchain,
  LABEL_TOOLCHAIN,
  parseToolchain,
  type Toolchain,
  toolchainFromOutput,
} from './toolchain.js';

export type { NetworkPolicy } from '@ca-sandbox/docker';

export const LABEL_CACHE_PROVIDER = 'ca.sandbox.cache.provider';
export const LABEL_CACHE_BUILDER = 'ca.sandbox.cache.builder';

/** What happened during prepareImage, for progress output and tests (a cache hit has no `build`). */
export type PrepareEvent =
  | { type: 'manifests'; count: number; skipped: number }
  | { type: 'dephash'; dephash: string; image: string }
  | { type: 'cache-hit'; image: string }
  | { type: 'build'; image: string; network: string }
  | { type: 'built'; image: string }
  | { type: 'no-install'; image: string }
  | { type: 'build-failed'; image: string; logFile?: string };

// Defaults and their overrides (file, env) live with the settings: @ca-sandbox/config.
export const DEFAULT_BUILD_TIMEOUT_MS = BUILD_DEFAULTS.timeoutSeconds * 1000;
export const DEFAULT_BUILD_MEMORY = BUILD_DEFAULTS.memory;
export const DEFAULT_BUILD_CPUS = BUILD_DEFAULTS.cpus;
export const DEFAULT_BUILD_PROCESSES = BUILD_DEFAULTS.processes;
export const DEFAULT_BUILD_FILE_SIZE = BUILD_DEFAULTS.fileSizeBytes;
/** Env override of the build time limit, in whole seconds. */
export const BUILD_TIMEOUT_ENV = DEFINITIONS['build.timeoutSeconds'].env[0] as string;
/** What the install may add to the base image, in bytes. */
export const DEFAULT_MAX_DEPS_SIZE = 4 * 1024 ** 3;
/** Env override of the deps image cap (setting build.maxDepsSize), a docker size (`4g`, `512m`) or bytes. */
export const MAX_DEPS_SIZE_ENV = DEFINITIONS['build.maxDepsSize'].env[0] as string;
const MIN_MAX_DEPS_SIZE = 1024 ** 2;

const providerEnum = z.enum(PROVIDERS);

const PrepareOptionsSchema = z.strictObject({
  containerId: z.string().regex(DOCKER_NAME_PATTERN, 'must be a container name or id'),
  repoName: z.string().min(1).max(1024),
  /**
   * The source's identity (a URL without credentials, a local directory's realpath): part of the
   * cache key, so a deps image is only ever reused by the source that built it.
   */
  source: z.string().min(1).max(4096),
  /** How the source is shown in the image's `ca.sandbox.cache.source` label (default: `source`). */
  sourceDisplay: z.string().min(1).max(4096).optional(),
  policy: z.enum(NETWORK_POLICIES),
  builder: z.enum(BUILDERS).default('auto'),
  baseImage: z.string().max(255).optional(),
  baseImages: z.partialRecord(providerEnum, z.string().max(255)).optional(),
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
});
export type PrepareImageOptions = z.input<typeof PrepareOptionsSchema>;

/** Where an install's traffic goes: a network with no route out and the proxy on it. */
export interface InstallEgress {
  network: string;
  proxyUrl: string;
}
export type ResolvedPrepareOptions = z.output<typeof PrepareOptionsSchema> & {
  buildTimeoutMs: number;
  maxDepsSize: number;
  registries: Registries;
};

export interface PreparedImage {
  image: string;
  cacheHit: boolean;
  dephash: string;
  builder: BuilderName;
  provider: Provider;
  depsInstalled: boolean;
  notes: string[];
  linkNodeModules: boolean;
  /** The source that built `image` (its `ca.sandbox.cache.source` label); empty for a base image. */
  imageSource: string;
  /** The versions of the tools in the image (label ca.sandbox.toolchain), e.g. { node: '22.23.5' }. */
  toolchain: Toolchain;
}

/**
 * Validates prepareImage options (InvalidBuildOptionsError, usage) and fills the defaults. What the
 * options leave out comes from the settings (file, env: @ca-sandbox/config), checked by the same
 * schema as an option.
 */
export function resolvePrepareOptions(input: unknown): ResolvedPrepareOptions {
  const settings = currentSettings();
  const timeoutSeconds = settings.value('build.timeoutSeconds');
  const mirrors = Object.fromEntries(
    Object.entries({
      npm: settings.value('mirrors.npmRegistry'),
      pip: settings.value('mirrors.pypiIndex'),
      go: settings.value('mirrors.goProxy'),
    }).filter(([, value]) => value !== undefined),
  );
  const fromSettings = Object.fromEntries(
    Object.entries({
      caCertificates: settings.value('caCertificates'),
      buildMemory: settings.value('build.memory'),
      buildCpus: settings.value('build.cpus'),
      buildProcesses: settings.value('build.processes'),
      buildFileSize: settings.value('build.fileSizeBytes'),
      buildTimeoutMs: timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000,
      registries: Object.keys(mirrors).length > 0 ? mirrors : undefined,
    }).filter(([, value]) => value !== undefined),
  );
  const merged =
    input !== null && typeof input === 'object' && !Array.isArray(input)
      ? { ...fromSettings, ...input }
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
  };
}

/** The deps cap of the settings (file, env CA_SANDBOX_MAX_DEPS_SIZE), by docker's size rules. */
function settingMaxDepsSize(settings: ReturnType<typeof currentSettings>): number {
  const setting = settings.get('build.maxDepsSize');
  if (setting.value === undefined) return DEFAULT_MAX_DEPS_SIZE;
  const bytes = parseSize(setting.value.trim());
  if (bytes === undefined || bytes < MIN_MAX_DEPS_SIZE)
    throw new InvalidBuildOptionsError(
      `invalid build.maxDepsSize (from ${setting.from ?? setting.source}): must be a size of at least 1m such as 4g or 512m`,
    );
  return bytes;
}

/**
 * Builds (or finds in the cache) the deps-only image for the repo in the helper container's
 * volume. Cache hit ⇒ no `docker build`; `offline` ⇒ no install (the cached image for the
 * dephash, else the toolchain base without deps, said in `notes`).
 */
export async function prepareImage(input: PrepareImageOptions): Promise<PreparedImage> {
  const opts = resolvePrepareOptions(input);
  const log = (line: string) => opts.onLog?.(line);
  const emit = (event: PrepareEvent) => opts.onEvent?.(event);
  const notes: string[] = [];
  const skipped: string[] = [];
  const repoPart = sanitiseRepoName(opts.repoName);
  // The cache-hit path is on every `create`: the manifest read, the image listings and the builder
  // probe run at once, and a hit needs no docker call after the dephash.
  const [files, localIds, cachedTags, builder] = await Promise.all([
    readManifests(opts.containerId, {
      ...(opts.maxFiles ? { maxFiles: opts.maxFiles } : {}),
      ...(opts.maxFileBytes ? { maxFileBytes: opts.maxFileBytes } : {}),
      ...(opts.maxTotalBytes ? { maxTotalBytes: opts.maxTotalBytes } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      onSkip: (skip) => skipped.push(`${JSON.stringify(skip.path)}: ${skip.reason}`),
    }),
    localImageIds(),
    cachedImages(repoPart, sourceLabel(opts)),
    selectBuilder(opts.builder),
  ]);
  emit({ type: 'manifests', count: files.length, skipped: skipped.length });
  if (skipped.length)
    notes.push(
      `skipped ${skipped.length} manifest entr${skipped.length === 1 ? 'y' : 'ies'}: ${skipped.slice(0, 5).join('; ')}`,
    );
  const detection = detectProvider(files);
  const base = resolveBaseImage(detection.provider, opts);
  const localId = localIds.get(normaliseImageRef(base.image) ?? '');
  const baseImageId = localId ?? (await ensureBaseImage(base.image, detection.provider, opts.signal));
  const dephash = computeDepHash(files, {
    builder: builder.name,
    builderVersion: builder.version,
    baseImageId,
    ...(opts.withClaude ? { addOns: [CLAUDE_CODE_ADDON] } : {}),
  });
  const image = imageTag(opts.repoName, dephash, opts.source);
  emit({ type: 'dephash', dephash, image });
  log(
    `dephash ${dephash} (${files.length} manifests, provider ${detection.provider}, builder ${builder.name}, base ${base.image})`,
  );
  const result = { dephash, builder: builder.name, provider: detection.provider };
  const built = { ...result, imageSource: sourceLabel(opts) };

  const cached = cachedTags.get(image);
  if (cached !== undefined) {
    emit({ type: 'cache-hit', image });
    log(`cache hit: ${image} (built from ${sourceLabel(opts)})`);
    return {
      ...built,
      image,
      cacheHit: true,
      depsInstalled: true,
      notes,
      linkNodeModules: detection.provider === 'node',
      toolchain: parseToolchain(cached),
    };
  }
  if (opts.policy === 'offline') {
    emit({ type: 'no-install', image: base.image });
    notes.push(
      `${OFFLINE_NOTICE} (no cached image for dephash ${dephash}): the toolchain base ${base.image} without dependencies`,
    );
    return {
      ...result,
      imageSource: '',
      image: base.image,
      cacheHit: false,
      depsInstalled: false,
      notes,
      linkNodeModules: false,
      toolchain: await imageToolchain(base.image),
    };
  }
  const { recipe, toolchain } = await buildImage({
    opts,
    files,
    detection,
    builder,
    baseImage: base.image,
    image,
    dephash,
    emit,
    log,
  });
  notes.push(...recipe.notes);
  return {
    ...built,
    image,
    cacheHit: false,
    depsInstalled: true,
    notes,
    linkNodeModules: recipe.linkNodeModules,
    toolchain,
  };
}

/** Said (without --verbose) whenever a box gets no dependencies. */
export const OFFLINE_NOTICE = 'offline: no dependency install; the box gets the bare toolchain image';

/** An image's toolchain label; {} when it has none (an official image not seeded here). */
async function imageToolchain(image: string): Promise<Toolchain> {
  const { stdout } = await docker(
    ['image', 'inspect', '--format', `{{ index .Config.Labels "${LABEL_TOOLCHAIN}" }}`, '--', image],
    { allowFailure: true },
  );
  return parseToolchain(stdout.trim());
}

interface BuildInput {
  opts: ResolvedPrepareOptions;
  files: ManifestFile[];
  detection: Detection;
  builder: Builder;
  baseImage: string;
  image: string;
  dephash: string;
  emit: (event: PrepareEvent) => void;
  log: (line: string) => void;
}

/** Writes the manifests into a fresh directory; every path re-checked so nothing lands outside it. */
export async function writeManifests(dir: string, files: readonly ManifestFile[]): Promise<void> {
  const root = resolve(dir);
  for (const file of files) {
    const reason = unsafePathReason(file.path);
    if (reason)
      throw new ManifestReadError(
        `unsafe manifest path ${JSON.stringify(file.path.slice(0, 100))}: ${reason}`,
      );
    const target = resolve(root, ...file.path.split('/'));
    if (!target.startsWith(root + sep))
      throw new ManifestReadError(
        `manifest path escapes the context: ${JSON.stringify(file.path.slice(0, 100))}`,
      );
    await mkdir(resolve(target, '..'), { recursive: true, mode: 0o755 });
    await writeFile(target, file.content, { flag: 'wx', mode: 0o644 });
  }
}

async function buildImage(input: BuildInput): Promise<{ recipe: InstallRecipe; toolchain: Toolchain }> {
  const { opts, builder, image, emit } = input;
  const secrets = registrySecrets(opts.registries);
  const log = (line: string) => input.log(maskSecrets(line, secrets));
  // The pid in the name lets `prune --images` tell a killed build's directory from a live one.
  const context = await mkdtemp(buildDirPrefix());
  const buildId = randomBytes(12).toString('hex');
  let installLog: InstallLog | undefined;
  try {
    const manifestsDir = join(context, CONTEXT_MANIFESTS);
    await mkdir(manifestsDir);
    const prepared = contextFiles(input.files);
    await writeManifests(manifestsDir, prepared.files);
    const recipe = await builder.recipe({ files: input.files, detection: input.detection, manifestsDir });
    recipe.notes.unshift(...prepared.notes);
    // Later exports win: a configured mirror overrides the builder's own defaults (GOPROXY).
    recipe.installEnv.push(...registryInstallEnv(input.detection.provider, opts.registries));
    const caFile = resolveCaCertificates(opts.caCertificates);
    if (caFile) await writeFile(join(context, CONTEXT_EXTRA_CA), readExtraCa(caFile), { mode: 0o644 });
    const repoLabel = sanitiseRepoName(opts.repoName);
    const buildLabels = {
      [BUILD_LABEL]: '1',
      [BUILD_LABEL_REPO]: repoLabel,
      [BUILD_LABEL_DEPHASH]: input.dephash,
    };
    const claudeImage = opts.withClaude ? await claudeImageFor(opts, log) : undefined;
    const dockerfile = renderDockerfile(input.baseImage, recipe, {
      ...(claudeImage ? { claudeImage } : {}),
      extraCa: Boolean(caFile),
      buildId,
      sourceKey: sourceKey(opts.source),
      buildLabels,
      image,
    });
    await writeFile(join(context, 'Dockerfile'), dockerfile, { mode: 0o644 });
    const egress =
      recipe.install.length > 0 && opts.egress ? await opts.egress(input.detection.provider) : undefined;
    const network = recipe.install.length === 0 ? 'none' : (egress?.network ?? 'bridge');
    const labels = {
      [CACHE_LABEL]: '1',
      [CACHE_LABEL_DEPHASH]: input.dephash,
      [CACHE_LABEL_REPO]: repoLabel,
      [CACHE_LABEL_SOURCE]: sourceLabel(opts),
      [LABEL_CACHE_PROVIDER]: input.detection.provider,
      [LABEL_CACHE_BUILDER]: builder.name,
    };
    const argv = buildArgv({
      image,
      network,
      labels,
      dockerfile: join(context, 'Dockerfile'),
      context,
      ...(egress ? { proxyUrl: egress.proxyUrl } : {}),
      limits: {
        memory: opts.buildMemory,
        cpus: opts.buildCpus,
        processes: opts.buildProcesses,
        fileSize: opts.buildFileSize,
      },
    });
    emit({ type: 'build', image, network });
    log(
      `docker build ${image} (network ${network}, memory ${opts.buildMemory}, ${opts.buildCpus} cpus, time limit ${opts.buildTimeoutMs / 1000} s, deps cap ${formatSize(opts.maxDepsSize)})`,
    );
    installLog = await InstallLog.open(`${repoLabel}-${input.dephash}-${Date.now()}`);
    const lines = await runBuild({
      argv,
      image,
      log,
      installLog,
      timeoutMs: opts.buildTimeoutMs,
      memory: opts.buildMemory,
      baseImage: input.baseImage,
      dockerfile,
      buildId,
      maxDepsSize: opts.maxDepsSize,
      buildLabels,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    // A write between two looks of the watch: the image itself is held to the cap too.
    const added = await depsImageBytes(image, input.baseImage);
    if (added > opts.maxDepsSize) {
      await removeImage(image);
      await removeBuildImages(buildId);
      throw new DepsImageTooLargeError(image, opts.maxDepsSize, added, 'image');
    }
    const toolchain = toolchainFromOutput(lines);
    await labelToolchain(image, toolchain);
    emit({ type: 'built', image });
    await installLog.discard();
    return { recipe, toolchain };
  } catch (error) {
    await installLog?.close();
    emit({ type: 'build-failed', image, ...(installLog ? { logFile: installLog.path } : {}) });
    throw error;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** The Claude Code image (built now unless cached), from the node base image of the settings. */
async function claudeImageFor(opts: ResolvedPrepareOptions, log: (line: string) => void): Promise<string> {
  const nodeBase = resolveBaseImage('node', opts.baseImages ? { baseImages: opts.baseImages } : {}).image;
  const nodeBaseId = await ensureBaseImage(nodeBase, 'node', opts.signal);
  return ensureClaudeImage({
    nodeBaseImage: nodeBase,
    nodeBaseImageId: nodeBaseId,
    registries: opts.registries,
    ...(opts.caCertificates ? { caCertificates: opts.caCertificates } : {}),
    limits: {
      memory: opts.buildMemory,
      cpus: opts.buildCpus,
      processes: opts.buildProcesses,
      fileSize: opts.buildFileSize,
    },
    timeoutMs: opts.buildTimeoutMs,
    ...(opts.claudeEgress ? { egress: opts.claudeEgress } : {}),
    log,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

/**
 * The toolchain is known only once the build ran: a second, instruction-only build adds it as a
 * label (no RUN, no network, no context: the Dockerfile comes on stdin).
 */
async function labelToolchain(image: string, toolchain: Toolchain): Promise<void> {
  const dockerfile = `FROM ${image}\nLABEL ${LABEL_TOOLCHAIN}=${JSON.stringify(formatToolchain(toolchain))}\n`;
  const blankProxies = PROXY_BUILD_ARGS.flatMap((name) => ['--build-arg', `${name}=`]);
  const argv = ['build', '--quiet', '--network', 'none', ...blankProxies, '--tag', image, '-'];
  try {
    await docker(argv, { input: dockerfile });
  } catch (error) {
    await removeImage(image);
    throw error;
  }
}

interface RunBuildInput {
  argv: string[];
  image: string;
  log: (line: string) => void;
  installLog: InstallLog;
  buildId: string;
  timeoutMs: number;
  memory: string;
  baseImage: string;
  dockerfile: string;
  maxDepsSize: number;
  buildLabels: Record<string, string>;
  signal?: AbortSignal;
}

/** Where one line of build output is cut (a minified bundle printed by an install script). */
const MAX_LOG_LINE = 2000;

/** Grace between SIGTERM and SIGKILL of the docker client once the build is stopped. */
const KILL_GRACE_MS = 5000;

/** Runs `docker build`; returns the last lines of its output (the toolchain probe's among them). */
async function runBuild(input: RunBuildInput): Promise<string[]> {
  const { argv, image, log, signal } = input;
  const startedAt = Date.now();
  const child = spawnDocker(argv, { stdout: 'pipe', stderr: 'pipe' });
  const tail: string[] = [];
  const onLine = (line: string) => {
    // Output of install scripts is the repo's: no control sequences reach the caller's terminal.
    const clean = sanitizeForTerminal(line, MAX_LOG_LINE);
    tail.push(clean);
    if (tail.length > 200) tail.shift();
    // The kept log has everything; the caller sees the install's own output.
    input.installLog.write(clean);
    if (!isBuilderFraming(clean)) log(clean);
  };
  const pump = (stream: NodeJS.ReadableStream | null | undefined) => {
    let rest = '';
    stream?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split(/\r?\n/);
      rest = lines.pop() ?? '';
      for (const line of lines) onLine(line);
      if (rest.length > 8192) {
        onLine(rest);
        rest = '';
      }
    });
    stream?.on('end', () => rest && onLine(rest));
  };
  pump(child.stdout);
  pump(child.stderr);
  let stopped: 'timeout' | 'abort' | 'disk' | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const stop = (why: 'timeout' | 'abort' | 'disk') => {
    stopped ??= why;
    child.kill('SIGTERM');
    killTimer ??= setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
  };
  const onAbort = () => stop('abort');
  const timer = setTimeout(() => stop('timeout'), input.timeoutMs);
  signal?.addEventListener('abort', onAbort, { once: true });
  // The install's writes land in its RUN container's layer: watched from the host, so a disk fill
  // is stopped near the cap instead of running until the time limit.
  let written = 0;
  let watching = true;
  const watch = (async () => {
    while (watching && !stopped) {
      await new Promise((resolve) => setTimeout(resolve, DEPS_SIZE_POLL_MS));
      if (!watching || stopped) return;
      const seen = await largestBuildLayer(input.buildLabels, input.dockerfile).catch(() => 0);
      if (seen > input.maxDepsSize) {
        written = seen;
        stop('disk');
      }
    }
  })();
  try {
    const result = await child;
    watching = false;
    await watch;
    if (stopped) {
      // The daemon cancels a legacy build whose client went away, but removes the RUN container
      // asynchronously: make sure it is gone before the caller hears about the failure.
      await removeBuildContainers(input.baseImage, input.dockerfile, startedAt);
    }
    if (result.exitCode === 0 && !stopped) return tail;
    // A failed build leaves the images of the steps that passed (untagged): found by the build id.
    await removeBuildImages(input.buildId);
    const report = { details: meaningfulLines(tail), logFile: input.installLog.path };
    const output = tail.join('\n');
    if (stopped === 'timeout') throw new ImageBuildTimeoutError(image, input.timeoutMs, output, report);
    if (stopped === 'disk') throw new DepsImageTooLargeError(image, input.maxDepsSize, written, 'install');
    if (result.exitCode === undefined) throw dockerSpawnError(argv, undefined, output, result);
    throw new ImageBuildError(image, result.exitCode, output, input.memory, report);
  } finally {
    watching = false;
    clearTimeout(timer);
    clearTimeout(killTimer);
    signal?.removeEventListener('abort', onAbort);
  }
}

const CLEANUP_WAIT_MS = 15_000;

/**
 * Removes every image of one build (intermediate ones included), newest first so no image is
 * refused for having a child. The build id label is in our Dockerfile alone: nothing else has it.
 */
export async function removeBuildImages(buildId: string): Promise<void> {
  for (let pass = 0; pass < 5; pass++) {
    const listed = await docker(
      ['image', 'ls', '--all', '--quiet', '--no-trunc', '--filter', `label=${LABEL_BUILD_ID}=${buildId}`],
      { allowFailure: true },
    );
    const ids = [...new Set(listed.stdout.split('\n').filter((id) => /^sha256:[0-9a-f]{64}$/.test(id)))];
    if (ids.length === 0) return;
    // `image ls` lists newest first; a parent is removed with its last child.
    for (const id of ids) await docker(['image', 'rm', '--force', '--', id], { allowFailure: true });
  }
}

/**
 * Removes what is left of a stopped build: containers descending from the base image, created
 * since the build started, whose command is one of this Dockerfile's RUN instructions. Build
 * containers carry no label of ours, and nothing the build printed is trusted to name them, so
 * the three checks together keep every other container (boxes, other builds) out of reach.
 */
async function removeBuildContainers(
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<void> {
  const deadline = Date.now() + CLEANUP_WAIT_MS;
  for (;;) {
    const ids = await leftoverBuildContainers(baseImage, dockerfile, startedAt);
    if (ids.length === 0) return;
    if (Date.now() > deadline) return;
    await docker(['rm', '--force', '--', ...ids], { allowFailure: true });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function leftoverBuildContainers(
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<string[]> {
  const listed = await docker(['ps', '--all', '--no-trunc', '--quiet', '--filter', `ancestor=${baseImage}`], {
    allowFailure: true,
  });
  const ids = listed.stdout.split('\n').filter((id) => /^[0-9a-f]{64}$/.test(id));
  if (ids.length === 0) return [];
  const inspected = await docker(['container', 'inspect', '--', ...ids], { allowFailure: true });
  let docs: unknown;
  try {
    docs = JSON.parse(inspected.stdout || '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(docs)) return [];
  const runLines = new Set(dockerfile.split('\n').filter((line) => line.startsWith('RUN [')));
  // Slack for a daemon whose clock is a little behind ours.
  const since = startedAt - 60_000;
  return docs.flatMap((doc) => {
    const d = doc as {
      Id?: unknown;
      Created?: unknown;
      Config?: { Cmd?: unknown; Labels?: Record<string, string> | null };
    };
    const cmd = d.Config?.Cmd;
    const created = typeof d.Created === 'string' ? Date.parse(d.Created) : Number.NaN;
    const ours =
      typeof d.Id === 'string' &&
      Array.isArray(cmd) &&
      runLines.has(`RUN ${JSON.stringify(cmd)}`) &&
      created >= since &&
      d.Config?.Labels?.[SANDBOX_LABEL] === undefined;
    return ours ? [d.Id as string] : [];
  });
}

/** The `ca.sandbox.cache.source` label of the images this source builds. */
function sourceLabel(opts: { source: string; sourceDisplay?: string | undefined }): string {
  return opts.sourceDisplay ?? opts.source;
}

/**
 * Our cache images of one (sanitised) repo built from one source, by `name:tag`, with their
 * toolchain label: one `docker image ls` filtered by the cache labels (an image merely tagged
 * ca-sbx:* by someone else, or built from another source, is no hit), then one `image inspect` of
 * those tags. Source key and dephash are in the tag itself.
 */
async function cachedImages(repoPart: string, source: string): Promise<Map<string, string>> {
  const { stdout } = await docker([
    'image',
    'ls',
    '--filter',
    `label=${CACHE_LABEL}=1`,
    '--filter',
    `label=${CACHE_LABEL_REPO}=${repoPart}`,
    '--filter',
    `label=${CACHE_LABEL_SOURCE}=${source}`,
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]);
  const tags = [
    ...new Set(
      stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line && !line.endsWith(':<none>')),
    ),
  ].slice(0, MAX_CACHED_TAGS);
  const out = new Map<string, string>();
  if (tags.length === 0) return out;
  const inspected = await docker(
    ['image', 'inspect', '--format', `{{ index .Config.Labels "${LABEL_TOOLCHAIN}" }}`, '--', ...tags],
    { allowFailure: true },
  );
  const values = inspected.stdout.split('\n');
  // One line per tag, in order; a tag removed meanwhile makes inspect fail: no labels, still a hit.
  for (const [i, tag] of tags.entries()) out.set(tag, inspected.exitCode === 0 ? (values[i] ?? '') : '');
  return out;
}

/** More cache images of one repo than this are not looked at (the newest come first). */
const MAX_CACHED_TAGS = 64;

/** Removes a cache image (tests and `prune --images`); absent is fine. */
export async function removeImage(image: string): Promise<void> {
  await docker(['image', 'rm', '--force', '--', image], { allowFailure: true });
}
