import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeStaleStaging, STALE_LEGACY_STAGING_MS, STALE_STAGING_MS } from './staging.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-staging-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited (its number is free again). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

async function staging(name: string, ageMs = 0): Promise<string> {
  const path = join(dir, name);
  await mkdir(join(path, 'repo', 'sub'), { recursive: true });
  await writeFile(join(path, 'repo', 'sub', 'f'), 'x');
  const when = new Date(Date.now() - ageMs);
  await utimes(path, when, when);
  return path;
}

describe('removeStaleStaging', () => {
  it('removes ours whose process is gone, or too old, and nothing else', async () => {
    const dead = await staging(`.ca-sbx-cp-${deadPid()}-AbC123`);
    const live = await staging(`.ca-sbx-cp-${process.ppid}-AbC123`);
    const liveButOld = await staging(`.ca-sbx-cp-${process.ppid}-xyz789`, STALE_STAGING_MS + 60_000);
    const mine = await staging(`.ca-sbx-cp-${process.pid}-mine00`, STALE_STAGING_MS + 60_000);
    const legacyOld = await staging('.ca-sbx-cp-Q1w2E3', STALE_LEGACY_STAGING_MS + 60_000);
    await staging('.ca-sbx-cp-R4t5Y6');
    await staging(`.ca-sbx-cp-${deadPid()}-toolong7`);
    await staging('.ca-sbx-cp-keep-me');
    await staging('ca-sbx-cp-1-abcdef');
    await writeFile(join(dir, `.ca-sbx-cp-${deadPid()}-file00`), 'a file with our name');
    const elsewhere = await mkdtemp(join(tmpdir(), 'ca-lc-staging-target-'));
    await symlink(elsewhere, join(dir, `.ca-sbx-cp-${deadPid()}-link00`));

    const removed = await removeStaleStaging(dir);
    expect(removed.sort()).toEqual([dead, legacyOld, liveButOld].sort());
    const left = (await readdir(dir)).sort();
    expect(left).toContain(live.slice(dir.length + 1));
    expect(left).toContain(mine.slice(dir.length + 1));
    expect(left).toHaveLength(8);
    // A link is never followed.
    expect(await readdir(elsewhere)).toEqual([]);
    await rm(elsewhere, { recursive: true, force: true });
  });

  it('an unreadable or missing directory removes nothing', async () => {
    expect(await removeStaleStaging(join(dir, 'missing'))).toEqual([]);
  });
});
