import { posix } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  ENV_NAME_PATTERN,
  hasControlCharacter,
  SHOWN_NAME_MAX,
  sanitizeName,
} from '@ca-sandbox/docker/contracts';
// The light docker entry and no zod: `ca-sandbox exec` start-up is measured against raw docker exec.
import {
  BOX_USER,
  DOCKER_CLI_PROXY_VARIABLES,
  DockerEngineError,
  DockerNotFoundError,
  type ExecChild,
  type ExecEnd,
  type ExecSpec,
  REPO_DIR,
  startExec,
} from '@ca-sandbox/docker/process';
import { type CommandEntry, loggedArgv, recordCommand } from './command-log.js';
import { CommandNotFoundError, ExecInterruptedError, ExecStartError, InvalidOptionsError } from './errors.js';
import { KILL_MARKER_ENV, killInBox, newKillMarker } from './in-box-kill.js';
import { boxName, resolveBox } from './names.js';

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
  /**
   * Set (true) when the command exited 137 because the kernel killed a process of it for want of
   * memory: the box reached its memory limit (`create --memory` gives a new box more).
   */
  outOfMemory?: true;
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
  /** As ExecResult.outOfMemory. */
  outOfMemory?: true;
}

export const DEFAULT_EXEC_MAX_BYTES = 1024 * 1024;
/** Exit code reported for a command killed on timeout (as timeout(1) does). */
export const EXEC_TIMEOUT_EXIT_CODE = 124;
/** How long the exec's stream may stay open after the in-box kill before we drop it. */
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
 * The exec: always the box user, never a TTY, never privileged (startExec sets neither). The
 * command carries `CA_SBX_EXEC=<marker>` in its environment so that a timeout or an interrupt can
 * find it (and what it forked) inside the box. The caller's env comes before the marker, which it
 * cannot name.
 */
export function buildExecSpec(
  argv: readonly string[],
  marker?: string,
  options: { env?: Record<string, string>; workdir?: string } = {},
): ExecSpec {
  const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
  if (marker) env.push(`${KILL_MARKER_ENV}=${marker}`);
  return { cmd: [...argv], user: BOX_USER, workdir: options.workdir ?? REPO_DIR, env };
}

/** The reasons the engine gives for a process it could not start, as they may be shown. */
const START_REASONS = [
  'executable file not found',
  'no such file or directory',
  'permission denied',
  'is a directory',
  'not a directory',
  'exec format error',
] as const;

/**
 * Why a command never started, from the engine's message (the engine's text about our own argv and
 * workdir; only a reason of START_REASONS is repeated, the rest of the text is never shown):
 * CommandNotFoundError (127) for a program the box does not have, else ExecStartError (126).
 */
export function startFailureError(engineMessage: string, argv: readonly string[], workdir: string): Error {
  const text = engineMessage.toLowerCase();
  const reason = START_REASONS.find((known) => text.includes(known));
  const command = argv[0] ?? '';
  // runc: `chdir to cwd ("/work/repo/x") set in config.json failed`; runsc: `...chdir...`.
  if (/\bchdir\b|\bcwd\b|working dir/.test(text)) {
    return new ExecStartError(
      `working directory not usable in the box: ${sanitizeName(workdir, SHOWN_NAME_MAX)}${reason ? ` (${reason})` : ''}`,
      { hint: 'the working directory must be a directory of the box; relative paths start at /work/repo' },
    );
  }
  if (reason === 'executable file not found' || reason === 'no such file or directory') {
    return new CommandNotFoundError(command);
  }
  return new ExecStartError(
    `cannot run ${sanitizeName(command, SHOWN_NAME_MAX)} in the box${reason ? `: ${reason}` : ''}`,
  );
}

