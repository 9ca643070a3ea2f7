import type { Output } from '../output.js';

function shown(value: unknown): string {
  if (value === undefined || value === null) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : value.join(', ');
  return String(value);
}

/**
 * `ca-sandbox config [path]`: every effective setting and where it came from (file, env, flag,
 * default), or only the configuration file's path. A bad file or variable fails here first.
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
