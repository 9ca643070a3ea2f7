import type { Readable } from 'node:stream';
// The light docker entry and no zod: `ca-sandbox exec` start-up is measured against raw docker exec.
import {
  DockerUnavailableError,
  dockerSpawnError,
  isDaemonUnreachable,
  spawnDocker,
} from '@ca-sandbox/docker/process';
import { InvalidOptionsError } from './errors.js';
import { BOX_USER, BOX_WORKDIR, looksLikeMissingContainer, resolveBox } from './names.js';

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

const EXEC_OPTION_KEYS = new Set(['timeoutMs', 'maxBytes']);
const MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const MAX_CAP_BYTES = 256 * 1024 * 1024;

function positiveInt(value: unknown, max: number, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new InvalidOptionsError(`invalid exec options: ${name} must be a whole number from 1 to ${max}`);
  }
  return value;
}

/** Fills every default; InvalidOptionsError on anything else (unknown keys included). */
export function resolveExecOptions(
  input: unknown = {},
): Required<Pick<ExecOptions, 'maxBytes'>> & ExecOptions {
  const options = (input ?? {}) as Record<string, unknown>;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionsError('invalid exec options: expected an object');
  }
  const unknown = Object.keys(options).filter((key) => !EXEC_OPTION_KEYS.has(key));
  if (unknown.length)
    throw new InvalidOptionsError(`invalid exec options: unknown option(s) ${unknown.join(', ')}`);
  const timeoutMs = positiveInt(options.timeoutMs, MAX_TIMEOUT_MS, 'timeoutMs');
  const maxBytes = positiveInt(options.maxBytes, MAX_CAP_BYTES, 'maxBytes') ?? DEFAULT_EXEC_MAX_BYTES;
  return timeoutMs === undefined ? { maxBytes } : { maxBytes, timeoutMs };
}

function checkArgv(argv: unknown): string[] {
  if (!Array.isArray(argv) || argv.length === 0)
    throw new InvalidOptionsError('invalid command: give a command to run');
  for (const arg of argv) {
    if (typeof arg !== 'string') throw new InvalidOptionsError('invalid command: arguments must be strings');
    if (arg.includes('\0')) throw new InvalidOptionsError('invalid command: arguments must not contain NUL');
  }
  return [...argv] as string[];
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
  const command = checkArgv(argv);
  const { maxBytes, timeoutMs } = resolveExecOptions(options);
  // Only a box: a helper (or a stranger carrying the name) is refused before anything runs.
  const container = await resolveBox(id);
  // node:crypto costs milliseconds to load: only a timeout needs the marker.
  const marker = timeoutMs ? (await import('node:crypto')).randomBytes(8).toString('hex') : undefined;
  const args = buildExecArgs(container, command, marker);
  const started = performance.now();
  const child = spawnDocker(args);
  let timedOut = false;
  let grace: NodeJS.Timeout | undefined;
  const timer =
    timeoutMs && marker
      ? setTimeout(() => {
          timedOut = true;
          void sideCommand(buildKillArgs(container, marker), 10_000);
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
    if (result.exitCode !== 0 && !timedOut) {
      // The docker client's own failure is never reported as the command's exit; the text alone
      // proves nothing (the command may print it), so the daemon is asked.
      if (isDaemonUnreachable(stderr)) {
        const check = await sideCommand(['version', '--format', '{{.Server.Version}}'], 20_000);
        if (check.exitCode !== 0 && isDaemonUnreachable(check.stderr)) {
          throw new DockerUnavailableError('the daemon does not answer (docker exec)');
        }
      }
      if (looksLikeMissingContainer(stderr)) {
        const { assertBoxRunning } = await import('./_utils.js');
        await assertBoxRunning(id);
      }
    }
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
 * A docker command beside the exec (the in-box kill, the daemon check), through spawnDocker like
 * the exec itself, so that this hot path never loads execa. Never throws.
 */
async function sideCommand(
  argv: string[],
  timeoutMs: number,
): Promise<{ exitCode: number | undefined; stderr: string }> {
  const child = spawnDocker(argv, { stdout: 'ignore' });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const [err, result] = await Promise.all([captureCapped(child.stderr, 64 * 1024), child]);
    return { exitCode: result.exitCode, stderr: decodeUtf8(err.data) };
  } catch {
    return { exitCode: undefined, stderr: '' };
  } finally {
    clearTimeout(timer);
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
