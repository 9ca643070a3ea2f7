// `ls --images` and cache.maxSize through the bin (issue 30.3). Eviction itself is tested on the
// engine with images of its own (build's cache-limit.int.test.ts): a create here never evicts with
// a bound this small, since the machine's other cache images are not this test's to remove.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const FIXTURES = fileURLToPath(new URL('../../build/test/fixtures/', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'ca-sbx-image-cache-'));
const state = mkdtempSync(join(tmpdir(), 'ca-sbx-image-cache-state-'));
const id = `sbx-${randomUUID().slice(0, 8)}`;
let image = '';

afterAll(() => {
  forceRemoveSandbox(id);
  if (image) execFileSync('docker', ['image', 'rm', '--force', image], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

interface Listing {
  images: { tags: string[]; bytes: number; inUse: boolean; lastUsedAt: number; source: string }[];
  totalBytes: number;
  limitBytes: number | null;
  limitDescribed: string;
}

describe.skipIf(!READY)('the image cache through the bin', () => {
  it('ls --images shows the box’s deps image in use, its size, source and last use; then not in use', async () => {
    const repo = join(work, 'node-esm');
    cpSync(join(FIXTURES, 'node-esm'), repo, { recursive: true });
    const env = { XDG_STATE_HOME: state };
    const before = Date.now();
    const created = await runBin(
      ['create', repo, '--json', '--name', id, '--network', 'clone-then-cut'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    image = (JSON.parse(created.stdout) as { image: string }).image;

    const listed = await runBin(['ls', '--images', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const listing = JSON.parse(listed.stdout) as Listing;
    const row = listing.images.find((each) => each.tags.includes(image));
    expect(row).toMatchObject({ inUse: true, source: repo });
    expect(row?.bytes).toBeGreaterThan(0);
    // The create noted its use (the state file of this test).
    expect(row?.lastUsedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(listing.limitDescribed).toMatch(/^25% of Docker's disk: /);

    const table = await runBin(['ls', '--images'], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^IMAGE\s+SIZE\s+LAST USED\s+IN USE\s+SOURCE$/);
    expect(table.stdout).toMatch(
      new RegExp(`${image.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+\\S+ \\S+\\s+\\S+ ago\\s+yes\\s+`),
    );
    expect(table.stderr).toMatch(/images, .*; cache\.maxSize 25% of Docker's disk/);

    // --filter narrows the rows (source, in-use: AND-ed); the totals stay the whole cache's.
    const narrowed = await runBin(
      ['ls', '--images', '--filter', `source=${work}`, '--filter', 'in-use=true'],
      env,
    );
    expect(narrowed.code, narrowed.stderr).toBe(0);
    expect(narrowed.stdout.trim().split('\n')).toHaveLength(2);
    expect(narrowed.stdout).toContain(image);
    expect(narrowed.stderr).toMatch(/^1 of \d+ images shown \(.+\); the cache holds .+; cache\.maxSize /m);
    const none = JSON.parse(
      (
        await runBin(
          ['ls', '--images', '--json', '--filter', `source=${work}`, '--filter', 'in-use=false'],
          env,
        )
      ).stdout,
    ) as Listing;
    expect(none.images).toEqual([]);
    // The whole cache's total, not the (empty) selection's: other tests may add images meanwhile.
    expect(none.totalBytes).toBeGreaterThan(0);
    const badKey = await runBin(['ls', '--images', '--filter', 'status=running']);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/unknown key "status".*\n.*keys: repo, source, in-use/s);

    const destroyed = await runBin(['destroy', id]);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(remainingObjects(id)).toEqual([]);
    const after = JSON.parse((await runBin(['ls', '--images', '--json'], env)).stdout) as Listing;
    expect(after.images.find((each) => each.tags.includes(image))?.inUse).toBe(false);
  }, 600_000);

  it('cache.maxSize: shown by config, set by env or file, a bad value is a config error', async () => {
    const shown = await runBin(['config'], { CA_SANDBOX_CACHE_MAX_SIZE: '30g' });
    expect(shown.stdout).toMatch(/cache\.maxSize\s+30g\s+env/);
    const off = JSON.parse(
      (await runBin(['ls', '--images', '--json'], { CA_SANDBOX_CACHE_MAX_SIZE: 'off' })).stdout,
    );
    expect(off).toMatchObject({ limitBytes: null, limitDescribed: 'off' });
    const bad = await runBin(['ls', '--images'], { CA_SANDBOX_CACHE_MAX_SIZE: '250%' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/CA_SANDBOX_CACHE_MAX_SIZE/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});
