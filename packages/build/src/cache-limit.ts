import { mkdir, open, readFile, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CACHE_MAX_SIZE_DEFAULT, currentSettings, stateDir } from '@ca-sandbox/config';
import {
  CACHE_IMAGE_REPOSITORY,
  CACHE_LABEL,
  CACHE_LABEL_REPO,
  CACHE_LABEL_SOURCE,
  engine,
  formatSize,
  parseSize,
} from '@ca-sandbox/docker';
import { z } from 'zod';

/**
 * The deps image cache (`ca-sbx:*` images with our cache label) kept within a size: after a create
 * that built an image, the least recently used images go until the cache fits `cache.maxSize`.
 * Never an image a container uses (any state), never the toolchain prep images (one per base, the
 * parents every deps image shares), never an image without our cache label. An image's size is
 * what removing it frees: its layers above its nearest tagged ancestor (the prep or base image).
 */

/** One image of the cache, as `ls --images` shows it. */
export interface CacheImage {
  id: string;
  /** Its `ca-sbx:*` tags (a deps tag, and the source's `-last` tag when it is the latest). */
  tags: string[];
  /** Bytes its own layers hold (above its nearest tagged ancestor): what its removal frees. */
  bytes: number;
  repo: string;
  /** The source that built it (URL without credentials, or a local path). */
  source: string;
  /** Creation time, ms since the epoch. */
  createdAt: number;
  /** The last create that used it (ms since the epoch), else its creation. */
  lastUsedAt: number;
  /** A container (any state) runs it: never evicted. */
  inUse: boolean;
}

const PREP_PREFIX = `${CACHE_IMAGE_REPOSITORY}:_prep-`;
/** When a share of the disk cannot be measured (a remote engine): this fixed bound. */
export const CACHE_FALLBACK_BYTES = 20 * 1024 ** 3;

const UseFileSchema = z.object({
  version: z.literal(1),
  used: z.record(z.string(), z.number()),
});

function useFile(): string {
  return join(stateDir(), 'image-use.json');
}

async function readUses(): Promise<Record<string, number>> {
  try {
    const parsed = UseFileSchema.safeParse(JSON.parse(await readFile(useFile(), 'utf8')));
    return parsed.success ? parsed.data.used : {};
  } catch {
    return {};
  }
}

/** Written whole and renamed: a reader never sees half a file. */
async function writeState(path: string, value: unknown): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}

async function writeUses(used: Record<string, number>): Promise<void> {
  // A concurrent create may lose one time stamp, which only makes its image look a little older.
  await writeState(useFile(), { version: 1, used });
}

/**
 * The layers of each cache image (id and size of each history step, newest first), by image id.
 * An image id is the hash of its configuration, so its history never changes: kept on the host,
 * the cache's sizes need one `history` call per new image, not one per image after every build
 * (1,000 images took 4.5 s of each cold create here). A lost or unreadable file costs the calls.
 * `listed` is the cache's total at the last full listing (enforceCacheLimit's), when, and the ids
 * it counts: what a create's bound adds its new image to (see enforceCacheLimit's `built`).
 */
const LayerFileSchema = z.object({
  version: z.literal(1),
  layers: z.record(z.string(), z.array(z.tuple([z.string(), z.number()]))),
  // A `listed` that does not parse (hand-edited, an older shape) is only not trusted: the layers stay.
  listed: z
    .object({ at: z.number(), total: z.number().nonnegative(), ids: z.array(z.string()) })
    .optional()
    .catch(undefined),
});
type CacheMemo = z.infer<typeof LayerFileSchema>;

function layerFile(): string {
  return join(stateDir(), 'image-layers.json');
}

async function readMemo(): Promise<CacheMemo> {
  try {
    const parsed = LayerFileSchema.safeParse(JSON.parse(await readFile(layerFile(), 'utf8')));
    return parsed.success ? parsed.data : { version: 1, layers: {} };
  } catch {
    return { version: 1, layers: {} };
  }
}

/** How long a writer waits for the layers file's lock, and when a lock is a dead writer's. */
const LOCK_WAIT_MS = 3000;
const LOCK_STALE_MS = 30_000;

/**
 * Reads the layers file again under its lock, applies `change` and writes what it returns
 * (nothing when it returns undefined): creates running at once each add their own image to the
 * total instead of the last write winning. Best effort: without the lock within LOCK_WAIT_MS,
 * nothing is written and undefined is returned.
 */
