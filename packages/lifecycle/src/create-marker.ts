import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sandboxStateDir } from './command-log.js';

/**
 * A host-side mark that a create of sandbox `id` is under way, written before the create makes its
 * first engine object and removed when it ends, whichever way. A create killed before its first
 * object is listed (SIGKILL, an OOM kill) leaves no label to find; the mark lets `destroy <id>`
 * know the id was being made, wait out a docker request the killed process had in flight, and
 * exit 0 instead of "no such sandbox". One file per create call (its instance): two creates of
 * one id never take each other's mark. Best effort: a read-only home must not fail a create.
 */
const PREFIX = 'creating-';

interface Mark {
  pid: number;
  startedAt: string;
}

function markPath(id: string, instance: string): string {
  return join(sandboxStateDir(id), `${PREFIX}${instance}.json`);
}

export async function markCreating(id: string, instance: string): Promise<void> {
  try {
    await mkdir(sandboxStateDir(id), { recursive: true, mode: 0o700 });
    const mark: Mark = { pid: process.pid, startedAt: new Date().toISOString() };
    await writeFile(markPath(id, instance), JSON.stringify(mark), { mode: 0o600 });
  } catch {
    // Without the mark, a create killed before its first object is "no such sandbox": nothing of it exists.
  }
}

export async function clearCreating(id: string, instance: string): Promise<void> {
  await rm(markPath(id, instance), { force: true }).catch(() => undefined);
  // A create that ended before it kept anything (refused at preflight) leaves no empty folder.
  await rmdir(sandboxStateDir(id)).catch(() => undefined);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds the pid, so it is alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a create of `id` was killed before it ended: a mark whose process is gone. */
export async function killedCreateOf(id: string): Promise<boolean> {
  const dir = sandboxStateDir(id);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(PREFIX) || !name.endsWith('.json')) continue;
    try {
      const mark = JSON.parse(await readFile(join(dir, name), 'utf8')) as Partial<Mark>;
      if (typeof mark.pid === 'number' && Number.isInteger(mark.pid) && mark.pid > 0 && !alive(mark.pid))
        return true;
    } catch {
      // A mark cut short by a kill during its write: its create made nothing yet.
      return true;
    }
  }
  return false;
}