/** One exec with its kill switch: the timeout and the caller's abort both kill in the box. */
class BoxExec {
  readonly container: string;
  readonly child: ExecChild;
  // process.hrtime, not performance.now(): the `performance` global loads perf_hooks on first
  // use, 4 ms of the exec hot path for a duration in whole milliseconds.
  readonly started = process.hrtime.bigint();
  /** Wall clock at the start, in seconds: where the box's `oom` events of this exec begin. */
  private readonly startedAtSeconds = Date.now() / 1000;
  timedOut = false;
  interrupted: string | undefined;
  private stopping: Promise<void> | undefined;
  /**
   * Whether the box check passed. A timeout or an abort may come before its answer: the in-box
   * kill waits for it (it must never run in a container that is not the id's box), and a failed
   * check is the outcome, never a timed-out command.
   */
  private readonly isBox: Promise<boolean>;
  private readonly marker = newKillMarker();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onAbort = () => {
    const reason = this.options.signal?.reason;
    this.interrupted = typeof reason === 'string' ? reason : 'aborted';
    void this.stop();
  };

  constructor(
    id: string,
    private readonly argv: readonly string[],
    private readonly options: ResolvedExecOptions,
    output: { stdout: 'pipe' | Writable; stderr: 'pipe' | Writable },
    gate: Promise<unknown>,
  ) {
    this.container = boxName(id);
    this.isBox = gate.then(
      () => true,
      () => false,
    );
    // Over the Engine API: no docker client process, so a terminal's Ctrl-C reaches only us, and
    // we stop the command in the box.
    this.child = startExec(
      this.container,
      buildExecSpec(argv, this.marker, options),
      { ...output, reportStartFailure: true },
      gate,
    );
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
   * Kills the command in the box; if its stream is still open after a grace period (the command
   * may have started after the first kill looked), kills once more, then drops the connection.
   */
  private stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Not a box: nothing was started there, and nothing of ours may run there (the exec ends
      // with the check's error on its own).
      if (!(await this.isBox)) return;
      await killInBox(this.container, this.marker);
      const exited = await Promise.race([
        this.child.then(() => true),
        new Promise<false>((resolve) => this.timers.push(setTimeout(() => resolve(false), CLIENT_GRACE_MS))),
      ]);
      if (exited) return;
      await killInBox(this.container, this.marker);
      this.child.kill();
    })();
    return this.stopping;
  }

  /** Waits for the exec; throws ExecInterruptedError once an interrupted command is gone. */
  async finish(): Promise<ExecEnd> {
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
    return Number((process.hrtime.bigint() - this.started) / 1_000_000n);
  }

  /**
   * An exec that could not run is never reported as the command's exit: a missing or stopped box
   * becomes the box's own error (asked of the engine), a daemon down DockerUnavailableError.
   */
  async checkRun(id: string, result: ExecEnd): Promise<void> {
    if (result.notStarted && !this.timedOut) {
      throw startFailureError(result.notStarted.message, this.argv, this.options.workdir);
    }
    if (!result.error || (this.timedOut && (await this.isBox))) return;
    const error = result.error;
    if (
      error instanceof DockerNotFoundError ||
      (error instanceof DockerEngineError && error.status === 409)
    ) {
      const { assertBoxRunning } = await import('./_utils.js');
      await assertBoxRunning(id);
    }
    throw error;
  }

  exitCode(result: ExecEnd): number {
    return this.timedOut ? EXEC_TIMEOUT_EXIT_CODE : (result.exitCode ?? -1);
  }

  /**
   * `{ outOfMemory: true }` when the command exited 137 (SIGKILL) and the engine logged an `oom`
   * event of the box since it started; else nothing. Asked only then (one engine call, once more
   * 250 ms later when it finds none), and a failure to ask is no answer: the exit code stands.
   */
  async memoryVerdict(result: ExecEnd): Promise<{ outOfMemory?: true }> {
    if (this.timedOut || this.interrupted !== undefined || result.exitCode !== 137) return {};
    try {
      const { engine } = await import('@ca-sandbox/docker');
      const asked = () => engine.container.oomKillsSince(this.container, this.startedAtSeconds);
      // The engine logs the event from containerd's OOM notice, which may come after the exit.
      if ((await asked()) > 0) return { outOfMemory: true };
      await new Promise((resolve) => setTimeout(resolve, 250));
      return (await asked()) > 0 ? { outOfMemory: true } : {};
    } catch {
      return {};
    }
  }
}

