import { loadLifecycle } from '../lifecycle-api.js';
import { parseCpOperands } from '../options.js';
import type { Output } from '../output.js';
import { sanitizeName } from '../sanitize.js';

/** 1536 → `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** `ca-sandbox cp <id>:<path> <dest> [--force]`: copy out only. */
export async function cpCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  const { id, boxPath, hostDest } = parseCpOperands(String(args[0]), String(args[1]));
  const lifecycle = await loadLifecycle();
  const result = await lifecycle.cpOut(id, boxPath, hostDest, { force: Boolean(options.force) });
  if (out.options.json) {
    out.json(result);
    return 0;
  }
  const files = `${result.files} file${result.files === 1 ? '' : 's'}`;
  const dirs = `${result.directories} director${result.directories === 1 ? 'y' : 'ies'}`;
  out.result(
    `copied ${files}, ${dirs} (${formatBytes(result.bytes)}) to ${sanitizeName(result.destination)}`,
  );
  for (const skip of result.skipped)
    out.warn(`skipped ${sanitizeName(skip.path)}: ${sanitizeName(skip.reason)}`);
  return 0;
}