async function updateMemo<T>(
  change: (memo: CacheMemo) => { memo?: CacheMemo; value: T },
): Promise<T | undefined> {
  const lock = `${layerFile()}.lock`;
  await mkdir(join(lock, '..'), { recursive: true, mode: 0o700 }).catch(() => undefined);
  const until = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await (await open(lock, 'wx', 0o600)).close();
      break;
    } catch (error) {
      // Only a lock held by another writer is waited for (a state dir we cannot write is not).
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
      const held = await stat(lock).catch(() => undefined);
      if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) await rm(lock, { force: true });
      else if (Date.now() > until) return undefined;
      else await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  try {
    const { memo, value } = change(await readMemo());
    if (memo) await writeState(layerFile(), memo);
    return value;
  } catch {
    return undefined;
  } finally {
    await rm(lock, { force: true });
  }
}

/** Remembers that a create used the cache image `tag` now (best effort: a failure is ignored). */
export async function noteCacheUse(tag: string, now = Date.now()): Promise<void> {
  if (!tag.startsWith(`${CACHE_IMAGE_REPOSITORY}:`)) return;
  try {
    const used = await readUses();
    used[tag] = now;
    await writeUses(used);
  } catch {
    // The cache only looks older than it is.
  }
}

/**
 * Every image of the cache (the prep images aside), least recently used first. `only` narrows it
 * (tests and benches never count or touch images they did not make). What it learns of new
 * images' layers goes into the layers file.
 */
export async function listCacheImages(
  only: (image: CacheImage) => boolean = () => true,
): Promise<CacheImage[]> {
  const [all, containers, used, memo] = await Promise.all([
    engine.image.list(),
    engine.container.list({ all: true }),
    readUses(),
    readMemo(),
  ]);
  const known = memo.layers;
  const tagged = new Set(all.filter((image) => image.tags.length > 0).map((image) => image.id));
  const running = new Set(containers.map((item) => item.imageId).filter(Boolean));
  const ours = all.filter(
    (image) =>
      image.labels[CACHE_LABEL] === '1' &&
      image.tags.some((tag) => tag.startsWith(`${CACHE_IMAGE_REPOSITORY}:`)) &&
      !image.tags.some((tag) => tag.startsWith(PREP_PREFIX)),
  );
  const rows = ours
    .map((image): CacheImage => {
      const tags = image.tags.filter((tag) => tag.startsWith(`${CACHE_IMAGE_REPOSITORY}:`)).sort();
      const createdAt = image.created * 1000;
      return {
        id: image.id,
        tags,
        bytes: 0,
        repo: image.labels[CACHE_LABEL_REPO] ?? '',
        source: image.labels[CACHE_LABEL_SOURCE] ?? '',
        createdAt,
        lastUsedAt: Math.max(createdAt, ...tags.map((tag) => used[tag] ?? 0)),
        inUse: running.has(image.id),
      };
    })
    .filter(only);
  // One history per image not seen before, measured only for the images asked for.
  let learned = false;
  await Promise.all(
    rows.map(async (row) => {
      let layers = known[row.id];
      if (!layers) {
        layers = await engine.image
          .layers(row.id)
          .then((history) => history.map((layer): [string, number] => [layer.id, layer.size]))
          .catch(() => undefined);
        if (!layers) return;
        known[row.id] = layers;
        learned = true;
      }
      row.bytes = ownBytes(layers, tagged);
    }),
  );
  // What is kept is what the engine still has: images removed meanwhile leave the file.
  const present = new Set(ours.map((image) => image.id));
  const stale = Object.keys(known).some((id) => !present.has(id));
  if (learned || stale)
    await updateMemo((fresh) => ({
      memo: {
        ...fresh,
        layers: Object.fromEntries(
          Object.entries({ ...fresh.layers, ...known }).filter(([id]) => present.has(id)),
        ),
      },
      value: undefined,
    }));
  return rows.sort((a, b) => a.lastUsedAt - b.lastUsedAt || a.createdAt - b.createdAt);
}

