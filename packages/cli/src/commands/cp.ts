import type { Writable } from 'node:stream';
import { type GitMode, sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from '../errors.js';
import { type CpOutResult, loadLifecycle } from '../lifecycle-api.js';
import { parseCpOperands } from '../options.js';
import type { Output } from '../output.js';

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

/** `ca-sandbox cp <id>:<path> <dest|-> [--force] [--git withhold|sanitized]`: copy out only. */
export async function cpCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  const { id, boxPath, hostDest } = parseCpOperands(String(args[0]), String(args[1]));
  const git = options.git === 'sanitized' ? 'sanitized' : 'withhold';
  if (hostDest === '-') return cpToStdout(out, id, boxPath, git, Boolean(options.force));
  const lifecycle = await loadLifecycle();
  const result = await lifecycle.cpOut(id, boxPath, hostDest, { force: Boolean(options.force), git });
  if (out.options.json) {
    out.json(result);
    return 0;
  }
  out.result(`${summary(result)} to ${sanitizeName(result.destination)}`);
  report(out, result);
  return 0;
}

/**
 * `-`: the vetted tree as a tar stream on stdout (as `docker cp` does), for the user's own tools.
 * The summary and the reports go to stderr; a terminal is refused (binary would garble it).
 */
async function cpToStdout(
  out: Output,
  id: string,
  boxPath: string,
  git: GitMode,
  force: boolean,
): Promise<number> {
  if (out.streams.stdout.isTTY) {
    throw new UsageError(
      'refusing to write a tar stream to a terminal: redirect stdout to a file or a pipe',
      'INVALID_OPTIONS',
    );
  }
  if (out.options.json) {
    throw new UsageError('--json cannot be used with -: stdout carries the tar stream', 'INVALID_OPTIONS');
  }
  if (force) throw new UsageError('--force has no meaning with -: nothing is replaced', 'INVALID_OPTIONS');
  const lifecycle = await loadLifecycle();
  const stdout = out.streams.stdout as unknown as Writable;
  // Returns once the last block is handed to stdout; the process then exits naturally, which
  // flushes what an asynchronous pipe still holds.
  const result = await lifecycle.cpOutToStream(id, boxPath, stdout, { git });
  out.info(`${summary(result)} as a tar stream`);
  report(out, result);
  return 0;
}

function summary(result: CpOutResult): string {
  const files = `${result.files} file${result.files === 1 ? '' : 's'}`;
  const dirs = `${result.directories} director${result.directories === 1 ? 'y' : 'ies'}`;
  return `copied ${files}, ${dirs} (${formatBytes(result.bytes)})`;
}

/** What was left out, what may run by itself, what a killed copy had left: on stderr, always. */
function report(out: Output, result: CpOutResult): void {
  for (const skip of result.skipped)
    out.warn(`skipped ${sanitizeName(skip.path)}: ${sanitizeName(skip.reason)}`);
  for (const warning of result.warnings)
    out.warn(`may run by itself: ${sanitizeName(warning.path)}: ${sanitizeName(warning.reason)}`);
  for (const path of result.removedStaging)
    out.info(`removed the staging directory of an interrupted copy: ${sanitizeName(path)}`);
}
