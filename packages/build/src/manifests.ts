import {
  BOX_USER,
  DOCKER_NAME_PATTERN,
  engine,
  internalExecSpec,
  REPO_DIR,
  SH_BIN,
} from '@ca-sandbox/docker';
import { extract, type Header } from 'tar-stream';
import { z } from 'zod';
import { limitFrom, parseOptions } from './_utils.js';
import { ManifestLimitError, ManifestReadError } from './errors.js';
import { localArchivePaths } from './local-archives.js';
import {
  GO_VENDOR_LIST,
  isManifestPath,
  isUnderPrunedDir,
  MANIFEST_GLOBS,
  MANIFEST_NAMES,
  MANIFEST_PATH_GLOBS,
  PRUNED_DIRS,
  unsafePathReason,
  VENDOR_DIR,
} from './manifest-names.js';
import {
  parseRootSourcesLine,
  ROOT_SOURCE_EXTENSIONS,
  ROOT_SOURCES_MARKER,
  ROOT_SOURCES_MAX_BYTES,
  type RootSourceCounts,
} from './root-sources.js';

/** One manifest or lockfile read out of the sandbox volume. */
export interface ManifestFile {
  /** Relative to the repo root, posix separators, validated safe. */
  path: string;
  content: Buffer;
}

/** A manifest-named entry that was not read, and why (symlink, odd name, ...). */
export interface SkippedManifest {
  path: string;
  reason: string;
}

export const DEFAULT_MAX_FILES = 5000;
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_TOTAL_BYTES = 64 * 1024 * 1024;

const ReadManifestsOptionsSchema = z.strictObject({
  root: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*$/, 'root must be an absolute path of [A-Za-z0-9._/-]')
    .default(REPO_DIR),
  maxFiles: z.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_FILES),
  maxFileBytes: z.number().int().min(1).default(DEFAULT_MAX_FILE_BYTES),
  maxTotalBytes: z.number().int().min(1).default(DEFAULT_MAX_TOTAL_BYTES),
  /** The read's time limit; with `after`, counted from the moment `after` settles (the wait for
   * the checkout is the clone's, bounded by its own limits, and always settles). */
  timeoutMs: z.number().int().min(1).default(120_000),
  onSkip: z.custom<(skipped: SkippedManifest) => void>((v) => typeof v === 'function').optional(),
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal).optional(),
  /**
   * Start the exec now, read when this settles true: the exec's start (about 70 ms of the engine)
   * goes beside the clone that writes the checkout, and `find` waits on its stdin for the word.
   * False or a rejection: nothing is read, ManifestReadError.
   */
  after: z.custom<Promise<boolean>>((v) => v instanceof Promise).optional(),
});
export type ReadManifestsOptions = z.input<typeof ReadManifestsOptionsSchema>;
type ResolvedReadOptions = z.output<typeof ReadManifestsOptionsSchema>;

/** Validates readManifests options and fills every default. */
export function resolveReadManifestsOptions(input: unknown = {}): ResolvedReadOptions {
  return parseOptions(ReadManifestsOptionsSchema, input, 'readManifests');
}

