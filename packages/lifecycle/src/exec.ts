import { posix } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ENV_NAME_PATTERN, hasControlCharacter } from '@ca-sandbox/docker/contracts';
// The light docker entry and no zod: `ca-sandbox exec` start-up is measured against raw docker exec.
import {
  BOX_USER,
  DOCKER_CLI_PROXY_VARIABLES,
  type DockerChild,
  type DockerProcessResult,
  DockerUnavailableError,
  dockerSpawnError,
  internalExecArgs,
  isDaemonUnreachable,
  REPO_DIR,
  SH_BIN,
  spawnDocker,
} from '@ca-sandbox/docker/process';
import { ExecInterruptedError, InvalidOptionsError } from './errors.js';
import { boxName, looksLikeMissingContainer, resolveBox } from './names.js';

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
  /** Extra environment of the command: non-secret values (they are on the docker argv). */
  env?: Record<string, string>;
  /** Working directory in the box; relative to /work/repo. Default /work/repo. */
  workdir?: string;
  /**
   * Aborting stops the command: it and what it forked are killed inside the box, then
   * ExecInterruptedError is thrown (its `reason` is the abort reason, e.g. 'SIGINT').
   */
  signal?: AbortSignal;
}

/** Where a streamed exec writes: a stream of ours, or the caller's own file descriptor. */
export type ExecSink = Writable | 'inherit';

export interface StreamExecOptions extends Omit<ExecOptions, 'maxBytes'> {
  stdout: ExecSink;
  stderr: ExecSink;
}

/** The outcome of a streamed exec: the output went to the sinks as it came. */
export interface StreamExecResult {
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
}

export const DEFAULT_EXEC_MAX_BYTES = 1024 * 1024;
/** Exit code reported for a command killed on timeout (as timeout(1) does). */
export const EXEC_TIMEOUT_EXIT_CODE = 124;
/** How long the docker client may linger after the in-box kill before we kill it too. */
const CLIENT_GRACE_MS = 3000;

const EXEC_OPTION_KEYS = new Set(['timeoutMs', 'maxBytes', 'env', 'workdir', 'signal']);
const MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const MAX_CAP_BYTES = 256 * 1024 * 1024;
const MAX_ENV_ENTRIES = 64;
const MAX_ENV_VALUE = 32 * 1024;
/** Our own variables (the kill marker): a caller setting them could hide a command from the kill. */
const RESERVED_ENV_PREFIXES = ['CA_SBX_', 'CA_SANDBOX_'];
const PROXY_NAMES = new Set<string>(DOCKER_CLI_PROXY_VARIABLES.map((name) => name.toUpperCase()));

function positiveInt(value: unknown, max: number, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new InvalidOptionsError(`invalid exec options: ${name} must be a whole number from 1 to ${max}`);
  }
  return value;
}

/**
 * The rule for `env`: names of letters, digits and `_`; not ours (`CA_SBX_*`, `CA_SANDBOX_*`)
 * and not a proxy variable (the box's are kept empty on purpose); values without NUL.
 */
