import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stateDir } from '@ca-sandbox/config/paths';
import { type SandboxReport, SandboxReportSchema, sandboxReport } from './report.js';
import { validateSandboxName } from './source.js';

/**
 * Reports kept at destroy (`destroy --keep-report`): people want the report once the box is gone.
 * Kept apart from the sandbox's own records (destroy removes those), one file per destroy, in
 * `<state dir>/reports/<id>/<time>.json`; nothing removes them but the user.
 */
function keptDir(id: string): string {
  return join(stateDir(), 'reports', validateSandboxName(id));
}

/** Makes the report of `id` now and keeps it; returns its path. Throws what sandboxReport throws. */
export async function keepReport(id: string, now = new Date()): Promise<string> {
  const report = await sandboxReport(id, { now });
  const dir = keptDir(id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${now.toISOString().replace(/[:.]/g, '-')}.json`);
  const kept: SandboxReport = { ...report, keptAt: now.toISOString() };
  await writeFile(path, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return path;
}

/** The last report kept for `id`, with its path, or undefined (none, or none that parses). */
export async function lastKeptReport(
  id: string,
): Promise<{ path: string; report: SandboxReport } | undefined> {
  const dir = keptDir(id);
  const names = (await readdir(dir).catch(() => [] as string[]))
    .filter((name) => name.endsWith('.json'))
    .sort();
  for (const name of names.reverse()) {
    const path = join(dir, name);
    try {
      const parsed = SandboxReportSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
      if (parsed.success) return { path, report: parsed.data };
    } catch {
      // Another file: the next one.
    }
  }
  return undefined;
}