// find never follows symlinks (-P); symlinks named like a manifest are listed so that tar stores
// them as symlink entries, which we report and never resolve. head bounds the list in the
// container: one more than the cap tells us the cap was hit without streaming a huge tree.
function findScript(gated: boolean): string {
  const quote = (s: string) => `'${s}'`;
  const prune = PRUNED_DIRS.filter((d) => d !== VENDOR_DIR)
    .map((d) => `-name ${quote(d)}`)
    .join(' -o ');
  const names = [
    ...[...MANIFEST_NAMES, ...MANIFEST_GLOBS].map((n) => `-name ${quote(n)}`),
    ...MANIFEST_PATH_GLOBS.map((p) => `-path ${quote(p)}`),
  ].join(' -o ');
  // The root's regular files (never a symlink: find -P) by source extension, one token per file,
  // as the first stderr line: extensions only, never a name, so a hostile name cannot forge it.
  const sources = ROOT_SOURCE_EXTENSIONS.map(
    (ext) => `-name ${quote(`*.${ext}`)} -printf ${quote(`${ext} `)}`,
  ).join(' -o ');
  return [
    // Gated (ReadManifestsOptions.after): not a file is looked at before the host says 'go'.
    ...(gated
      ? ['IFS= read -r go || go=', '[ "$go" = go ] || { echo "the checkout was not written" >&2; exit 96; }']
      : []),
    'cd -- "$1" || { echo "cannot enter $1" >&2; exit 97; }',
    `printf '${ROOT_SOURCES_MARKER} %s\\n' "$(find . -mindepth 1 -maxdepth 1 -type f \\( ${sources} \\) 2>/dev/null | head -c ${ROOT_SOURCES_MAX_BYTES})" >&2`,
    // A vendor directory is entered for its Go vendor list alone: every other entry in it is
    // pruned (its subdirectories are never walked, its files never listed).
    `find . \\( ${prune} \\) -prune -o -type f -path ${quote(`*/${GO_VENDOR_LIST}`)} -print0 -o -path ${quote(`*/${VENDOR_DIR}/*`)} -prune -o \\( -type f -o -type l \\) \\( ${names} \\) -print0 2>/dev/null` +
      ' | head -z -n "$2"' +
      ' | tar --null --no-recursion --hard-dereference --numeric-owner -T - -cf -',
  ].join('\n');
}

/**
 * Reads the manifest/lockfile set out of a RUNNING helper container that has the sandbox volume
 * at `root` (default /work/repo): `find` (no symlink following, pruning .git/node_modules/vendor)
 * piped to `tar -c` inside the container, the stream parsed here. Never reads a host checkout.
 * Symlinks and unsafe names are skipped (reported through `onSkip`); caps throw ManifestLimitError.
 */
export async function readManifests(
  containerId: string,
  options: ReadManifestsOptions = {},
): Promise<ManifestFile[]> {
  return (await readManifestSet(containerId, options)).files;
}

/** What one read of the checkout tells: the manifests, and the root's source files by extension. */
export interface ManifestSet {
  files: ManifestFile[];
  /** Regular files directly at the repo root per source extension (symlinks never count). */
  rootSources: RootSourceCounts;
}

/** readManifests, with the root's source-file counts the same exec prints on its stderr. */
export async function readManifestSet(
  containerId: string,
  options: ReadManifestsOptions = {},
): Promise<ManifestSet> {
  const opts = resolveReadManifestsOptions(options);
  if (!DOCKER_NAME_PATTERN.test(containerId))
    throw new ManifestReadError(`invalid container reference: ${JSON.stringify(containerId.slice(0, 80))}`);
  // PATH fixed and an empty environment: find, head and tar are the system's, never the repo's.
  // An Engine API exec (no docker client process: this runs on every create, cache hit included),
  // its stdout demultiplexed into the tar parser as it comes.
  const gated = opts.after !== undefined;
  const spec = internalExecSpec(
    [SH_BIN, '-c', findScript(gated), 'sh', opts.root, String(opts.maxFiles + 1)],
    { user: BOX_USER, ...(gated ? { stdin: true } : {}) },
  );
  const child = engine.exec.start(containerId, spec, { stdout: 'pipe', stderr: 'pipe' });
  // Dropping the connection ends the stream; tar in the container then dies on its closed pipe.
  const stop = () => child.kill();
  // The time limit is the read's own: a slow but valid clone must not use it up while we wait.
  const limit = limitFrom(opts.after, opts.timeoutMs, stop);
  opts.after?.then(
    (go) => child.stdin?.end(go ? 'go\n' : ''),
    () => child.stdin?.end(''),
  );
  const timeoutError = () =>
    new ManifestReadError(`reading manifests from ${containerId} did not finish within ${opts.timeoutMs} ms`);
  const stderr: Buffer[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 64) stderr.push(chunk);
  });
  opts.signal?.addEventListener('abort', stop, { once: true });
  if (opts.signal?.aborted) stop();
  try {
    const files = await parseManifestTar(child.stdout as NodeJS.ReadableStream, opts);
    const result = await child;
    if (opts.signal?.aborted) throw new ManifestReadError('reading manifests was aborted');
    if (limit.expired) throw timeoutError();
    if (result.error) throw result.error;
    const errText = Buffer.concat(stderr).toString('utf8');
    if (result.exitCode !== 0) {
      const text =
        errText
          .split('\n')
          .filter((line) => !line.startsWith(ROOT_SOURCES_MARKER))
          .join('\n')
          .trim()
          .split('\n')[0] ?? '';
      throw new ManifestReadError(
        `reading manifests from ${containerId} failed (exit ${result.exitCode ?? 'killed'}): ${text || 'no output'}`,
      );
    }
    const archives = await readLocalArchives(containerId, opts, files);
    return {
      files: archives.length ? sortedByPath([...files, ...archives]) : files,
      rootSources: parseRootSourcesLine(errText.split('\n')[0] ?? ''),
    };
  } catch (error) {
    stop();
    await child;
    // A stream cut by the time limit fails the tar parser too: the limit is the cause to say.
    if (limit.expired && !(error instanceof ManifestLimitError)) throw timeoutError();
    if (error instanceof ManifestLimitError || error instanceof ManifestReadError) throw error;
    throw new ManifestReadError(`reading manifests from ${containerId} failed: ${(error as Error).message}`);
  } finally {
    limit.clear();
    opts.signal?.removeEventListener('abort', stop);
  }
}

