import { formatSize as formatBytes } from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from '../errors.js';
import { type Lifecycle, loadLifecycle } from '../lifecycle-api.js';
import type { ListFilter } from '../list-format.js';
import {
  age,
  applyImageFilters,
  applyListFilters,
  DEFAULT_TABLE,
  IMAGE_FILTERS,
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
  const given = (options.filter as string[] | undefined) ?? [];
  if (options.images === true) {
    if (typeof options.format === 'string')
      throw new UsageError('--images takes no --format (use --json)', 'INVALID_OPTIONS');
    const imageFilters = parseListFilters(given, IMAGE_FILTERS);
    return listImages(out, await loadLifecycle(), imageFilters);
  }
  const filters = parseListFilters(given);
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

/**
 * `ca-sandbox ls --images`: the deps image cache, least recently used first (the first to go when
 * a create finds it over cache.maxSize): size (its own layers), last use, repo and source, and the
 * total against the bound. `--json` gives the listing as is.
 */
async function listImages(out: Output, lifecycle: Lifecycle, filters: ListFilter): Promise<number> {
  const whole = await lifecycle.listImageCache();
  // The totals stay the whole cache's (what cache.maxSize bounds); the rows are those that match.
  const listing = { ...whole, images: applyImageFilters(whole.images, filters) };
  if (out.options.json) {
    out.json(listing);
    return 0;
  }
  if (out.options.quiet) {
    for (const image of listing.images) for (const tag of image.tags) out.result(sanitizeName(tag));
    return 0;
  }
  const now = Date.now();
  const rows = listing.images.map((image) => [
    sanitizeName(image.tags.find((tag) => !tag.endsWith('-last')) ?? image.tags[0] ?? image.id),
    formatBytes(image.bytes),
    age(new Date(image.lastUsedAt).toISOString(), now),
    image.inUse ? 'yes' : 'no',
    sanitizeName(image.source || image.repo),
  ]);
  out.table(['IMAGE', 'SIZE', 'LAST USED', 'IN USE', 'SOURCE'], rows);
  const limit =
    listing.limitBytes === null ? 'no bound (cache.maxSize off)' : `cache.maxSize ${listing.limitDescribed}`;
  const shown =
    filters.size > 0
      ? `${listing.images.length} of ${whole.images.length} images shown (${formatBytes(listing.images.reduce((sum, image) => sum + image.bytes, 0))}); the cache holds ${formatBytes(listing.totalBytes)}`
      : `${listing.images.length} images, ${formatBytes(listing.totalBytes)}`;
  out.info(`${shown}; ${limit}`);
  return 0;
}
