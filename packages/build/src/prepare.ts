import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import {
  CACHE_LABEL,
  CACHE_LABEL_DEPHASH,
  CACHE_LABEL_REPO,
  docker,
  dockerSpawnError,
  spawnDocker,
} from '@ca-sandbox/docker';
import { z } from 'zod';
import { cleanLine, parseOptions } from './_utils.js';
import {
  ensureBaseImage,
  localImageIds,
  normaliseImageRef,
  readExtraCa,
  resolveBaseImage,
} from './base-image.js';
import { type Builder, type BuilderName, selectBuilder } from './builders.js';
import { computeDepHash } from './dephash.js';
import { CONTEXT_EXTRA_CA, CONTEXT_MANIFESTS, renderDockerfile } from './dockerfile.js';
import { ImageBuildError, ManifestReadError } from './errors.js';
import { unsafePathReason } from './manifest-names.js';
import { type ManifestFile, readManifests } from './manifests.js';
import { type Detection, detectProvider, PROVIDERS, type Provider } from './provider.js';
import { contextFiles, type InstallRecipe } from './recipe.js';
import { imageTag, sanitiseRepoName } from './tag.js';

/** Same union as @ca-sandbox/network's NetworkPolicy (kept local: build does not import network). */
export type NetworkPolicy = 'offline' | 'clone-then-cut' | 'allowlist';

export const LABEL_CACHE_PROVIDER = 'ca.sandbox.cache.provider';
export const LABEL_CACHE_BUILDER = 'ca.sandbox.cache.builder';

/** What happened during prepareImage, for progress output and tests (a cache hit has no `build`). */
export type PrepareEvent =
  | { type: 'manifests'; count: number; skipped: number }
  | { type: 'dephash'; dephash: string; image: string }
  | { type: 'cache-hit'; image: string }
  | { type: 'build'; image: string; network: 'bridge' | 'none' }
  | { type: 'built'; image: string }
  | { type: 'no-install'; image: string };

const providerEnum = z.enum(PROVIDERS as [Provider, ...Provider[]]);

const PrepareOptionsSchema = z.strictObject({
  containerId: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/, 'must be a container name or id'),
  repoName: z.string().min(1).max(1024),
  policy: z.enum(['offline', 'clone-then-cut', 'allowlist']),
  builder: z.enum(['auto', 'builtin', 'nixpacks']).default('auto'),
  baseImage: z.string().max(255).optional(),
  baseImages: z.partialRecord(providerEnum, z.string().max(255)).optional(),
  configFile: z.string().max(4096).optional(),
  /** PEM bundle the install step trusts (TLS-intercepting proxy); default env CA_SANDBOX_CA_CERTS. */
  caCertificates: z.string().max(4096).optional(),
  maxFiles: z.number().int().min(1).optional(),
  maxFileBytes: z.number().int().min(1).optional(),
  maxTotalBytes: z.number().int().min(1).optional(),
  onLog: z.custom<(line: string) => void>((v) => typeof v === 'function').optional(),
  onEvent: z.custom<(event: PrepareEvent) => void>((v) => typeof v === 'function').optional(),
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal).optional(),
});
export type PrepareImageOptions = z.input<typeof PrepareOptionsSchema>;
export type ResolvedPrepareOptions = z.output<typeof PrepareOptionsSchema>;

export interface PreparedImage {
  image: string;
  cacheHit: boolean;
  dephash: string;
  builder: BuilderName;
  provider: Provider;
  depsInstalled: boolean;
  notes: string[];
  linkNodeModules: boolean;
}