/**
 * Runs `argv` in the sandbox as 1000:1000 (at /work/repo unless `workdir`) and returns the exec
 * contract: stdout and stderr apart, each capped at `maxBytes` (the rest drained and dropped,
 * never buffered), invalid UTF-8 as U+FFFD, and on `timeoutMs` or an abort the command killed
 * inside the box, not only the connection. Three Engine API calls on the hot path, no process.
 */
export async function execInSandbox(
  id: string,
  argv: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const command = checkArgv(argv);
  const resolved = resolveExecOptions(options);
  // Only a box: a helper (or a stranger carrying the name) is refused before anything runs (the
  // check is the exec's gate: asked while the exec is created, passed before it starts).
  const startedAt = new Date();
  const run = new BoxExec(id, command, resolved, { stdout: 'pipe', stderr: 'pipe' }, resolveBox(id));
  const [out, err, result] = await Promise.all([
    captureCapped(run.child.stdout, resolved.maxBytes),
    captureCapped(run.child.stderr, resolved.maxBytes),
    run.finish(),
  ]).catch(logInterrupted(id, command, startedAt, run));
  await run.checkRun(id, result);
  const durationMs = run.durationMs;
  const done: ExecResult = {
    exitCode: run.exitCode(result),
    stdout: decodeUtf8(out.data),
    stderr: decodeUtf8(err.data),
    truncated: out.truncated || err.truncated,
    timedOut: run.timedOut,
    durationMs,
    ...(await run.memoryVerdict(result)),
  };
  await recordCommand(id, execEntry(command, startedAt, done, out.total, err.total));
  return done;
}

/**
 * A command interrupted after it started (Ctrl-C, an MCP cancel, a signal) ran all the same: it
 * goes on the command log, without an exit code, before the interruption is thrown on. A hang
 * until the user gives up must not keep a command off the report.
 */
function logInterrupted(id: string, argv: readonly string[], startedAt: Date, run: BoxExec) {
  return async (error: unknown): Promise<never> => {
    if (run.interrupted !== undefined)
      await recordCommand(id, {
        via: 'exec',
        command: loggedArgv(argv),
        user: BOX_USER,
        startedAt: startedAt.toISOString(),
        durationMs: run.durationMs,
        exitCode: null,
        timedOut: false,
        outOfMemory: false,
        stdoutBytes: null,
        stderrBytes: null,
        error: 'EXEC_INTERRUPTED',
      });
    throw error;
  };
}

/** The command log's line of an exec that ran (command-log.ts). */
function execEntry(
  argv: readonly string[],
  startedAt: Date,
  done: { exitCode: number; timedOut: boolean; durationMs: number; outOfMemory?: true },
  stdoutBytes: number | null,
  stderrBytes: number | null,
): CommandEntry {
  return {
    via: 'exec',
    command: loggedArgv(argv),
    user: BOX_USER,
    startedAt: startedAt.toISOString(),
    durationMs: done.durationMs,
    exitCode: done.exitCode,
    timedOut: done.timedOut,
    outOfMemory: done.outOfMemory === true,
    stdoutBytes,
    stderrBytes,
  };
}

/**
 * Like execInSandbox, but stdout and stderr go to `stdout` and `stderr` as they come (a stream of
 * ours, or `'inherit'`: the caller's own stdout/stderr, the bytes unchanged) and nothing is kept.
 * Resolves with the command's exit code once its output is delivered.
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
  const run = new BoxExec(
    id,
    command,
    resolved,
    {
      stdout: stdout === 'inherit' ? process.stdout : stdout,
      stderr: stderr === 'inherit' ? process.stderr : stderr,
    },
    resolveBox(id),
  );
  const startedAt = new Date();
  const result = await run.finish().catch(logInterrupted(id, command, startedAt, run));
  await run.checkRun(id, result);
  const durationMs = run.durationMs;
  const done: StreamExecResult = {
    exitCode: run.exitCode(result),
    timedOut: run.timedOut,
    durationMs,
    ...(await run.memoryVerdict(result)),
  };
  // Streamed output goes to its sinks as it comes: its bytes are not counted here.
  await recordCommand(id, execEntry(command, startedAt, done, null, null));
  return done;
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
