import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from '../errors.js';
import type { Output } from '../output.js';

function shown(value: unknown): string {
  if (value === undefined || value === null) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : value.join(', ');
  return String(value);
}

/**
 * `ca-sandbox config [setting|path]`: every effective setting and where it came from (file, env,
 * flag, default), one setting's value alone, or the configuration file's path. A bad file or
 * variable fails here first.
 */
export async function configCommand(out: Output, args: unknown[]): Promise<number> {
  const { configLocation, loadSettings } = await import('@ca-sandbox/config');
  const env = out.streams.env;
  if (args[0] === 'path') {
    const location = configLocation({ env });
    if (out.options.json) out.json(location);
    else out.result(location.path);
    return 0;
  }
  const settings = loadSettings({ env });
  const rows = settings.all().map(({ key, value, source, from, describe }) => ({
    key,
    value: value ?? null,
    source,
    ...(from ? { from } : {}),
    describe,
  }));
  const wanted = args[0];
  if (typeof wanted === 'string') {
    const row = rows.find((candidate) => candidate.key === wanted);
    if (!row)
      throw new UsageError(
        `unknown setting '${sanitizeName(wanted, 60)}' (one of: ${rows.map((candidate) => candidate.key).join(', ')}; or path)`,
        'UNKNOWN_SETTING',
      );
    if (out.options.json) out.json(row);
    // The value alone, for scripts ("-" when unset); where it came from is in --json and the table.
    else out.result(shown(row.value));
    return 0;
  }
  if (out.options.json) {
    out.json({ file: settings.file, settings: rows });
    return 0;
  }
  const where = settings.file.source === 'env' ? 'named by CA_SANDBOX_CONFIG' : 'the default place';
  out.result(`config file: ${settings.file.path} (${where}${settings.file.exists ? '' : ', absent'})`);
  out.table(
    ['SETTING', 'VALUE', 'SOURCE'],
    rows.map((row) => [
      row.key,
      shown(row.value),
      row.source === 'env' ? `env ${row.from}` : row.source === 'flag' ? `flag ${row.from}` : row.source,
    ]),
  );
  return 0;
}
