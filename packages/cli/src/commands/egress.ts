import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';

/**
 * `ca-sandbox egress <id>`: what the sandbox's clone and install asked the egress gateway for,
 * allowed and refused, with counts (refusals first). Destinations are text the repo's scripts
 * chose: the output layer neutralises them like everything else from a box.
 */
export async function egressCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  const rows = await lifecycle.egressLog(id);
  if (out.options.json) {
    out.json(rows);
    return 0;
  }
  if (rows.length === 0) {
    out.info('no connection went through the egress gateway (a local source, or nothing installed)');
    return 0;
  }
  // The column appears only for a box whose gateway adds credentials (`--credential`).
  const credentials = rows.some((row) => row.credential);
  out.table(
    ['PHASE', 'DECISION', 'DESTINATION', 'COUNT', ...(credentials ? ['CREDENTIAL'] : [])],
    rows.map((row) => [
      row.phase,
      row.allowed ? 'allowed' : 'REFUSED',
      row.destination,
      String(row.count),
      ...(credentials ? [row.credential ? `added (${row.credential})` : '-'] : []),
    ]),
  );
  return 0;
}
