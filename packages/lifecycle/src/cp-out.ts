import { lstat, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { BOX_USER, DockerNotFoundError, engine, hasRepoView, internalExecSpec } from '@ca-sandbox/docker';
import {
  hasControlCharacter,
  RAW_REPO_DIR,
  SHOWN_NAME_MAX,
  sanitizeName,
} from '@ca-sandbox/docker/contracts';
import { GIT_MODES, type GitMode, isUnderPath, REPO_DIR } from '@ca-sandbox/docker/process';
import { z } from 'zod';
import { assertBoxRunning, boxName, inspectBox } from './_utils.js';
import {
  CpOutDestinationError,
  CpOutSourceError,
  InvalidOptionsError,
  UnsupportedHostError,
} from './errors.js';
import { type ExtractSummary, extractTar, type PathNote } from './extract.js';
import { packTree } from './pack-tree.js';
import { removeStaleStaging, STAGING_PREFIX } from './staging.js';

export interface CpOutOptions {
  /** Replace an existing FILE at the target (never a directory, never through a symlink). */
  force?: boolean;
  /** Cap on bytes written. Default 1 GiB. */
  maxBytes?: number;
  /** Cap on tar entries. Default 100 000. */
  maxEntries?: number;
  /** Git directories: `withhold` (default) or `sanitized` (see GitMode). */
  git?: GitMode;
}

export interface CpOutResult {
  /** What was written: the destination, or the entry inside it when it is a directory; `-` for a stream. */
  destination: string;
  files: number;
  directories: number;
  bytes: number;
  /** Entries not written (links leaving the tree, devices, FIFOs, bad names, git directories), with the reason. */
  skipped: PathNote[];
  /** Entries written that a host tool may run by itself (`.envrc`, `.vscode/tasks.json`...), with the reason. */
  warnings: PathNote[];
  /** Staging directories of killed copies removed before this one. */
  removedStaging: string[];
}

const CpOutOptionsSchema = z.strictObject({
  force: z.boolean().optional(),
  maxBytes: z.number().int().positive().optional(),
  maxEntries: z.number().int().positive().optional(),
  git: z.enum(GIT_MODES).optional(),
});

/** Fills every default; InvalidOptionsError on anything else. */
export function resolveCpOutOptions(input: unknown = {}): Required<CpOutOptions> {
  const parsed = CpOutOptionsSchema.safeParse(input ?? {});
  if (!parsed.success)
    throw new InvalidOptionsError(`invalid copy options: ${parsed.error.issues[0]?.message}`);
  return {
    force: false,
    maxBytes: 1024 * 1024 * 1024,
    maxEntries: 100_000,
    git: 'withhold',
    ...parsed.data,
  };
}

/** The absolute box path; relative paths resolve against /work/repo. */
export function resolveBoxPath(boxPath: string): string {
  if (typeof boxPath !== 'string' || boxPath === '' || hasControlCharacter(boxPath)) {
    throw new CpOutSourceError('give a path inside the box without control characters');
  }
  const absolute = posix.resolve(REPO_DIR, boxPath);
  if (absolute === '/') throw new CpOutSourceError('copy a file or directory, not the whole box');
  return absolute;
}

/**
 * Copies `boxPath` out of the sandbox to `hostDest`, the only way files leave a box, with the
 * semantics of `cp` and `docker cp`: an existing directory receives the entry inside it; a missing
 * destination (whose parent exists) becomes the entry. Nothing the user did not name is replaced:
 * `force` only replaces an existing regular file of the same name; an existing directory at the
 * target is an error, never deleted; a symlink at the destination or the target is refused.
 *
 * The tar stream of `docker cp <box>:<path> -` is extracted by our own code (see extractTar) into
 * a fresh staging directory beside the target (`.ca-sbx-cp-<pid>-*`; stale ones of killed copies
 * are removed first, see removeStaleStaging), then renamed into place.
 */
export async function cpOut(
  id: string,
  boxPath: string,
  hostDest: string,
  options: CpOutOptions = {},
): Promise<CpOutResult> {
  assertPosixHost();
  const resolved = resolveCpOutOptions(options);
  const source = resolveBoxPath(boxPath);
  // Only a box: a helper (or a stranger carrying the name) is refused before anything is written.
  const viewsRepo = hasRepoView(await inspectBox(id));
  const top = posix.basename(source);
  const target = await planTarget(hostDest, top);
  await checkTarget(target, undefined, resolved.force);
  const removedStaging = await removeStaleStaging(dirname(target));
  const staging = await mkdtemp(join(dirname(target), `${STAGING_PREFIX}${process.pid}-`));
  try {
    const summary = await extractFromBox(id, source, staging, resolved, viewsRepo);
    const staged = await lstat(join(staging, top));
    await checkTarget(target, staged.isDirectory(), resolved.force);
    await rename(join(staging, top), target);
    return resultOf(target, summary, removedStaging);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * `docker cp <box>:<path> -` made safe: the same vetted tree a copy to disk would write (links
 * leaving it, devices, unsafe names and git directories left out, modes stripped), re-packed as a
 * tar stream by our own code into `output`, for the user's own tools. Staged in the OS temp dir.
 */
export async function cpOutToStream(
  id: string,
  boxPath: string,
  output: Writable,
  options: Omit<CpOutOptions, 'force'> = {},
): Promise<CpOutResult> {
  assertPosixHost();
  const resolved = resolveCpOutOptions(options);
  const source = resolveBoxPath(boxPath);
  const viewsRepo = hasRepoView(await inspectBox(id));
  const top = posix.basename(source);
  const removedStaging = await removeStaleStaging(tmpdir());
  const staging = await mkdtemp(join(tmpdir(), `${STAGING_PREFIX}${process.pid}-`));
  try {
    const summary = await extractFromBox(id, source, staging, resolved, viewsRepo);
    await packTree(staging, top, output);
    return resultOf('-', summary, removedStaging);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

// The extractor's path checks are POSIX ones: on Windows `\\` and drive letters are separators too.
function assertPosixHost(): void {
  if (process.platform === 'win32') {
    throw new UnsupportedHostError('copying out of a sandbox is not supported on windows hosts');
  }
}

function resultOf(destination: string, summary: ExtractSummary, removedStaging: string[]): CpOutResult {
  return {
    destination,
    files: summary.files,
    directories: summary.directories,
    bytes: summary.bytes,
    skipped: summary.skipped,
    warnings: summary.warnings,
    removedStaging,
  };
}

/** The kernel's views in the box: the engine's archive reads the box's files, never these. */
const KERNEL_VIEWS = /^\/(?:proc|sys|dev)(?:\/|$)/;
/**
 * The box's own tmpfs (/tmp is also its HOME: caches, test reports): they live in the box's
 * mounts, which the engine's archive does not reach (`docker cp` says the file does not exist).
 * Their tar is made in the running box instead, by its system tar as the box user, and read by
 * the same extractor as any tar from the box: as hostile.
 */
const BOX_TMPFS = /^\/(?:tmp|dev\/shm)(?:\/|$)/;

/**
 * The engine found nothing at `source`. Under /proc, /sys or /dev that is the engine's limit, not
 * the box's: those are the kernel's views, which it does not copy (`docker cp` fails the same way).
 */
function notInBoxFiles(id: string, source: string): CpOutSourceError {
  const shown = sanitizeName(source, SHOWN_NAME_MAX);
  if (!KERNEL_VIEWS.test(source)) return new CpOutSourceError(`'${shown}' does not exist in the sandbox`);
  return new CpOutSourceError(
    `'${shown}' cannot be copied out: /proc, /sys and /dev are the kernel's views in the box, and the engine copies only the box's files`,
    { hint: `read it with: ca-sandbox exec ${id} -- cat ${shellWord(shown)}` },
  );
}

/**
 * Where the engine reads `source` from. A box with a repo view (@ca-sandbox/docker repo-view) has
 * the installed deps under /work/repo through an overlay: its checkout and what the box wrote are
 * read from its own volume at RAW_REPO_DIR (named `repo` too), so a copy holds no installed
 * dependency, as a box without one copies no link into them. An ancestor of /work/repo would walk
 * the view whole: refused. Whether the box has one is read from the same inspect that found it.
 */
function repoViewSource(source: string, viewsRepo: boolean): string {
  const inRepo = isUnderPath(source, REPO_DIR);
  if (!viewsRepo || (!inRepo && !isUnderPath(REPO_DIR, source))) return source;
  if (!inRepo)
    throw new CpOutSourceError(
      `'${sanitizeName(source, SHOWN_NAME_MAX)}' holds ${REPO_DIR}, which this box sees with its installed dependencies (deps.view overlay): copy ${REPO_DIR} or a path under it`,
    );
  return `${RAW_REPO_DIR}${source.slice(REPO_DIR.length)}`;
}

/** A repo view's path the box's own volume does not have: an installed dependency, or nothing. */
function notInOwnFiles(source: string): CpOutSourceError {
  const shown = sanitizeName(source, SHOWN_NAME_MAX);
  return new CpOutSourceError(
    `'${shown}' is not among the checkout's files or the box's writes: under node_modules that is an installed dependency from the box's image, which is not copied`,
  );
}

/** `word` as one POSIX shell word, for a hint the user may paste. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9._/+-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** Streams the box path into `staging/<top>` through the extractor; throws when nothing came. */
async function extractFromBox(
  id: string,
  source: string,
  staging: string,
  options: Required<CpOutOptions>,
  viewsRepo: boolean,
): Promise<ExtractSummary> {
  const top = posix.basename(source);
  if (BOX_TMPFS.test(source)) return extractFromTmpfs(id, source, staging, options);
  const read = repoViewSource(source, viewsRepo);
  let tar: Readable;
  try {
    tar = await engine.container.archive(boxName(id), read);
  } catch (error) {
    if (error instanceof DockerNotFoundError) {
      if (/no such container/i.test(error.engineMessage)) await assertBoxRunning(id);
      if (read !== source) throw notInOwnFiles(source);
      throw notInBoxFiles(id, source);
    }
    throw error;
  }
  let summary: ExtractSummary;
  try {
    summary = await extract(tar, staging, top, options);
  } finally {
    tar.destroy();
  }
  return copiedOrThrow(summary, staging, source);
}

function extract(tar: Readable, staging: string, top: string, options: Required<CpOutOptions>) {
  return extractTar(
    tar,
    staging,
    top,
    { maxBytes: options.maxBytes, maxEntries: options.maxEntries },
    { git: options.git },
  );
}

async function copiedOrThrow(
  summary: ExtractSummary,
  staging: string,
  source: string,
): Promise<ExtractSummary> {
  const copied = await lstat(join(staging, posix.basename(source))).catch(() => undefined);
  if (!copied) {
    const why = summary.skipped[0]?.reason ?? 'nothing was in the stream';
    throw new CpOutSourceError(`nothing copied from '${sanitizeName(source, SHOWN_NAME_MAX)}': ${why}`);
  }
  return summary;
}

/** A path under the box's tmpfs (BOX_TMPFS), tarred in the running box. */
async function extractFromTmpfs(
  id: string,
  source: string,
  staging: string,
  options: Required<CpOutOptions>,
): Promise<ExtractSummary> {
  // Stopped or paused, its tmpfs is gone or takes no exec: said as such.
  await assertBoxRunning(id);
  const parent = posix.dirname(source);
  const top = posix.basename(source);
  // env -i and the system PATH (an internal exec): the image's own tar, nothing of the repo's.
  const spec = internalExecSpec(['/bin/tar', '-c', '-f', '-', '-C', parent, '--', top], { user: BOX_USER });
  const child = engine.exec.start(boxName(id), spec, { stdout: 'pipe', stderr: 'pipe' });
  const stderr: Buffer[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 16) stderr.push(chunk);
  });
  // tar found nothing at the path: it says so on stderr and exits non-zero.
  const missing = (exitCode: number | undefined) =>
    exitCode !== 0 && /Cannot stat|No such file/i.test(Buffer.concat(stderr).toString('utf8'));
  const tar = child.stdout as Readable;
  let summary: ExtractSummary;
  try {
    summary = await extract(tar, staging, top, options);
  } catch (error) {
    // A cap reached, or no tar at all.
    child.kill();
    if (missing((await child).exitCode)) throw notInBoxFiles(id, source);
    throw error;
  } finally {
    tar.destroy();
  }
  const end = await child;
  if (end.error) throw end.error;
  // An empty archive: nothing was copied, and tar said why.
  const copied = await lstat(join(staging, top)).catch(() => undefined);
  if (!copied && missing(end.exitCode)) throw notInBoxFiles(id, source);
  return copiedOrThrow(summary, staging, source);
}

/**
 * Where the copy of `top` lands: inside `hostDest` when it is an existing directory, else
 * `hostDest` itself. A destination that is a symlink is refused even when it points to a
 * directory (`dest/` included: lstat of the resolved path sees the link); one written as a
 * directory (`dir/`) must be one.
 */
async function planTarget(hostDest: string, top: string): Promise<string> {
  const destination = resolve(hostDest);
  // `dir/`, `.`, `..`, `dir/.`: the user named a directory that must exist.
  const namedAsDirectory = /(^|\/)\.{0,2}$/.test(hostDest);
  const existing = await lstat(destination).catch(() => undefined);
  if (existing?.isSymbolicLink()) {
    throw new CpOutDestinationError(
      `the destination '${sanitizeName(destination, SHOWN_NAME_MAX)}' is a symlink; refusing to write through it`,
    );
  }
  if (existing?.isDirectory()) return join(destination, top);
  if (namedAsDirectory) {
    throw new CpOutDestinationError(
      existing
        ? `the destination '${sanitizeName(destination, SHOWN_NAME_MAX)}' is not a directory`
        : `the destination directory '${sanitizeName(destination, SHOWN_NAME_MAX)}' does not exist`,
    );
  }
  return destination;
}

/**
 * Whether the copy may land at `target`: its parent is a directory, and it is free, or a regular
 * file that `force` replaces with a file (`stagedIsDirectory` once the copy is known). Checked
 * before the copy and again right before the rename.
 */
async function checkTarget(
  target: string,
  stagedIsDirectory: boolean | undefined,
  force: boolean,
): Promise<void> {
  const parent = await stat(dirname(target)).catch(() => undefined);
  if (!parent?.isDirectory()) {
    throw new CpOutDestinationError(
      `the destination's parent '${sanitizeName(dirname(target), SHOWN_NAME_MAX)}' is not a directory`,
    );
  }
  const existing = await lstat(target).catch(() => undefined);
  if (!existing) return;
  const shown = sanitizeName(target, SHOWN_NAME_MAX);
  if (existing.isSymbolicLink()) {
    throw new CpOutDestinationError(`'${shown}' is a symlink; refusing to write through it`);
  }
  if (existing.isDirectory()) {
    throw new CpOutDestinationError(
      `'${shown}' is an existing directory; it is never replaced (copy to another name, or remove it first)`,
    );
  }
  if (!existing.isFile()) throw new CpOutDestinationError(`'${shown}' exists and is not a regular file`);
  if (stagedIsDirectory) {
    throw new CpOutDestinationError(`'${shown}' is an existing file; a directory cannot replace it`);
  }
  if (!force) {
    throw new CpOutDestinationError(`'${shown}' exists (use --force to replace the file)`);
  }
}
