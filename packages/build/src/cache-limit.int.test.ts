// The image cache kept within a size (issue 30.3), on the real engine: images of this test only
// (`only`), a small bound, last uses written to a state directory of the test's own.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engine } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CacheImage,
  cacheLimit,
  describeEviction,
  enforceCacheLimit,
  LISTING_TRUSTED_MS,
  listCacheImages,
  noteCacheUse,
} from './cache-limit.js';

const run = `cachelimit-${randomUUID().slice(0, 8)}`;
const tag = (name: string) => `ca-sbx:${run}-${name}`;
const state = mkdtempSync(join(tmpdir(), 'ca-sbx-cache-state-'));
const holder = `ca-sbx-${run}-holder`;
const ofRun = (image: CacheImage) => image.repo === run;
const MIB = 1024 * 1024;

/** A cache image of ours: `mib` MiB of its own on the plain base, our cache labels. */
async function cacheImage(name: string, mib: number): Promise<void> {
  const dockerfile = [
    'FROM ca-sbx-base:debian',
    `RUN ["/bin/sh", "-c", "head -c ${mib * MIB} /dev/urandom > /blob-${name}"]`,
    `LABEL ca.sandbox.cache="1" ca.sandbox.cache.repo="${run}" ca.sandbox.cache.source="/test/${run}/${name}"`,
    '',
  ].join('\n');
  await engine.image.build(['build', '--quiet', '--network', 'none', '--tag', tag(name), '-'], {
    input: dockerfile,
  });
}

beforeAll(async () => {
  process.env.XDG_STATE_HOME = state;
  await cacheImage('old', 3);
  await cacheImage('middle', 3);
  await cacheImage('new', 3);
  // A last use counts from the image's creation at the earliest: the uses noted come after the
  // builds, so the order is theirs, not the build order's (a cached build step gave the images
  // creation times in another order now and then).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const now = Date.now();
  await noteCacheUse(tag('old'), now - 1000);
  await noteCacheUse(tag('middle'), now - 600);
  await noteCacheUse(tag('new'), now - 200);
  // The oldest is used by a container (stopped): it must stay whatever its age.
  await docker(['create', '--name', holder, '--network', 'none', tag('old'), 'true']);
}, 300_000);

afterAll(async () => {
  await docker(['rm', '--force', holder], { allowFailure: true });
  for (const name of ['old', 'middle', 'new'])
    await docker(['image', 'rm', '--force', tag(name)], { allowFailure: true });
  rmSync(state, { recursive: true, force: true });
});

