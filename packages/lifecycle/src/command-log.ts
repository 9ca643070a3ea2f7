import { appendFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { stateDir } from '@ca-sandbox/config/paths';
import { SANDBOX_ID_PATTERN as SANDBOX_ID } from '@ca-sandbox/docker/contracts';
import { validateSandboxName } from './source.js';

/**
 * The commands run in a box (exec, streamed exec, shell: the CLI, the MCP server and the plugin all
 * go through them), kept on the host for the vetting report: one JSON line each, appended when the
 * command ends, in `<state dir>/sandboxes/<id>/commands.jsonl`. The box never writes here. Bounded
 * (MAX_LOG_BYTES: a loop of execs cannot fill the disk; the report then says it is incomplete) and
 * removed with the sandbox. Light on purpose (no zod, no settings): exec's fast path loads it; the
 * report reads the log back with its schema (report.ts).
 */
export interface CommandEntry {
  via: 'exec' | 'shell';
  /** The argv as given (each argument cut at 1 KiB, at most 64 of them); a shell: its program. */
  command: string[];
  user: string;
  /** ISO time it started. */
  startedAt: string;
  durationMs: number;
  /** null: it never ran to an exit code. */
  exitCode: number | null;
  timedOut: boolean;
  outOfMemory: boolean;
  /** Bytes the command wrote (also what the cap dropped); null when not counted (streamed, shell). */
  stdoutBytes: number | null;
  stderrBytes: number | null;
  /** Set when the command was cut short (interrupted, the engine failed): the error's code. */
  error?: string;
}

/** Past this size nothing more is appended (about 20,000 entries). */
export const MAX_LOG_BYTES = 8 * 1024 * 1024;
const MAX_ARG_CHARS = 1024;
const MAX_ARGS = 64;

/** The host-side folder of sandbox `id`'s records (its command log, its clone's file listing). */
export function sandboxStateDir(id: string): string {
  return join(stateDir(), 'sandboxes', validateSandboxName(id));
}

/** Where the log of `id` is (the report reads it). */
export function commandLogPath(id: string): string {
  return join(sandboxStateDir(id), 'commands.jsonl');
}

/** The argv as the log keeps it: bounded, every argument a string. */
export function loggedArgv(argv: readonly string[]): string[] {
  const kept = argv
    .slice(0, MAX_ARGS)
    .map((arg) => (arg.length > MAX_ARG_CHARS ? `${arg.slice(0, MAX_ARG_CHARS)}…` : arg));
  if (argv.length > MAX_ARGS) kept.push(`… ${argv.length - MAX_ARGS} more arguments`);
  return kept;
}

/**
 * Appends one entry (one write of one line: concurrent execs never interleave within a line).
 * Best effort: the command already ran, a full disk or a read-only home must not fail it.
 */
export async function recordCommand(id: string, entry: CommandEntry): Promise<void> {
  await appendRecord(id, commandLogPath(id), entry, MAX_LOG_BYTES);
}

/**
 * Appends `entry` as one JSON line to the sandbox's record file `path` (one write: concurrent
 * appends never interleave within a line) until the file reaches `maxBytes`. Best effort: what it
 * records already happened, and a full disk or a read-only home must not fail it.
 */
export async function appendRecord(
  id: string,
  path: string,
  entry: unknown,
  maxBytes: number,
): Promise<void> {
  try {
    const size = await stat(path).then(
      (stats) => stats.size,
      () => -1,
    );
    if (size >= maxBytes) return;
    if (size < 0) await mkdir(sandboxStateDir(id), { recursive: true, mode: 0o700 });
    await appendFile(path, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  } catch {
    // The report says what it could keep.
  }
}

/**
 * The JSON lines of a sandbox record file (the command log, the gate log), oldest first, as parsed
 * JSON for the reader's schema; a line cut by a full disk is skipped. `complete` is false once the
 * file reached `maxBytes` (later entries were not appended).
 */
export async function readRecords(
  path: string,
  maxBytes: number,
): Promise<{ lines: unknown[]; complete: boolean }> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const lines: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      // A line cut by a full disk.
    }
  }
  return { lines, complete: Buffer.byteLength(text) < maxBytes };
}

/** Removes the log of `id` (destroy, prune). */
export async function removeCommandLog(id: string): Promise<void> {
  await rm(sandboxStateDir(id), { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Removes the logs of sandboxes whose box is gone (prune: a destroy that failed midway, a box
 * removed by hand). `ids` narrows it (a scoped prune never touches other sandboxes' logs).
 */
export async function removeOrphanCommandLogs(
  boxExists: (id: string) => Promise<boolean>,
  ids?: readonly string[],
): Promise<void> {
  const names = await readdir(join(stateDir(), 'sandboxes')).catch(() => [] as string[]);
  for (const name of names) {
    if (ids !== undefined && !ids.includes(name)) continue;
    if (!SANDBOX_ID.test(name)) continue;
    if (!(await boxExists(name).catch(() => true))) await removeCommandLog(name);
  }
}