export function checkExecEnv(env: unknown): Record<string, string> | undefined {
  if (env === undefined) return undefined;
  if (typeof env !== 'object' || env === null || Array.isArray(env)) {
    throw new InvalidOptionsError('invalid exec options: env must be an object of strings');
  }
  const entries = Object.entries(env as Record<string, unknown>);
  if (entries.length > MAX_ENV_ENTRIES) {
    throw new InvalidOptionsError(`invalid exec options: at most ${MAX_ENV_ENTRIES} environment variables`);
  }
  for (const [name, value] of entries) {
    if (!ENV_NAME_PATTERN.test(name)) {
      throw new InvalidOptionsError(
        `invalid environment variable name '${name.slice(0, 60)}': use letters, digits and _, not starting with a digit`,
      );
    }
    if (RESERVED_ENV_PREFIXES.some((prefix) => name.toUpperCase().startsWith(prefix))) {
      throw new InvalidOptionsError(`environment variable ${name} is reserved for ca-sandbox itself`);
    }
    if (PROXY_NAMES.has(name.toUpperCase())) {
      throw new InvalidOptionsError(
        `environment variable ${name} is refused: proxy variables in a box are kept empty by ca-sandbox`,
      );
    }
    if (typeof value !== 'string' || value.includes('\0') || value.length > MAX_ENV_VALUE) {
      throw new InvalidOptionsError(
        `invalid value for environment variable ${name}: a string without NUL, at most ${MAX_ENV_VALUE} characters`,
      );
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/**
 * The rule for `workdir`: any directory of the box (the box, not the directory, is the boundary),
 * relative paths against /work/repo, normalised; no control characters.
 */
export function resolveExecWorkdir(workdir: unknown): string {
  if (workdir === undefined) return REPO_DIR;
  if (
    typeof workdir !== 'string' ||
    workdir === '' ||
    workdir.length > 4096 ||
    hasControlCharacter(workdir)
  ) {
    throw new InvalidOptionsError(
      'invalid working directory: a path in the box without control characters (relative paths start at /work/repo)',
    );
  }
  return posix.resolve(REPO_DIR, workdir);
}

export interface ResolvedExecOptions {
  maxBytes: number;
  timeoutMs?: number;
  env?: Record<string, string>;
  workdir: string;
  signal?: AbortSignal;
}

/** Fills every default; InvalidOptionsError on anything else (unknown keys included). */
export function resolveExecOptions(input: unknown = {}): ResolvedExecOptions {
  const options = (input ?? {}) as Record<string, unknown>;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionsError('invalid exec options: expected an object');
  }
  const unknown = Object.keys(options).filter((key) => !EXEC_OPTION_KEYS.has(key));
  if (unknown.length)
    throw new InvalidOptionsError(`invalid exec options: unknown option(s) ${unknown.join(', ')}`);
  const timeoutMs = positiveInt(options.timeoutMs, MAX_TIMEOUT_MS, 'timeoutMs');
  const maxBytes = positiveInt(options.maxBytes, MAX_CAP_BYTES, 'maxBytes') ?? DEFAULT_EXEC_MAX_BYTES;
  const env = checkExecEnv(options.env);
  const workdir = resolveExecWorkdir(options.workdir);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new InvalidOptionsError('invalid exec options: signal must be an AbortSignal');
  }
  const resolved: ResolvedExecOptions = { maxBytes, workdir };
  if (timeoutMs !== undefined) resolved.timeoutMs = timeoutMs;
  if (env && Object.keys(env).length) resolved.env = env;
  if (options.signal) resolved.signal = options.signal;
  return resolved;
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
 * The `docker exec` argv: always the box user, never a TTY, never privileged. The command carries
 * `CA_SBX_EXEC=<marker>` in its environment so that a timeout or an interrupt can find it (and
 * what it forked) inside the box. The caller's env comes before the marker, which it cannot name.
 */
export function buildExecArgs(
  container: string,
  argv: readonly string[],
  marker?: string,
  options: { env?: Record<string, string>; workdir?: string } = {},
): string[] {
  const args = ['exec', '-u', BOX_USER, '-w', options.workdir ?? REPO_DIR];
  for (const [name, value] of Object.entries(options.env ?? {})) args.push('-e', `${name}=${value}`);
  if (marker) args.push('-e', `CA_SBX_EXEC=${marker}`);
  return [...args, container, ...argv];
}

/**
 * The in-box kill: every process whose environment holds our marker, and its process group
 * (docker exec makes the command a session and group leader), killed with SIGKILL, a few rounds
 * so that children forked meanwhile go too. Nothing here is looked up on the box's PATH (a
 * dependency may ship `sh` or `grep`): /bin/sh and /bin/grep by path, from an empty environment.
 */
export function buildKillArgs(container: string, marker: string): string[] {
  const script = [
    'for round in 1 2 3; do',
    '  for p in /proc/[0-9]*; do',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '    pid=${p#/proc/}',
    '    if /bin/grep -qsxzF "CA_SBX_EXEC=$1" "$p/environ"; then',
    // dash's kill takes no `--`: the group and the process in two calls, so one miss skips nothing.
    '      kill -s KILL "-$pid" 2>/dev/null; kill -s KILL "$pid" 2>/dev/null',
    '    fi',
    '  done',
    'done',
  ].join('\n');
  return internalExecArgs(container, [SH_BIN, '-c', script, 'ca-sbx-kill', marker], { user: BOX_USER });
}

/**
 * A marker unique among concurrent execs. Not a secret (a process that copies it only gets itself
 * killed); node:crypto is not loaded for it, to keep exec start-up short.
 */
function newMarker(): string {
  const random = () =>
    Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return `${process.pid.toString(16)}${Date.now().toString(16)}${random()}${random()}`;
}

/** One docker exec with its kill switch: the timeout and the caller's abort both kill in the box. */
class BoxExec {
  readonly container: string;
  readonly args: string[];
  readonly child: DockerChild;
  readonly started = performance.now();
  timedOut = false;
  interrupted: string | undefined;
  private stopping: Promise<void> | undefined;
  private readonly marker = newMarker();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onAbort = () => {
    const reason = this.options.signal?.reason;
    this.interrupted = typeof reason === 'string' ? reason : 'aborted';
    void this.stop();
  };

  constructor(
    id: string,
    argv: readonly string[],
    private readonly options: ResolvedExecOptions,
    stdio: { stdout: 'pipe' | 'inherit'; stderr: 'pipe' | 'inherit' },
  ) {
    this.container = boxName(id);
    this.args = buildExecArgs(this.container, argv, this.marker, options);
    // Its own process group: a terminal's Ctrl-C reaches the CLI, which stops the command in the box.
    this.child = spawnDocker(this.args, { ...stdio, detached: true });
    if (options.timeoutMs) {
      this.timers.push(
        setTimeout(() => {
          this.timedOut = true;
          void this.stop();
        }, options.timeoutMs),
      );
    }
    if (options.signal?.aborted) this.onAbort();
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /**
   * Kills the command in the box; if the client is still there after a grace period (the command
   * may have started after the first kill looked), kills once more, then the client.
   */
  private stop(): Promise<void> {
    this.stopping ??= (async () => {
      await sideCommand(buildKillArgs(this.container, this.marker), 10_000);
      const exited = await Promise.race([
        this.child.then(() => true),
        new Promise<false>((resolve) => this.timers.push(setTimeout(() => resolve(false), CLIENT_GRACE_MS))),
      ]);
      if (exited) return;
      await sideCommand(buildKillArgs(this.container, this.marker), 10_000);
      this.child.kill('SIGKILL');
    })();
    return this.stopping;
  }

  /** Waits for the client; throws ExecInterruptedError once an interrupted command is gone. */
  async finish(): Promise<DockerProcessResult> {
    try {
      const result = await this.child;
      if (this.interrupted !== undefined) {
        await this.stopping;
        throw new ExecInterruptedError(this.interrupted);
      }
      return result;
    } finally {
      for (const timer of this.timers) clearTimeout(timer);
      this.options.signal?.removeEventListener('abort', this.onAbort);
    }
  }

  get durationMs(): number {
    return Math.round(performance.now() - this.started);
  }

  /**
   * The docker client's own failure is never reported as the command's exit: missing box or
   * daemon down become errors. The text alone proves nothing (the command may print it), so the
   * engine is asked.
   */
  async checkClient(id: string, result: DockerProcessResult, stderr: string): Promise<void> {
    if (result.exitCode === undefined && !this.timedOut) {
      throw dockerSpawnError(this.args, undefined, stderr, result);
    }
    if (result.exitCode === 0 || this.timedOut) return;
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

  exitCode(result: DockerProcessResult): number {
    return this.timedOut ? EXEC_TIMEOUT_EXIT_CODE : (result.exitCode ?? -1);
  }
}

/**
 * Runs `argv` in the sandbox as 1000:1000 (at /work/repo unless `workdir`) and returns the exec
 * contract: stdout and stderr apart, each capped at `maxBytes` (the rest drained and dropped,
 * never buffered), invalid UTF-8 as U+FFFD, and on `timeoutMs` or an abort the command killed
 * inside the box, not only the client. One `docker exec` on the hot path.
 */
export async function execInSandbox(
  id: string,
  argv: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const command = checkArgv(argv);
  const resolved = resolveExecOptions(options);
  // Only a box: a helper (or a stranger carrying the name) is refused before anything runs.
  await resolveBox(id);
  const run = new BoxExec(id, command, resolved, { stdout: 'pipe', stderr: 'pipe' });
  const [out, err, result] = await Promise.all([
    captureCapped(run.child.stdout, resolved.maxBytes),
    captureCapped(run.child.stderr, resolved.maxBytes),
    run.finish(),
  ]);
  const stderr = decodeUtf8(err.data);
  await run.checkClient(id, result, stderr);
  return {
    exitCode: run.exitCode(result),
    stdout: decodeUtf8(out.data),
    stderr,
    truncated: out.truncated || err.truncated,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
  };
}

/** How much of stderr is kept to tell the docker client's own failure from the command's. */
const STDERR_TAIL_BYTES = 8 * 1024;

/**
 * Like execInSandbox, but stdout and stderr go to `stdout` and `stderr` as they come (a stream of
 * ours, or `'inherit'`: the caller's own descriptor, no copy) and nothing is kept. Resolves with
 * the command's exit code once its output is delivered.
 */
export async function streamExecInSandbox(
  id: string,
  argv: readonly string[],
  options: StreamExecOptions,
): Promise<StreamExecResult> {
  const command = checkArgv(argv);
  const { stdout, stderr, ...rest } = options;
  for (const sink of [stdout, stderr]) {
    if (sink !== 'inherit' && typeof (sink as Writable | undefined)?.write !== 'function') {
      throw new InvalidOptionsError(
        "invalid exec options: stdout and stderr must be writable streams or 'inherit'",
      );
    }
  }
  const resolved = resolveExecOptions(rest);
  await resolveBox(id);
  // stderr always comes through us: its tail tells a missing box or a dead daemon from the command.
  const run = new BoxExec(id, command, resolved, {
    stdout: stdout === 'inherit' ? 'inherit' : 'pipe',
    stderr: 'pipe',
  });
  const tail = new StderrTail();
  const delivered = Promise.all([
    stdout === 'inherit' ? undefined : forward(run.child.stdout, stdout),
    forward(run.child.stderr, stderr === 'inherit' ? process.stderr : stderr, (chunk) => tail.add(chunk)),
  ]);
  const [result] = await Promise.all([run.finish(), delivered]);
  await run.checkClient(id, result, tail.text());
  return { exitCode: run.exitCode(result), timedOut: run.timedOut, durationMs: run.durationMs };
}

/** Copies a child stream into a sink with backpressure; never ends the sink (the caller owns it). */
async function forward(
  source: Readable | null,
  sink: Writable,
  observe?: (chunk: Buffer) => void,
): Promise<void> {
  if (!source) return;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    observe?.(chunk);
    if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once('drain', resolve));
  }
}

/** The last few KiB of a stream. */
class StderrTail {
  private chunks: Buffer[] = [];
  private size = 0;

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= STDERR_TAIL_BYTES) {
      this.size -= (this.chunks.shift() as Buffer).length;
    }
  }

  text(): string {
    return decodeUtf8(Buffer.concat(this.chunks));
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
