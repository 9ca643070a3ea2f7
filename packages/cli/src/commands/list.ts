import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from '../errors.js';
import { loadLifecycle } from '../lifecycle-api.js';
import {
  applyListFilters,
  DEFAULT_TABLE,
  parseListFilters,
  parseListFormat,
  renderListTemplate,
} from '../list-format.js';
import type { Output } from '../output.js';

export { age } from '../list-format.js';

/**
 * `ca-sandbox list`: a table; `-q` the ids only, one per line; `--json` / `--format json` the
 * sandbox records; `--format '{{.ID}}\t{{.Status}}'` one line per sandbox; `--filter key=value`.
 */
export async function listCommand(
  out: Output,
  _args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  // Flags first, so that a bad --filter or --format is exit 2 before docker is asked anything.
  const filters = parseListFilters((options.filter as string[] | undefined) ?? []);
  const format = parseListFormat(typeof options.format === 'string' ? options.format : DEFAULT_TABLE);
  // A template asked for beside --json would be dropped without a word: say which one wins.
  if (out.options.json && typeof options.format === 'string' && format.kind !== 'json')
    throw new UsageError('--json prints the records; give --format or --json, not both', 'INVALID_OPTIONS');
  const lifecycle = await loadLifecycle();
  const records = applyListFilters(await lifecycle.listSandboxes(), filters);
  if (out.options.json || format.kind === 'json') {
    out.json(records);
  } else if (out.options.quiet) {
    // docker ps -q: ids and nothing else, so that `ls -q | xargs ca-sandbox rm` gets ids only.
    for (const record of records) out.result(sanitizeName(record.id));
  } else if (records.length === 0 && typeof options.format !== 'string') {
    out.info('no sandboxes');
  } else {
    for (const line of renderListTemplate(format, records)) out.result(line);
  }
  return 0;
}
