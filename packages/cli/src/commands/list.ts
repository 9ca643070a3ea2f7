import { loadLifecycle, type SandboxRecord } from '../lifecycle-api.js';
import type { Output } from '../output.js';

/** `5m ago` style age of an ISO timestamp (the raw value if it does not parse). */
export function age(createdAt: string, now = Date.now()): string {
  const at = Date.parse(createdAt);
  if (Number.isNaN(at)) return createdAt;
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** The rows of `list` for humans (cells are sanitised by Output.table). */
export function listRows(records: SandboxRecord[], now = Date.now()): string[][] {
  return records.map((r) =>
    [r.id, r.status, r.network, r.runtime, r.image, age(String(r.createdAt), now), r.repo].map(String),
  );
}

/** `ca-sandbox list`: a table (JSON: the sandbox records). */
export async function listCommand(out: Output): Promise<number> {
  const lifecycle = await loadLifecycle();
  const records = await lifecycle.listSandboxes();
  if (out.options.json) out.json(records);
  else if (records.length === 0) out.info('no sandboxes');
  else out.table(['ID', 'STATUS', 'NETWORK', 'RUNTIME', 'IMAGE', 'CREATED', 'REPO'], listRows(records));
  return 0;
}