// The archives named by path (local-archives.ts), read by name: regular files only (no symlink,
// at no depth: the real path must be the path under the root), never outside the root.
const NAMED_FILES_SCRIPT = [
  'cd -- "$1" || { echo "cannot enter $1" >&2; exit 97; }',
  'root="$(pwd -P)"; max="$2"; shift 2',
  'for p do',
  '  [ -f "./$p" ] && [ ! -L "./$p" ] || continue',
  // One archive the install may never need must not fail the whole read: too large, it is left out.
  '  [ "$(stat -c %s -- "./$p")" -le "$max" ] || continue',
  '  [ "$(readlink -f -- "./$p")" = "$root/$p" ] || continue',
  '  printf \'./%s\\0\' "$p"',
  'done | tar --null --no-recursion --numeric-owner -T - -cf -',
].join('\n');

/**
 * The package archives the manifests just read name (`file:vendor/dep.tgz`): read in a second exec
 * of the helper, only when some are named, under the same caps (what the manifests used counts).
 */
async function readLocalArchives(
  containerId: string,
  opts: ResolvedReadOptions,
  manifests: readonly ManifestFile[],
): Promise<ManifestFile[]> {
  const wanted = new Set(localArchivePaths(manifests));
  for (const file of manifests) wanted.delete(file.path);
  if (wanted.size === 0) return [];
  const used = manifests.reduce((sum, file) => sum + file.content.length, 0);
  const room = Math.min(opts.maxFileBytes, Math.max(0, opts.maxTotalBytes - used));
  const spec = internalExecSpec(
    [SH_BIN, '-c', NAMED_FILES_SCRIPT, 'sh', opts.root, String(room), ...wanted],
    {
      user: BOX_USER,
    },
  );
  const child = engine.exec.start(containerId, spec, { stdout: 'pipe', stderr: 'pipe' });
  const stop = () => child.kill();
  const timer = setTimeout(stop, opts.timeoutMs);
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    const files = await parseManifestTar(
      child.stdout as NodeJS.ReadableStream,
      {
        ...opts,
        maxFiles: Math.max(1, opts.maxFiles - manifests.length),
        maxTotalBytes: Math.max(1, opts.maxTotalBytes - used),
      },
      (path) => wanted.has(path),
    );
    const result = await child;
    if (opts.signal?.aborted) throw new ManifestReadError('reading manifests was aborted');
    if (result.exitCode !== 0)
      throw new ManifestReadError(
        `reading the package archives the manifests name failed (exit ${result.exitCode ?? 'killed'})`,
      );
    return files;
  } catch (error) {
    stop();
    await child;
    throw error;
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', stop);
  }
}

