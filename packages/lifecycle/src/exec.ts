import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { docker, dockerSpawnError, spawnDocker } from '@ca-sandbox/docker';
import { z } from 'zod';
import { assertBoxRunning, BOX_USER, BOX_WORKDIR, boxName, looksLikeMissingContainer } from './_utils.js';
import { InvalidOptionsError } from './errors.js';

/** The exec contract of DESIGN.md. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout or stderr went past `maxBytes` (the rest was drained and dropped). */
  truncated: boolean;
  /** The command ran past `timeoutMs` and was killed inside the box (exitCode is then 124). */
  timedOut: boolean;
  durationMs: number;
}

export interface ExecOptions {
  /** Kill the command (inside the box) after this many milliseconds. */
  timeoutMs?: number;
  /** Cap on each of stdout and stderr, in bytes. Default 1 MiB. */
  maxBytes?: number;
}

export const DEFAULT_EXEC_MAX_BYTES = 1024 * 1024;
/** Exit code reported for a command killed on timeout (as timeout(1) does). */
export const EXEC_TIMEOUT_EXIT_CODE = 124;
/** How long the docker client may linger after the in-box kill before we kill it too. */
const CLIENT_GRACE_MS = 3000;

const ExecOptionsSchema = z.strictObject({
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3600 * 1000)
    .optional(),
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(256 * 1024 * 1024)
    .optional(),
});
const ArgvSchema = z
  .array(z.string().refine((arg) => !arg.includes('\0'), 'arguments must not contain NUL'))
  .min(1, 'give a command to run');

/** Fills every default; InvalidOptionsError on anything else. */
export function resolveExecOptions(
  input: unknown = {},
): Required<Pick<ExecOptions, 'maxBytes'>> & ExecOptions {
  const parsed = ExecOptionsSchema.safeParse(input ?? {});
  if (!parsed.success)
    throw new InvalidOptionsError(`invalid exec options: ${parsed.error.issues[0]?.message}`);
  return { maxBytes: DEFAULT_EXEC_MAX_BYTES, ...parsed.data };
}

/**
 * The `docker exec` argv: always the box user and /work/repo, never a TTY, never privileged.
 * With a marker, the command carries `CA_SBX_EXEC=<marker>` in its environment so that a timeout
 * can find it (and what it forked) inside the box.
 */
export function buildExecArgs(container: string, argv: readonly string[], marker?: string): string[] {
  const args = ['exec', '-u', BOX_USER, '-w', BOX_WORKDIR];
  if (marker) args.push('-e', `CA_SBX_EXEC=${marker}`);
  return [...args, container, ...argv];
}

/**
 * The in-box kill: every process whose environment holds our marker, and its process group
 * (docker exec makes the command a session and group leader), killed with SIGKILL, a few rounds
 * so that children forked meanwhile go too.
 */
export function buildKillArgs(container: string, marker: string): string[] {
  const script = [
    'for round in 1 2 3; do',
    '  for p in /proc/[0-9]*; do',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '    pid=${p#/proc/}',
    '    if grep -qsxzF "CA_SBX_EXEC=$1" "$p/environ"; then',
    // dash's kill takes no `--`: the group and the process in two calls, so one miss skips nothing.
    '      kill -s KILL "-$pid" 2>/dev/null; kill -s KILL "$pid" 2>/dev/null',
    '    fi',
    '  done',
    'done',
  ].join('\n');
  return ['exec', '-u', BOX_USER, container, 'sh', '-c', script, 'ca-sbx-kill', marker];
}

/**
 * Runs `argv` in the sandbox as 1000:1000 at /work/repo and returns the exec contract: stdout and
 * stderr apart, each capped at `maxBytes` (the rest drained and dropped, never buffered), invalid
 * UTF-8 as U+FFFD, and on `timeoutMs` the command killed inside the box, not only the client.
 * One `docker exec` on the hot path.
 */
export async function execInSandbox(
  id: string,
  argv: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const container = boxName(id);
  const command = ArgvSchema.safeParse(argv);
  if (!command.success) throw new InvalidOptionsError(`invalid command: ${command.error.issues[0]?.message}`);
  const { maxBytes, timeoutMs } = resolveExecOptions(options);
  const marker = timeoutMs ? randomBytes(8).toString('hex') : undefined;
  const args = buildExecArgs(container, command.data, marker);
  const started = performance.now();
  const child = spawnDocker(args);
  let timedOut = false;
  let grace: NodeJS.Timeout | undefined;
  const timer =
    timeoutMs && marker
      ? setTimeout(() => {
          timedOut = true;
          void docker(buildKillArgs(container, marker), { allowFailure: true, timeoutMs: 10_000 }).catch(
            () => {},
          );
          grace = setTimeout(() => child.kill('SIGKILL'), CLIENT_GRACE_MS);
        }, timeoutMs)
      : undefined;
  try {
    const [out, err, result] = await Promise.all([
      captureCapped(child.stdout, maxBytes),
      captureCapped(child.stderr, maxBytes),
      child,
    ]);
    const durationMs = Math.round(performance.now() - started);
    if (result.exitCode === undefined && !timedOut) {
      throw dockerSpawnError(args, undefined, decodeUtf8(err.data), result);
    }
    const stderr = decodeUtf8(err.data);
    if (result.exitCode !== 0 && !timedOut && looksLikeMissingContainer(stderr)) await assertBoxRunning(id);
    return {
      exitCode: timedOut ? EXEC_TIMEOUT_EXIT_CODE : (result.exitCode ?? -1),
      stdout: decodeUtf8(out.data),
      stderr,
      truncated: out.truncated || err.truncated,
      timedOut,
      durationMs,
    };
  } finally {
    clearTimeout(timer);
    clearTimeout(grace);
  }
}

/**
 * Reads a stream to its end, keeping at most `max` bytes; the rest is read and dropped so the
 * writer never blocks and memory stays bounded.
 */
export async function captureCapped(
  stream: Readable | null | undefined,
  max: number,
): Promise<{ data: Buffer; truncated: boolean; total: number }> {
  const kept: Buffer[] = [];
  let size = 0;
  let total = 0;
  if (!stream) return { data: Buffer.alloc(0), truncated: false, total };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (size >= max) continue;
    const room = max - size;
    // Copy a partial chunk so the dropped tail is not kept alive by a view.
    const piece = chunk.length <= room ? chunk : Buffer.from(chunk.subarray(0, room));
    kept.push(piece);
    size += piece.length;
  }
  const data = Buffer.concat(kept, size);
  const truncated = total > max;
  return { data: truncated ? trimPartialUtf8(data) : data, truncated, total };
}

/** Drops an incomplete UTF-8 sequence that the cap cut at the end. */
export function trimPartialUtf8(data: Buffer): Buffer {
  for (let back = 1; back <= Math.min(3, data.length); back += 1) {
    const byte = data[data.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    // Only a valid lead byte (C2..F4) starts a sequence the cap may have cut; anything else is
    // already invalid and decodes to U+FFFD on its own.
    const need = byte >= 0xc2 && byte <= 0xf4 ? (byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2) : 1;
    return need > back ? data.subarray(0, data.length - back) : data;
  }
  return data;
}

/** UTF-8 to string, invalid sequences as U+FFFD, a BOM kept as data. */
export function decodeUtf8(data: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(data);
}