/** Bytes of the image's layers above its nearest tagged ancestor (all of them when it has none). */
function ownBytes(layers: readonly [id: string, size: number][], tagged: ReadonlySet<string>): number {
  let bytes = 0;
  for (const [index, [id, size]] of layers.entries()) {
    if (index > 0 && tagged.has(id)) break;
    bytes += size;
  }
  return bytes;
}

/** The bound in bytes `cache.maxSize` gives (undefined: off), and how it was set. */
export async function cacheLimit(
  setting: string = String(currentSettings().value('cache.maxSize') ?? CACHE_MAX_SIZE_DEFAULT),
): Promise<{ bytes: number | undefined; described: string }> {
  if (setting === 'off') return { bytes: undefined, described: 'off' };
  const share = /^([0-9]+)%$/.exec(setting);
  if (!share) return { bytes: parseSize(setting), described: setting };
  const disk = await dockerDiskBytes();
  if (disk === undefined)
    return {
      bytes: CACHE_FALLBACK_BYTES,
      described: `${setting} of Docker's disk, which cannot be measured here: ${formatSize(CACHE_FALLBACK_BYTES)}`,
    };
  const bytes = Math.floor((disk * Number(share[1])) / 100);
  return { bytes, described: `${setting} of Docker's disk: ${formatSize(bytes)}` };
}

/** The size of the filesystem that holds the engine's images, when it is on this host. */
async function dockerDiskBytes(): Promise<number | undefined> {
  try {
    const { rootDir } = await engine.system.info();
    if (!rootDir) return undefined;
    const stats = await statfs(rootDir);
    return stats.blocks * stats.bsize;
  } catch {
    return undefined;
  }
}

/** How long a made or used image is safe from eviction (see enforceCacheLimit's graceMs). */
export const EVICTION_GRACE_MS = 10 * 60_000;

export interface CacheEviction {
  /** The images removed, least recently used first. */
  evicted: CacheImage[];
  /** What the cache holds now, bytes (the prep images aside); 0 when the bound is off (not measured). */
  total: number;
  /** The bound (undefined: off). */
  limit: number | undefined;
  limitDescribed: string;
  /** Images whose removal failed (an engine refusal): kept, named here. */
  failed: string[];
}

/**
 * How long the last full listing's total stands in for one: the engine lists every image it has to
 * find ours (2 s with 1,900 images here, 7 s right after a build), which a create that built an
 * image paid even when the cache was far below its bound. Images made or removed since by others
 * (another state directory, `docker rmi`) count from the next full listing.
 */
export const LISTING_TRUSTED_MS = 60 * 60_000;
/** A create's bound trusts the last listing only this far below the bound; nearer, it lists. */
const TRUSTED_SHARE = 0.9;

/**
 * Removes the least recently used cache images until the cache fits `limit` (cacheLimit()).
 * Images in use and those named in `keep` (tags) stay whatever their age.
 */
export async function enforceCacheLimit(
  options: {
    keep?: readonly string[];
    limit?: { bytes: number | undefined; described: string };
    only?: (image: CacheImage) => boolean;
    /**
     * Images made or used this recently stay: another create may have just taken one from the
     * cache and not started its box yet (default EVICTION_GRACE_MS).
     */
    graceMs?: number;
    /**
     * The image a create just built: when a full listing of the last LISTING_TRUSTED_MS found the
     * cache well below the bound with room for this image's own bytes too, that total plus them is
     * the answer, and the engine is not asked for every image again.
     */
    built?: string;
  } = {},
): Promise<CacheEviction> {
  const limit = options.limit ?? (await cacheLimit());
  const result: CacheEviction = {
    evicted: [],
    total: 0,
    limit: limit.bytes,
    limitDescribed: limit.described,
    failed: [],
  };
  if (limit.bytes === undefined) return result;
  if (options.built) {
    const total = await totalWithBuilt(options.built, limit.bytes);
    if (total !== undefined) return { ...result, total };
  }
  const images = await listCacheImages(options.only);
  let total = images.reduce((sum, image) => sum + image.bytes, 0);
  result.total = total;
  if (total > limit.bytes) {
    const keep = new Set(options.keep ?? []);
    const recent = Date.now() - (options.graceMs ?? EVICTION_GRACE_MS);
    for (const image of images) {
      if (total <= limit.bytes) break;
      if (image.inUse || image.lastUsedAt > recent || image.tags.some((tag) => keep.has(tag))) continue;
      // Tag by tag, never forced: an image a container started meanwhile stays (the engine refuses).
      let removed = true;
      for (const tag of image.tags) {
        const gone = await engine.image.remove(tag).catch(() => false);
        if (!gone && (await engine.image.exists(tag).catch(() => true))) removed = false;
      }
      if (!removed) {
        result.failed.push(image.tags[0] ?? image.id);
        continue;
      }
      total -= image.bytes;
      result.evicted.push(image);
    }
    result.total = total;
    await forgetGone(new Set(images.flatMap((image) => image.tags)), result.evicted);
  }
  // The whole cache's total and the ids behind it (a listing narrowed by `only` is a test's, not the
  // cache's); the evicted images' layers go with them.
  if (!options.only) {
    const gone = new Set(result.evicted.map((image) => image.id));
    const ids = images.map((image) => image.id).filter((id) => !gone.has(id));
    await updateMemo((fresh) => ({
      memo: {
        ...fresh,
        layers: Object.fromEntries(Object.entries(fresh.layers).filter(([id]) => !gone.has(id))),
        listed: { at: Date.now(), total: result.total, ids },
      },
      value: undefined,
    }));
  }
  return result;
}