/** Validates prepareImage options (InvalidBuildOptionsError, usage) and fills the defaults. */
export function resolvePrepareOptions(input: unknown): ResolvedPrepareOptions {
  return parseOptions(PrepareOptionsSchema, input, 'prepareImage');
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
    cachedImages(repoPart),
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
  });
  const image = imageTag(opts.repoName, dephash);
  emit({ type: 'dephash', dephash, image });
  log(
    `dephash ${dephash} (${files.length} manifests, provider ${detection.provider}, builder ${builder.name}, base ${base.image})`,
  );
  const result = { dephash, builder: builder.name, provider: detection.provider };

  if (cachedTags.has(image)) {
    emit({ type: 'cache-hit', image });
    log(`cache hit: ${image}`);
    return {
      ...result,
      image,
      cacheHit: true,
      depsInstalled: true,
      notes,
      linkNodeModules: detection.provider === 'node',
    };
  }
  if (opts.policy === 'offline') {
    emit({ type: 'no-install', image: base.image });
    notes.push(
      `offline: no dependency install and no cached image for dephash ${dephash}; the box gets the toolchain base ${base.image} without dependencies`,
    );
    return {
      ...result,
      image: base.image,
      cacheHit: false,
      depsInstalled: false,
      notes,
      linkNodeModules: false,
    };
  }
  const recipe = await buildImage({
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
    ...result,
    image,
    cacheHit: false,
    depsInstalled: true,
    notes,
    linkNodeModules: recipe.linkNodeModules,
  };
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

async function buildImage(input: BuildInput): Promise<InstallRecipe> {
  const { opts, builder, image, emit, log } = input;
  const context = await mkdtemp(join(tmpdir(), 'ca-sbx-build-'));
  try {
    const manifestsDir = join(context, CONTEXT_MANIFESTS);
    await mkdir(manifestsDir);
    const prepared = contextFiles(input.files);
    await writeManifests(manifestsDir, prepared.files);
    const recipe = await builder.recipe({ files: input.files, detection: input.detection, manifestsDir });
    recipe.notes.unshift(...prepared.notes);
    const caFile = opts.caCertificates ?? process.env.CA_SANDBOX_CA_CERTS;
    if (caFile) await writeFile(join(context, CONTEXT_EXTRA_CA), readExtraCa(caFile), { mode: 0o644 });
    const dockerfile = renderDockerfile(input.baseImage, recipe, { extraCa: Boolean(caFile) });
    await writeFile(join(context, 'Dockerfile'), dockerfile, { mode: 0o644 });
    const network = recipe.install.length > 0 ? 'bridge' : 'none';
    const labels = {
      [CACHE_LABEL]: '1',
      [CACHE_LABEL_DEPHASH]: input.dephash,
      [CACHE_LABEL_REPO]: sanitiseRepoName(opts.repoName),
      [LABEL_CACHE_PROVIDER]: input.detection.provider,
      [LABEL_CACHE_BUILDER]: builder.name,
    };
    const argv = [
      'build',
      '--network',
      network,
      '--rm',
      '--force-rm',
      '--tag',
      image,
      ...Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
      '--file',
      join(context, 'Dockerfile'),
      context,
    ];
    emit({ type: 'build', image, network });
    log(`docker build ${image} (network ${network})`);
    await runBuild(argv, image, log, opts.signal);
    emit({ type: 'built', image });
    return recipe;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

async function runBuild(
  argv: string[],
  image: string,
  log: (line: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  const child = spawnDocker(argv, { stdout: 'pipe', stderr: 'pipe' });
  const tail: string[] = [];
  const onLine = (line: string) => {
    // Output of install scripts is the repo's: no control sequences reach the caller's terminal.
    const clean = cleanLine(line);
    tail.push(clean);
    if (tail.length > 200) tail.shift();
    log(clean);
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
  const kill = () => child.kill('SIGTERM');
  signal?.addEventListener('abort', kill, { once: true });
  try {
    const result = await child;
    if (result.exitCode === 0) return;
    const output = tail.join('\n');
    if (result.exitCode === undefined) throw dockerSpawnError(argv, undefined, output, result);
    throw new ImageBuildError(image, result.exitCode, output);
  } finally {
    signal?.removeEventListener('abort', kill);
  }
}

/**
 * Our cache images of one (sanitised) repo, by `name:tag`: one `docker image ls` filtered by the
 * cache labels, so an image merely tagged ca-sbx:* by someone else is no hit. The dephash is in
 * the tag itself.
 */
async function cachedImages(repoPart: string): Promise<Set<string>> {
  const { stdout } = await docker([
    'image',
    'ls',
    '--filter',
    `label=${CACHE_LABEL}=1`,
    '--filter',
    `label=${CACHE_LABEL_REPO}=${repoPart}`,
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]);
  return new Set(
    stdout
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean),
  );
}

/** Removes a cache image (tests and `prune --images`); absent is fine. */
export async function removeImage(image: string): Promise<void> {
  await docker(['image', 'rm', '--force', '--', image], { allowFailure: true });
}