describe('the image cache within cache.maxSize (real engine)', () => {
  it('lists own bytes, last use and use, least recently used first', async () => {
    const images = await listCacheImages(ofRun);
    expect(images.map((image) => image.tags)).toEqual([[tag('old')], [tag('middle')], [tag('new')]]);
    for (const image of images) {
      // Its own layer (3 MiB of random bytes), not the base it shares.
      expect(image.bytes).toBeGreaterThanOrEqual(3 * MIB);
      expect(image.bytes).toBeLessThan(4 * MIB);
    }
    expect(images.map((image) => image.inUse)).toEqual([true, false, false]);
    expect(images[0]?.lastUsedAt).toBeLessThan(images[1]?.lastUsedAt ?? 0);
    expect(images[1]?.source).toBe(`/test/${run}/middle`);
  });

  it("keeps each image's layers on the host: the next listing asks the engine for no history again", async () => {
    const first = await listCacheImages(ofRun);
    const file = JSON.parse(readFileSync(join(state, 'ca-sandbox', 'image-layers.json'), 'utf8')) as {
      layers: Record<string, [string, number][]>;
    };
    for (const image of first) expect(file.layers[image.id]?.length).toBeGreaterThan(0);
    // Asked again with the engine's history answering nothing: the same sizes, from the file.
    const history = engine.image.layers;
    engine.image.layers = async () => {
      throw new Error('history asked for a known image');
    };
    try {
      const again = await listCacheImages(ofRun);
      expect(again.map((image) => [image.id, image.bytes])).toEqual(
        first.map((image) => [image.id, image.bytes]),
      );
    } finally {
      engine.image.layers = history;
    }
  });

  it('under the bound nothing goes', async () => {
    const eviction = await enforceCacheLimit({
      only: ofRun,
      graceMs: 0,
      limit: { bytes: 100 * MIB, described: '100m' },
    });
    expect(eviction.evicted).toEqual([]);
    expect(describeEviction(eviction)).toBe('');
  });

  it('over the bound the least recently used image not in use goes, and one line says so', async () => {
    const before = await listCacheImages(ofRun);
    const total = before.reduce((sum, image) => sum + image.bytes, 0);
    // One image over: the oldest is in use, so the middle one goes (never the kept one either).
    const eviction = await enforceCacheLimit({
      only: ofRun,
      graceMs: 0,
      keep: [tag('new')],
      limit: { bytes: total - 1, described: 'test' },
    });
    expect(eviction.evicted.map((image) => image.tags)).toEqual([[tag('middle')]]);
    expect(await engine.image.exists(tag('middle'))).toBe(false);
    expect(await engine.image.exists(tag('old'))).toBe(true);
    expect(await engine.image.exists(tag('new'))).toBe(true);
    expect(describeEviction(eviction)).toMatch(
      /^image cache: removed 1 least recently used image \(3(\.\d)? MiB\); it holds .* \(cache\.maxSize test\)$/,
    );
    // Its last use is forgotten with it.
    const uses = JSON.parse(readFileSync(join(state, 'ca-sandbox', 'image-use.json'), 'utf8'));
    expect(Object.keys(uses.used)).not.toContain(tag('middle'));
    expect(Object.keys(uses.used)).toContain(tag('new'));
  });

  it('an image made or used in the grace window stays', async () => {
    // Every image of this run was made minutes ago: with the default window none may go.
    const eviction = await enforceCacheLimit({ only: ofRun, limit: { bytes: 1, described: '1b' } });
    expect(eviction.evicted).toEqual([]);
  });

  it('when every image over the bound is in use or kept, it says so and removes nothing', async () => {
    const eviction = await enforceCacheLimit({
      only: ofRun,
      graceMs: 0,
      keep: [tag('new')],
      limit: { bytes: 1, described: '1b' },
    });
    expect(eviction.evicted).toEqual([]);
    expect(describeEviction(eviction)).toMatch(/every older image is in use or used in the last minutes/);
    expect(await engine.image.exists(tag('old'))).toBe(true);
  });

  describe("a create's bound after it built an image", () => {
    const memoFile = () => join(state, 'ca-sandbox', 'image-layers.json');
    type Memo = {
      layers: Record<string, [string, number][]>;
      listed?: { at: number; total: number; ids: string[] };
    };
    const readMemo = () => JSON.parse(readFileSync(memoFile(), 'utf8')) as Memo;
    /** The last full listing as the layers file keeps it, this image's layers forgotten. */
    function lastListing(listed: Memo['listed'], forget: string): void {
      const memo = readMemo();
      delete memo.layers[forget];
      writeFileSync(memoFile(), JSON.stringify({ ...memo, listed }));
    }
    /** Runs `body` counting the engine's image listings. */
    async function countingListings(body: () => Promise<void>): Promise<number> {
      const list = engine.image.list;
      let listings = 0;
      engine.image.list = async (...args) => {
        listings += 1;
        return list.apply(engine.image, args);
      };
      try {
        await body();
      } finally {
        engine.image.list = list;
      }
      return listings;
    }

    it("adds the image's own bytes to a recent listing's total without listing every image again", async () => {
      const id = (await engine.image.inspect(tag('new')))?.Id ?? '';
      const at = Date.now() - 60_000;
      lastListing({ at, total: 10 * MIB, ids: [] }, id);
      let total = 0;
      const listings = await countingListings(async () => {
        const eviction = await enforceCacheLimit({
          built: tag('new'),
          only: ofRun,
          graceMs: 0,
          limit: { bytes: 100 * MIB, described: '100m' },
        });
        expect(eviction.evicted).toEqual([]);
        total = eviction.total;
      });
      expect(listings).toBe(0);
      // Its own 3 MiB layer, not the base it shares.
      expect(total).toBeGreaterThanOrEqual(13 * MIB);
      expect(total).toBeLessThan(14 * MIB);
      // Kept for the next create and the next listing; the listing's own time is kept.
      const memo = readMemo();
      expect(memo.listed).toEqual({ at, total, ids: [id] });
      expect(memo.layers[id]?.length).toBeGreaterThan(0);
      // The same image again (a build that made the same image) adds nothing.
      const again = await enforceCacheLimit({
        built: tag('new'),
        only: ofRun,
        limit: { bytes: 100 * MIB, described: '100m' },
      });
      expect(again.total).toBe(total);
    });

    it('creates at once each add their own image (the file is read again and written under a lock)', async () => {
      const ids = await Promise.all(
        ['new', 'old'].map(async (name) => (await engine.image.inspect(tag(name)))?.Id ?? ''),
      );
      const at = Date.now() - 60_000;
      lastListing({ at, total: 10 * MIB, ids: [] }, ids[0] ?? '');
      const bound = (name: string) =>
        enforceCacheLimit({ built: tag(name), only: ofRun, limit: { bytes: 100 * MIB, described: '100m' } });
      await Promise.all([bound('new'), bound('old'), bound('new')]);
      const listed = readMemo().listed;
      // Two images of 3 MiB each on 10 MiB, the one built twice counted once.
      expect(listed?.total).toBeGreaterThanOrEqual(16 * MIB);
      expect(listed?.total).toBeLessThan(18 * MIB);
      expect(new Set(listed?.ids)).toEqual(new Set(ids));
      expect(existsSync(`${memoFile()}.lock`)).toBe(false);
    });

    it('a hand-edited total below zero is not trusted, and the layers stay', async () => {
      const layers = Object.keys(readMemo().layers).length;
      lastListing({ at: Date.now(), total: -(2 ** 40), ids: [] }, '');
      const listings = await countingListings(async () => {
        await enforceCacheLimit({
          built: tag('new'),
          only: ofRun,
          limit: { bytes: 100 * MIB, described: '100m' },
        });
      });
      expect(listings).toBe(1);
      expect(Object.keys(readMemo().layers).length).toBeGreaterThanOrEqual(layers);
    });

    it("a full listing keeps the whole cache's total for the next create", async () => {
      // Far above anything this machine holds: nothing of anyone's is removed. The cache is the
      // whole engine's: another test file building or removing an image between the two listings
      // changes it, so the pair is taken again (a few times at most) until they agree.
      let eviction = await enforceCacheLimit({ limit: { bytes: 2 ** 52, described: 'huge' } });
      let all = await listCacheImages();
      const sum = () => all.reduce((total, image) => total + image.bytes, 0);
      for (let attempt = 0; attempt < 4 && eviction.total !== sum(); attempt += 1) {
        eviction = await enforceCacheLimit({ limit: { bytes: 2 ** 52, described: 'huge' } });
        all = await listCacheImages();
      }
      expect(eviction.evicted).toEqual([]);
      expect(eviction.total).toBe(sum());
      expect(readMemo().listed?.total).toBe(eviction.total);
      expect(new Set(readMemo().listed?.ids)).toEqual(new Set(all.map((image) => image.id)));
      expect(Date.now() - (readMemo().listed?.at ?? 0)).toBeLessThan(60_000);
    });

    it('lists every image when the last listing is old, unknown, or the sum nears the bound', async () => {
      const id = (await engine.image.inspect(tag('new')))?.Id ?? '';
      const cases: Memo['listed'][] = [
        { at: Date.now() - LISTING_TRUSTED_MS - 60_000, total: 0, ids: [] },
        undefined,
        // 3 MiB more is past 90% of the bound: the listing decides, not the sum.
        { at: Date.now(), total: 9 * MIB, ids: [] },
      ];
      for (const listed of cases) {
        lastListing(listed, id);
        const listings = await countingListings(async () => {
          await enforceCacheLimit({
            built: tag('new'),
            only: ofRun,
            keep: [tag('new')],
            limit: { bytes: 13 * MIB, described: '13m' },
          });
        });
        expect(listings).toBe(1);
        // A listing narrowed to a test's images is not the cache's total.
        expect(readMemo().listed).toEqual(listed);
      }
    });
  });

  it('cache.maxSize as a share of the disk that holds Docker, off, or a size', async () => {
    const share = await cacheLimit('10%');
    expect(share.bytes).toBeGreaterThan(0);
    expect(share.described).toMatch(/^10% of Docker's disk: /);
    expect(await cacheLimit('off')).toEqual({ bytes: undefined, described: 'off' });
    expect((await cacheLimit('2g')).bytes).toBe(2 * 1024 ** 3);
  });
});