/**
 * The cache's total with the image `built` added to the last full listing's, when that listing is
 * recent and the sum stays below TRUSTED_SHARE of `limit` (undefined: list). The image's own bytes
 * come from its history, which the layers file then keeps for the next listing.
 */
async function totalWithBuilt(built: string, limit: number): Promise<number | undefined> {
  const trusted = (listed: CacheMemo['listed']): listed is NonNullable<CacheMemo['listed']> =>
    listed !== undefined && Date.now() - listed.at <= LISTING_TRUSTED_MS && listed.at <= Date.now();
  if (!trusted((await readMemo()).listed)) return undefined;
  const history = await engine.image.layers(built).catch(() => undefined);
  const id = history?.[0]?.id;
  if (!history || !id?.startsWith('sha256:')) return undefined;
  let own = 0;
  for (const [index, layer] of history.entries()) {
    if (index > 0 && layer.tags.length > 0) break;
    own += layer.size;
  }
  // Read again, added to and written under the lock: creates at once each add their own image.
  return updateMemo((memo) => {
    const listed = memo.listed;
    if (!trusted(listed)) return { value: undefined };
    // An image the total counts already (the same build again) adds nothing.
    const counted = listed.ids.includes(id);
    const total = listed.total + (counted ? 0 : own);
    if (total > limit * TRUSTED_SHARE) return { value: undefined };
    const layers = history.map((layer): [string, number] => [layer.id, layer.size]);
    return {
      memo: {
        ...memo,
        layers: { ...memo.layers, [id]: layers },
        listed: { at: listed.at, total, ids: counted ? listed.ids : [...listed.ids, id] },
      },
      value: total,
    };
  });
}

/** Drops the time stamps of tags that no longer exist (evicted now, or removed by the user). */
async function forgetGone(existing: ReadonlySet<string>, evicted: readonly CacheImage[]): Promise<void> {
  try {
    const used = await readUses();
    const gone = new Set(evicted.flatMap((image) => image.tags));
    const kept = Object.fromEntries(
      Object.entries(used).filter(([tag]) => existing.has(tag) && !gone.has(tag)),
    );
    if (Object.keys(kept).length !== Object.keys(used).length) await writeUses(kept);
  } catch {
    // Stale entries only cost a few bytes.
  }
}

/** One line for the user about an eviction (empty when nothing was done or needs saying). */
export function describeEviction(eviction: CacheEviction): string {
  if (eviction.limit === undefined) return '';
  const held = `${formatSize(eviction.total)} of ${formatSize(eviction.limit)} (cache.maxSize ${eviction.limitDescribed})`;
  if (eviction.evicted.length > 0) {
    const freed = eviction.evicted.reduce((sum, image) => sum + image.bytes, 0);
    const count = eviction.evicted.length;
    return `image cache: removed ${count} least recently used image${count === 1 ? '' : 's'} (${formatSize(freed)}); it holds ${held}`;
  }
  if (eviction.total > eviction.limit)
    return `image cache holds ${held}: every older image is in use or used in the last minutes (destroy boxes, or raise cache.maxSize)`;
  return '';
}
