import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Copy-out stages in `<dir>/.ca-sbx-cp-<pid>-<6 random>` (mkdtemp) beside the target. */
export const STAGING_PREFIX = '.ca-sbx-cp-';

/** Exactly the names copy-out makes: ours, with the pid of the copy that made it. */
const STAGING_NAME = /^\.ca-sbx-cp-(\d{1,10})-[A-Za-z0-9]{6}$/;
/** Names made before the pid was part of them: removed by age only. */
const LEGACY_STAGING_NAME = /^\.ca-sbx-cp-[A-Za-z0-9]{6}$/;

/** A staging directory whose process lives on is still removed after this long (pid reuse). */
export const STALE_STAGING_MS = 24 * 60 * 60 * 1000;
/** A legacy staging directory (no pid in its name) is removed after this long. */
export const STALE_LEGACY_STAGING_MS = 60 * 60 * 1000;

/**
 * Removes, in `dir`, the staging directories that a killed copy-out left: only names made by
 * copy-out (exact pattern), only real directories owned by this user, and only when the process
 * that made it is gone (or it is older than STALE_STAGING_MS; legacy names by age only). Never
 * fails the copy: an unreadable directory simply has nothing removed. Returns the removed paths.
 */
export async function removeStaleStaging(dir: string, now = Date.now()): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const current = STAGING_NAME.exec(name);
    if (!current && !LEGACY_STAGING_NAME.test(name)) continue;
    const path = join(dir, name);
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isDirectory() || info.uid !== process.getuid?.()) continue;
    const age = now - info.mtimeMs;
    const stale = current
      ? Number(current[1]) !== process.pid && (!processAlive(Number(current[1])) || age > STALE_STAGING_MS)
      : age > STALE_LEGACY_STAGING_MS;
    if (!stale) continue;
    await rm(path, { recursive: true, force: true }).catch(() => undefined);
    removed.push(path);
  }
  return removed;
}

/** Signal 0 probes a pid: ESRCH means gone; EPERM means alive under another user. */
function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
