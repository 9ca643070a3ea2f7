import type { ActionContext } from '../action-context.js';
import { UsageError } from '../errors.js';
import { assertSandboxId } from '../exec-options.js';
import { loadLifecycle } from '../lifecycle-api.js';
import type { Output } from '../output.js';
import { destroyEach, reportDestroyed } from './teardown-report.js';

export {
  destroyEach,
  mergeTeardown,
  reportDestroyed,
  reportTeardown,
} from './teardown-report.js';

/** `ca-sandbox destroy <id...> [--keep-volume]` / `destroy --all`. */
export async function destroyCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
  { signal }: ActionContext,
): Promise<number> {
  const ids = (args[0] as string[] | undefined) ?? [];
  const all = Boolean(options.all);
  if (all && ids.length > 0) throw new UsageError('give sandbox ids or --all, not both', 'INVALID_OPTIONS');
  if (!all && ids.length === 0) throw new UsageError('missing <id...> (or --all)', 'INVALID_OPTIONS');
  for (const id of ids) assertSandboxId(id);
  const lifecycle = await loadLifecycle();
  const targets = all ? (await lifecycle.listSandboxes()).map((record) => record.id) : [...new Set(ids)];
  const keepVolume = Boolean(options.keepVolume);
  const keptReports: { id: string; path: string }[] = [];
  const { results, notFound } = await destroyEach(
    targets,
    async (id) => {
      if (options.keepReport) {
        const kept = await keepReportBeforeDestroy(lifecycle, id);
        if (kept) {
          keptReports.push({ id, path: kept });
          out.info(`report of ${id} kept: ${kept} (ca-sandbox report ${id} shows it)`);
        } else out.info(`${id} has no box: no report to keep`);
      }
      return lifecycle.destroySandbox(id, { keepVolume });
    },
    { all, signal },
  );
  return reportDestroyed(out, results, notFound, options.keepReport ? { keptReports } : {});
}

/**
 * Keeps the report of `id` before its box goes (`--keep-report`); its path, or undefined when the
 * id has objects but no box (nothing to report). Any other failure stops this id's destroy: the
 * user asked to keep the report, and a destroy cannot be undone.
 */
export async function keepReportBeforeDestroy(
  lifecycle: Awaited<ReturnType<typeof loadLifecycle>>,
  id: string,
): Promise<string | undefined> {
  try {
    return await lifecycle.keepReport(id);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'SANDBOX_NOT_FOUND') throw error;
    // A box-less id that has nothing at all is destroy's own SANDBOX_NOT_FOUND to say.
    return undefined;
  }
}
