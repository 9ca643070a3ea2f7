// How a teardown is said (destroy, prune, run's end) and destroy's loop over ids: light on
// purpose (no lifecycle, no schema library), the bin's destroy fast path (fast-destroy.ts) uses it.
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { describeError } from '../error-report.js';
import type { TeardownResult } from '../lifecycle-api.js';
import type { Output } from '../output.js';

/** Concatenates the results of several teardowns. */
export function mergeTeardown(results: TeardownResult[]): TeardownResult {
  return {
    removed: results.flatMap((r) => r.removed),
    failures: results.flatMap((r) => r.failures),
    leftovers: [...new Set(results.flatMap((r) => r.leftovers))],
  };
}

/**
 * Prints a teardown for humans (removed on stderr as notes; failures and leftovers on stderr
 * always) and returns its exit code: 1 when anything failed or is left, else 0.
 */
export function reportTeardown(
  out: Output,
  result: TeardownResult & { notFound?: string[]; dryRun?: boolean },
  { json, verb = 'removed' }: { json: boolean; verb?: string },
): number {
  if (json) out.json(result);
  // Ids that were all unknown: their errors follow, and "nothing to remove" would read as a success.
  else if (result.removed.length === 0 && result.failures.length === 0 && !result.notFound?.length)
    out.info('nothing to remove');
  else for (const name of result.removed) out.info(`${verb} ${sanitizeName(name)}`);
  // Under --json the result above carries the failures and leftovers; stderr stays JSON-only.
  if (json) return teardownExitCode(result);
  for (const failure of result.failures) {
    out.streams.stderr.write(
      `${out.red('failed:')} ${sanitizeName(String(failure.kind))} ${sanitizeName(String(failure.name))}: ${sanitizeName(String(failure.message))}\n`,
    );
  }
  for (const name of result.leftovers)
    out.streams.stderr.write(`${out.red('left behind:')} ${sanitizeName(name)}\n`);
  return teardownExitCode(result);
}

function teardownExitCode(result: TeardownResult): number {
  return result.failures.length > 0 || result.leftovers.length > 0 ? 1 : 0;
}

/**
 * Destroys `targets` one after another. Like `docker rm a b`, an id that is gone does not keep the
 * others (`ls -q | xargs destroy` races a box that went away meanwhile): it is reported as not
 * found (exit 2), unless it was alone (its own plain error). Under --all a listed box that is gone
 * by its turn was removed by someone else: what the user asked for holds, so it is no error.
 * A signal lets the sandbox being removed finish (half a teardown helps nobody), then stops.
 */
export async function destroyEach(
  targets: readonly string[],
  destroy: (id: string) => Promise<TeardownResult>,
  { all, signal }: { all: boolean; signal?: AbortSignal },
): Promise<{ results: TeardownResult[]; notFound: { id: string; error: Error }[] }> {
  const results: TeardownResult[] = [];
  const notFound: { id: string; error: Error }[] = [];
  for (const id of targets) {
    if (signal?.aborted) break;
    try {
      results.push(await destroy(id));
    } catch (error) {
      const gone = (error as { code?: unknown }).code === 'SANDBOX_NOT_FOUND';
      if (gone && all) continue;
      if (!gone || targets.length === 1) throw error;
      notFound.push({ id, error: error as Error });
    }
  }
  return { results, notFound };
}

/**
 * What destroyEach did, printed (reportTeardown), and the exit code: the ids not found are said
 * as errors after it. Also the bin's fast path (fast-destroy.ts).
 */
export function reportDestroyed(
  out: Output,
  results: TeardownResult[],
  notFound: { id: string; error: Error }[],
  extra: Record<string, unknown> = {},
): number {
  const merged = { ...mergeTeardown(results), ...extra };
  if (notFound.length === 0) return reportTeardown(out, merged, { json: out.options.json });
  const code = reportTeardown(
    out,
    { ...merged, notFound: notFound.map((n) => n.id) },
    {
      json: out.options.json,
    },
  );
  // As any error: one line, or under --json one JSON object per id.
  for (const { error } of notFound) out.error(describeError(error));
  // A teardown failure (exit 1) outranks an unknown id (exit 2, a usage error).
  return code !== 0 ? code : 2;
}
