import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { limitFrom } from '@ca-sandbox/build';
import { currentSettings, DEFAULT_HELPER_IMAGE } from '@ca-sandbox/config';
import {
  BOX_USER,
  engine,
  hasRepoView,
  internalExecSpec,
  LABEL_ID,
  RAW_REPO_DIR,
  SH_BIN,
  sandboxLabels,
  sandboxNames,
} from '@ca-sandbox/docker';
import { ContainerNameInUseError, runContainer } from '@ca-sandbox/run';
import { sandboxStateDir } from './command-log.js';
import { HELPER_COMMAND, keepHelperAlive } from './helper.js';
import {
  FROZEN_TMPFS_ROOTS,
  IMAGE_FOLDER_COMPARE,
  IMAGE_UPPER_START,
  imageListingScript,
  LISTED_ROOTS,
  type Listing,
  ListingEntries,
  ListingReader,
  listingScript,
} from './listing-format.js';
import { LABEL_INSTANCE } from './record.js';

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
  options: {
    after?: Promise<boolean>;
    signal?: AbortSignal;
    clone?: { commit: boolean; attributes: boolean };
    /** Another script of listing-format.ts than listingScript (its arguments: `roots`). */
    script?: string;
  } = {},
): Promise<ListingRun> {
  const gated = options.after !== undefined;
  const script = options.script ?? listingScript(gated, options.clone);
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
  const limit = limitFrom(options.after, LISTING_TIMEOUT_MS, stop);
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
    if (cut) problems.push(`a listing was cut at its bound (${MAX_LISTING_BYTES} bytes) or its time limit`);
    return { bytes: size, complete: !cut && end.exitCode === 0 && problems.length === 0, problems };
  } finally {
    limit.clear();
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
  const { withCommit, ...rest } = options;
  await rm(baselineMetaPath(id), { force: true }).catch(() => undefined);
  const chunks: Buffer[] = [];
  const listing = await runListing(helper, [LISTED_ROOTS.repo], (chunk) => chunks.push(chunk), {
    ...rest,
    clone: { commit: withCommit, attributes: true },
  });
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
): Promise<{ meta: BaselineMeta; listing: Listing } | undefined> {
  const meta = await readMeta(id, instance);
  if (!meta) return undefined;
  // Read as it streams, into the listing's small form: 100,000 entries never sit in memory twice.
  // Its records take about the file's bytes: room for them at once, not grown by copies.
  const bytes = await stat(baselinePath(id)).then(
    (info) => info.size,
    () => 0,
  );
  const entries = new ListingEntries(bytes + (bytes >> 5) + 1024);
  const reader = new ListingReader((entry) => entries.set(entry));
  try {
    for await (const chunk of createReadStream(baselinePath(id), { highWaterMark: 256 * 1024 }))
      reader.push(chunk as Buffer);
  } catch {
    return undefined;
  }
  return { meta, listing: { entries, ...reader.end() } };
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

/**
 * The running box's files, each chunk to `listing` as it comes, with every process of the box
 * frozen (`docker pause`): listed in the box, a process of it could watch /proc for the listing's
 * find, stop it and move a file out of its way until it ends (red team). The lister is a container
 * of its own with the volume read-only (a paused box takes no exec); under runc it also joins the
 * box's PID namespace and lists the box's own tmpfs, /tmp and /dev/shm, through /proc/1/root, so
 * nothing of the box runs between one listing and the next (a file moved from /tmp to /work/repo
 * in between would be in neither). Under gVisor the box's tmpfs lives in
 * its sentry, which no other container reaches: they are listed in the box once it runs again (a
 * box someone else paused: not at all). When the freeze cannot be had (a create or another report
 * holds the lister's name), everything is listed in the box, and `problems` says so.
 */
export async function listBox(
  id: string,
  listing: { push(chunk: Buffer): void; nextListing(): void },
  box: {
    /** Stopped: nothing of it runs; the lister lists its volume, its tmpfs went when it stopped. */
    running: boolean;
    /** Paused already (by someone else): it stays so, and takes no exec for its tmpfs. */
    paused: boolean;
    /** The box's runtime: only under runc does the lister reach its tmpfs. */
    runtime: string;
  },
  signal?: AbortSignal,
): Promise<ListingRun> {
  const name = sandboxNames(id).box;
  const push = (chunk: Buffer) => listing.push(chunk);
  const options = signal ? { signal } : {};
  if (!box.running) {
    const repo = await listFrozen(id, listing, { pause: false, tmpfs: false }, signal);
    return {
      ...repo,
      complete: false,
      problems: [
        ...repo.problems,
        'the box is stopped: what its processes left in /tmp and /dev/shm went with it (tmpfs); /work/repo was listed',
      ],
    };
  }
  const tmpfsFrozen = box.runtime === 'runc';
  // The lister's name is taken (a create or another report of the sandbox runs): unfrozen, said.
  const frozen = await listFrozen(id, listing, { pause: !box.paused, tmpfs: tmpfsFrozen }, signal).catch(
    (error: unknown) => {
      if (!(error instanceof ContainerNameInUseError) || box.paused) throw error;
      return undefined;
    },
  );
  if (frozen && tmpfsFrozen) return frozen;
  // In the box, a repo view's checkout is its own volume at RAW_REPO_DIR (not the installed deps).
  const repoRoot = !frozen && (await boxHasRepoView(name)) ? RAW_REPO_DIR : LISTED_ROOTS.repo;
  const repo = frozen ?? (await runListing(name, [repoRoot], push, options));
  listing.nextListing();
  if (box.paused)
    return {
      bytes: repo.bytes,
      complete: false,
      problems: [...repo.problems, 'the box is paused: /tmp and /dev/shm were not listed'],
    };
  const tmp = await runListing(name, [LISTED_ROOTS.tmp, LISTED_ROOTS.shm], push, options);
  const unfrozen = frozen
    ? []
    : ['/work/repo was listed without freezing the box (its lister could not start)'];
  return {
    bytes: repo.bytes + tmp.bytes,
    complete: repo.complete && tmp.complete && unfrozen.length === 0,
    problems: [...repo.problems, ...tmp.problems, ...unfrozen],
  };
}

async function boxHasRepoView(name: string): Promise<boolean> {
  const box = await engine.container.find(name);
  return box !== undefined && hasRepoView(box);
}

/**
 * /work/repo, and with `tmpfs` the box's /tmp and /dev/shm, listed from a lister container while
 * the box is frozen (see listBox): paused by us (`pause`) and unpaused once the lister is gone,
 * paused by someone else, or stopped.
 */
async function listFrozen(
  id: string,
  listing: { push(chunk: Buffer): void; nextListing(): void },
  { pause, tmpfs }: { pause: boolean; tmpfs: boolean },
  signal?: AbortSignal,
): Promise<ListingRun> {
  const names = sandboxNames(id);
  const push = (chunk: Buffer) => listing.push(chunk);
  let stopHeartbeat = () => {};
  let started = false;
  if (pause) await engine.container.pause(names.box);
  try {
    await runContainer({
      sandboxId: id,
      name: names.helper,
      image: currentSettings().value('helperImage') ?? DEFAULT_HELPER_IMAGE,
      role: 'helper',
      volume: names.volume,
      volumeReadOnly: true,
      network: 'none',
      ...(tmpfs ? { pidOf: names.box } : {}),
      labels: sandboxLabels(id, { [LABEL_INSTANCE]: randomBytes(8).toString('hex') }),
      command: HELPER_COMMAND,
    });
    started = true;
    stopHeartbeat = keepHelperAlive(names.helper);
    const roots = tmpfs
      ? [LISTED_ROOTS.repo, FROZEN_TMPFS_ROOTS.tmp, FROZEN_TMPFS_ROOTS.shm]
      : [LISTED_ROOTS.repo];
    const box = await runListing(names.helper, roots, push, signal ? { signal } : {});
    stopHeartbeat();
    started = false;
    await engine.container.remove(names.helper, { force: true });
    const image = await listImageWrites(id, listing, tmpfs, signal);
    return image
      ? {
          bytes: box.bytes + image.bytes,
          complete: box.complete && image.complete,
          problems: [...box.problems, ...image.problems],
        }
      : box;
  } finally {
    stopHeartbeat();
    // Removed before the box runs again. A lister left behind would hold nothing the box lacks
    // (the volume read-only, no network): the box is unpaused all the same, never left hanging.
    if (started) await engine.container.remove(names.helper, { force: true }).catch(() => undefined);
    if (pause) await engine.container.unpause(names.box);
  }
}

/**
 * What the box wrote in its writable view of its image: the view's upper volume (when the box has
 * one), listed by a lister of its own with that volume read-only where a helper's volume goes,
 * while the box is still frozen. With `joined` (a running runc box) the lister joins its PID
 * namespace too, to compare each folder written in the view with the image's (a folder replaced
 * whole hides what it removed: imageListingScript). Undefined: the box has no view.
 */
async function listImageWrites(
  id: string,
  listing: { push(chunk: Buffer): void; nextListing(): void },
  joined: boolean,
  signal?: AbortSignal,
): Promise<ListingRun | undefined> {
  const names = sandboxNames(id);
  const upper = await engine.volume.find(names.imageView.upper);
  if (upper?.Labels[LABEL_ID] !== id) return undefined;
  listing.nextListing();
  let stopHeartbeat = () => {};
  try {
    await runContainer({
      sandboxId: id,
      name: names.helper,
      image: currentSettings().value('helperImage') ?? DEFAULT_HELPER_IMAGE,
      role: 'helper',
      volume: names.imageView.upper,
      volumeReadOnly: true,
      network: 'none',
      ...(joined ? { pidOf: names.box } : {}),
      labels: sandboxLabels(id, { [LABEL_INSTANCE]: randomBytes(8).toString('hex') }),
      command: HELPER_COMMAND,
    });
    stopHeartbeat = keepHelperAlive(names.helper);
    return await runListing(
      names.helper,
      joined ? [IMAGE_UPPER_START, IMAGE_FOLDER_COMPARE] : [IMAGE_UPPER_START],
      (chunk) => listing.push(chunk),
      { script: imageListingScript(joined), ...(signal ? { signal } : {}) },
    );
  } finally {
    stopHeartbeat();
    await engine.container.remove(names.helper, { force: true }).catch(() => undefined);
  }
}