function sortedByPath(files: ManifestFile[]): ManifestFile[] {
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Parses a tar stream of manifests with the caps and rules of readManifests. Exported for tests
 * and for callers that obtain the stream another way (e.g. an archive of a container's path).
 */
export async function parseManifestTar(
  stream: NodeJS.ReadableStream | AsyncIterable<Buffer>,
  options: Partial<ResolvedReadOptions> = {},
  /** Which paths are taken (the rest is skipped): manifest names, by default. */
  accept: (path: string) => boolean = isManifestInWalk,
): Promise<ManifestFile[]> {
  const maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
  const onSkip = options.onSkip ?? (() => undefined);
  const tar = extract();
  const feed = (async () => {
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (tar.destroyed) break;
        // A destroyed extractor never drains: wait for either, so the feed always ends.
        if (!tar.write(chunk)) await writable(tar);
      }
      tar.end(undefined);
    } catch (error) {
      tar.destroy(error as Error);
    }
  })();
  const files: ManifestFile[] = [];
  const seen = new Set<string>();
  let entries = 0;
  let total = 0;
  try {
    for await (const entry of tar) {
      const header: Header = entry.header;
      entries += 1;
      if (entries > maxFiles) throw new ManifestLimitError('maxFiles', maxFiles, 'count');
      const path = normaliseEntryName(header.name);
      const reason = skipReason(path, header, seen, accept);
      if (reason) {
        onSkip({ path: path.slice(0, 300), reason });
        entry.resume();
        continue;
      }
      const size = header.size ?? 0;
      if (size > maxFileBytes)
        throw new ManifestLimitError(
          'maxFileBytes',
          maxFileBytes,
          `${JSON.stringify(path.slice(0, 200))} (${size} bytes)`,
        );
      total += size;
      if (total > maxTotalBytes)
        throw new ManifestLimitError('maxTotalBytes', maxTotalBytes, 'set total size');
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      seen.add(path);
      files.push({ path, content: Buffer.concat(chunks) });
    }
  } catch (error) {
    // Stop reading: the source is destroyed (the caller drops the exec's connection), the feed winds down.
    tar.destroy();
    (stream as { destroy?: () => void }).destroy?.();
    if (error instanceof ManifestLimitError) throw error;
    throw new ManifestReadError(`the manifest tar stream is invalid: ${(error as Error).message}`);
  }
  await feed;
  return sortedByPath(files);
}

/** The manifest walk's rule: a manifest name, not under a pruned directory. */
function isManifestInWalk(path: string): boolean {
  return isManifestPath(path) && !isUnderPrunedDir(path);
}

function writable(tar: ReturnType<typeof extract>): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      tar.off('drain', done);
      tar.off('close', done);
      resolve();
    };
    tar.on('drain', done);
    tar.on('close', done);
  });
}

function normaliseEntryName(name: string): string {
  let path = name;
  while (path.startsWith('./')) path = path.slice(2);
  return path;
}

function skipReason(
  path: string,
  header: Header,
  seen: Set<string>,
  accept: (path: string) => boolean,
): string | undefined {
  const unsafe = unsafePathReason(path);
  if (unsafe) return unsafe;
  if (header.type === 'symlink') return 'symlink (not followed)';
  if (header.type !== 'file' && header.type !== 'contiguous-file')
    return `not a regular file (${header.type ?? 'unknown'})`;
  if (!accept(path)) return isManifestPath(path) ? 'under a pruned directory' : 'not a manifest name';
  if (seen.has(path)) return 'duplicate entry';
  return undefined;
}
