import { posix } from 'node:path';
import type { Writable } from 'node:stream';
import { ENV_NAME_PATTERN, hasControlCharacter } from '@ca-sandbox/docker/contracts';
// The light docker entry and no zod: `ca-sandbox exec` start-up is measured against raw docker exec.
import { BOX_USER, type ExecSpec, isProxyVariable, REPO_DIR } from '@ca-sandbox/docker/process';
import { InvalidOptionsError } from './errors.js';
import { KILL_MARKER_ENV } from './in-box-kill.js';

// exec's contract and the checks of its arguments (argv, env, workdir, limits): what a caller may
// ask, validated before anything runs. The exec itself is exec.ts.

/** The exec contract of DESIGN.md. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /**
   * stdout or stderr went past `maxBytes`: its start and its end were kept, with a line between
   * that says how many bytes were left out (below a 256-byte cap, the start only).
   */
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

const EXEC_OPTION_KEYS = new Set(['timeoutMs', 'maxBytes', 'env', 'workdir', 'signal']);
const MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const MAX_CAP_BYTES = 256 * 1024 * 1024;
const MAX_ENV_ENTRIES = 64;
const MAX_ENV_VALUE = 32 * 1024;
/** Our own variables (the kill marker): a caller setting them could hide a command from the kill. */
const RESERVED_ENV_PREFIXES = ['CA_SBX_', 'CA_SANDBOX_'];

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
    if (isProxyVariable(name)) {
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

export function checkArgv(argv: unknown): string[] {
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
