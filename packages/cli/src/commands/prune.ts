import { loadLifecycle } from '../lifecycle-api.js';
import type { Output } from '../output.js';
import { reportTeardown } from './destroy.js';

/** `ca-sandbox prune [--dry-run] [--images]`: every labeled object, by label. */
export async function pruneCommand(
  out: Output,
  _args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  const dryRun = Boolean(options.dryRun);
  const lifecycle = await loadLifecycle();
  const result = await lifecycle.prune({ dryRun, images: Boolean(options.images) });
  // Under --json a dry run says so: its `removed` is what a prune would remove.
  return reportTeardown(out, dryRun ? { ...result, dryRun } : result, {
    json: out.options.json,
    verb: dryRun ? 'would remove' : 'removed',
  });
}
