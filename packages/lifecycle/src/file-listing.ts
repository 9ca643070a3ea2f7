import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BOX_USER, engine, internalExecSpec, SH_BIN } from '@ca-sandbox/docker';
import { sandboxStateDir } from './command-log.js';
import { LISTED_ROOTS, listingScript } from './file-changes.js';

/**
 * The two listings the report's "what changed" compares (file-changes.ts): the clone's, taken in
 * the helper once the checkout is written and kept on the host beside the command log (the box
 * never reaches it), and the box's, taken when the report is made.
 */

/** Past this a listing is cut (about 500,000 entries) and said to be incomplete. */
export const MAX_LISTING_BYTES = 64 * 1024 * 1024;
const LISTING_TIMEOUT_MS = 120_000;

export interface ListingRun {
  /** Bytes handed to `onChunk`. */
  bytes: number;
  /** False when cut at MAX_LISTING_BYTES or the time limit, or find could not read everything. */
  complete: boolean;
  /** find's complaints (unreadable directories), first lines only. */
  problems: string[];
}

/**
 * Lists `roots` in `container` as the box user, each chunk of find's output to `onChunk` as it
 * comes (at most MAX_LISTING_BYTES). With `after`, the exec starts now and lists once `after`
 * settles true (an exec start costs the engine ~70 ms: it overlaps the clone).
 */
async function runListing(
  container: string,
  roots: readonly string[],
  onChunk: (chunk: Buffer) => void,
  options: { after?: Promise<boolean>; signal?: AbortSignal; withCommit?: boolean } = {},
): Promise<ListingRun> {
  const gated = options.after !== undefined;
  const script = listingScript(gated, options.withCommit === true);
  const spec = internalExecSpec([SH_BIN, '-c', script, 'sh', ...roots], {
    user: BOX_USER,
    ...(gated ? { stdin: true } : {}),
  });
  const child = engine.exec.start(container, spec, { stdout: 'pipe', stderr: 'pipe' });
  let cut = false;
  const stop = () => {
    cut = true;
    child.kill();
  };
  options.after?.then(
    (go) => child.stdin?.end(go ? 'go\n' : ''),
    () => child.stdin?.end(''),
  );
  // The time limit counts from the word: a slow clone must not use it up.
  const arm = () => setTimeout(stop, LISTING_TIMEOUT_MS);
  let timer: NodeJS.Timeout | undefined;
  if (options.after)
    options.after.then(
      () => (timer = arm()),
      () => (timer = arm()),
    );
  else timer = arm();
  options.signal?.addEventListener('abort', stop, { once: true });
  let size = 0;
  child.stdout?.on('data', (chunk: Buffer) => {
    if (size >= MAX_LISTING_BYTES) return;
    const room = MAX_LISTING_BYTES - size;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    size += kept.length;
    onChunk(kept);
    if (size >= MAX_LISTING_BYTES) stop();
  });
  const errors: Buffer[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    if (errors.length < 16) errors.push(chunk);
  });
  try {
    const end = await child;
    const problems = Buffer.concat(errors).toString('utf8').split('\n').filter(Boolean).slice(0, 10);
    if (end.error && !cut) throw end.error;
    return { bytes: size, complete: !cut && end.exitCode === 0 && problems.length === 0, problems };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', stop);
  }
}

function baselinePath(id: string): string {
  return join(sandboxStateDir(id), 'clone.listing');
}

function baselineMetaPath(id: string): string {
  return join(sandboxStateDir(id), 'clone.listing.json');
}

export interface BaselineMeta {
  /** The create that took it (the box's `ca.sandbox.instance` label): a leftover of another is not used. */
  instance: string;
  takenAt: string;
  complete: boolean;
}

/**
 * Takes the clone's listing of /work/repo in the helper once `after` says the checkout is written,
 * and keeps it on the host. Best effort (a failure is the report's "no baseline", never the
 * create's); any earlier sandbox's listing of this id goes first.
 */
export async function captureCloneListing(
  helper: string,
  id: string,
  instance: string,
  options: { after: Promise<boolean>; signal?: AbortSignal; withCommit: boolean },
): Promise<void> {
  await rm(baselineMetaPath(id), { force: true }).catch(() => undefined);
  const chunks: Buffer[] = [];
  const listing = await runListing(helper, [LISTED_ROOTS.repo], (chunk) => chunks.push(chunk), options);
  if (!(await options.after.catch(() => false))) return;
  await mkdir(sandboxStateDir(id), { recursive: true, mode: 0o700 });
  await writeFile(baselinePath(id), Buffer.concat(chunks), { mode: 0o600 });
  const meta: BaselineMeta = { instance, takenAt: new Date().toISOString(), complete: listing.complete };
  // The meta last: a listing without it is never read.
  await writeFile(baselineMetaPath(id), JSON.stringify(meta), { mode: 0o600 });
}

/** The clone's listing of `id` when it was taken by the create `instance`, else undefined. */
export async function readCloneListing(
  id: string,
  instance: string,
): Promise<{ meta: BaselineMeta; bytes: Buffer } | undefined> {
  const meta = await readMeta(id, instance);
  if (!meta) return undefined;
  const bytes = await readFile(baselinePath(id)).catch(() => undefined);
  return bytes ? { meta, bytes } : undefined;
}

async function readMeta(id: string, instance: string): Promise<BaselineMeta | undefined> {
  try {
    const meta = JSON.parse(await readFile(baselineMetaPath(id), 'utf8')) as Partial<BaselineMeta>;
    if (meta.instance !== instance || typeof meta.takenAt !== 'string') return undefined;
    return { instance, takenAt: meta.takenAt, complete: meta.complete === true };
  } catch {
    return undefined;
  }
}

/** Removes the clone's listing of `id` taken by the create `instance` (that create failed). */
export async function removeCloneListing(id: string, instance: string): Promise<void> {
  if (!(await readMeta(id, instance))) return;
  await rm(baselineMetaPath(id), { force: true }).catch(() => undefined);
  await rm(baselinePath(id), { force: true }).catch(() => undefined);
}

/** The running box's listing of /work/repo and /tmp, each chunk to `onChunk` as it comes. */
export function listBox(
  container: string,
  onChunk: (chunk: Buffer) => void,
  signal?: AbortSignal,
): Promise<ListingRun> {
  return runListing(
    container,
    [LISTED_ROOTS.repo, LISTED_ROOTS.tmp, LISTED_ROOTS.shm],
    onChunk,
    signal ? { signal } : {},
  );
}
