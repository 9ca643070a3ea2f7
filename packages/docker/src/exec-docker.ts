import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { engineEndpoint } from './endpoint.js';
import { DockerCommandError, DockerUnavailableError } from './errors.js';

export interface DockerRunOptions {
  /** Data for docker's stdin. */
  input?: string | Buffer | Readable;
  /** Kill docker after this many milliseconds. */
  timeoutMs?: number;
  /** Return the failure instead of throwing DockerCommandError. */
  allowFailure?: boolean;
  signal?: AbortSignal;
}

export interface DockerResult {
  argv: string[];
  exitCode: number;
  stdout: string;
  stderr: string;
}

type Tracer = (argv: readonly string[]) => void;
let tracer: Tracer | undefined;

/** Called with every docker argv before it runs (the CLI's `--verbose`). */
export function setDockerTracer(trace: Tracer | undefined): void {
  tracer = trace;
}

/** The tracer in place, for the engine socket reads (internal). */
export function tracerFor(): Tracer | undefined {
  return tracer;
}

/**
 * Only the variables docker itself needs reach the docker CLI: nothing of the caller's
 * environment can leak into a `docker build` or `docker run` through the client. The engine is
 * named explicitly (DOCKER_HOST, or DOCKER_CONTEXT for a context) from the one resolution that the
 * Engine API client uses too, so a CLI process and an API call never reach two engines.
 */
export function dockerEnv(): Record<string, string> {
  const env: Record<string, string> = { DOCKER_CLI_HINTS: 'false', DOCKER_BUILDKIT: '0' };
  for (const key of ['PATH', 'HOME', 'DOCKER_CONFIG']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...engineEndpoint().cliEnv };
}

const UNREACHABLE = [
  /Cannot connect to the Docker daemon/i,
  /error during connect/i,
  /Is the docker daemon running/i,
  /connect: no such file or directory/i,
  /connect: connection refused/i,
  /dial unix .*: connect/i,
];

/** True when stderr says the daemon, not the command, is the problem. */
export function isDaemonUnreachable(stderr: string): boolean {
  return UNREACHABLE.some((pattern) => pattern.test(stderr));
}

function unavailable(argv: readonly string[], error: unknown): DockerUnavailableError | undefined {
  const code = (error as { code?: string }).code;
  if (code === 'ENOENT') return new DockerUnavailableError('the docker binary was not found on PATH');
  const stderr = String((error as { stderr?: unknown }).stderr ?? '');
  if (isDaemonUnreachable(stderr)) {
    return new DockerUnavailableError(`the daemon does not answer (docker ${argv[0] ?? ''})`);
  }
  return undefined;
}

/**
 * Runs `docker <argv>` (never through a shell) and returns its output.
 * Throws DockerUnavailableError when docker is missing or its daemon unreachable, and
 * DockerCommandError on a non-zero exit unless `allowFailure`.
 */
export async function docker(argv: readonly string[], options: DockerRunOptions = {}): Promise<DockerResult> {
  tracer?.(argv);
  // Loaded on first use: the streaming hot path (exec, cp) never pays for execa.
  const { execa } = await import('execa');
  const result = await execa('docker', [...argv], {
    env: dockerEnv(),
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
    ...(options.signal ? { cancelSignal: options.signal } : {}),
  });
  if (result.failed && result.exitCode === undefined) {
    throw unavailable(argv, result) ?? new DockerCommandError(argv, -1, String(result.message ?? ''));
  }
  const outcome: DockerResult = {
    argv: [...argv],
    exitCode: result.exitCode ?? -1,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
  };
  if (outcome.exitCode !== 0) {
    const down = unavailable(argv, outcome);
    if (down) throw down;
    if (!options.allowFailure) throw new DockerCommandError(argv, outcome.exitCode, outcome.stderr);
  }
  return outcome;
}

export interface DockerSpawnOptions {
  stdin?: 'ignore' | 'pipe' | 'inherit';
  stdout?: 'pipe' | 'inherit' | 'ignore';
  stderr?: 'pipe' | 'inherit' | 'ignore';
  /**
   * Its own session and process group: a Ctrl-C at the terminal reaches us, not docker, so the
   * caller decides how the command stops (the docker client would exit 0 and leave it running).
   */
  detached?: boolean;
}

/** How a spawned docker process ended: `exitCode` is undefined when it was killed or never ran. */
export interface DockerProcessResult {
  exitCode: number | undefined;
  signal?: NodeJS.Signals;
  /** The spawn error code (ENOENT when docker is missing). */
  code?: string;
}

/** A running docker process: awaitable for its result (never rejects), with raw streams. */
export type DockerChild = Promise<DockerProcessResult> & {
  stdin: Writable | null;
  stdout: Readable | null;
  stderr: Readable | null;
  pid: number | undefined;
  kill(signal?: NodeJS.Signals): boolean;
};

/**
 * Starts `docker <argv>` with raw streams (copy-out tar streams, exec output, TTY shells).
 * The caller owns the process; nothing is buffered. Plain node:child_process on purpose: this is
 * the hot path of `exec`, and it needs no more than spawn.
 */
export function spawnDocker(argv: readonly string[], options: DockerSpawnOptions = {}): DockerChild {
  tracer?.(argv);
  const child = spawn('docker', [...argv], {
    env: dockerEnv(),
    stdio: [options.stdin ?? 'ignore', options.stdout ?? 'pipe', options.stderr ?? 'pipe'],
    ...(options.detached ? { detached: true } : {}),
  });
  const done = new Promise<DockerProcessResult>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ exitCode: undefined, code: error.code }));
    child.once('close', (code, signal) =>
      resolve({ exitCode: code ?? undefined, ...(signal ? { signal } : {}) }),
    );
  });
  return Object.assign(done, {
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    pid: child.pid,
    kill: (signal?: NodeJS.Signals) => child.kill(signal),
  });
}

/** Maps a finished spawnDocker result's failure to our errors. */
export function dockerSpawnError(
  argv: readonly string[],
  exitCode: number | undefined,
  stderr: string,
  cause?: unknown,
): Error {
  const down = unavailable(argv, { ...(cause as object), stderr });
  if (down) return down;
  return new DockerCommandError(argv, exitCode ?? -1, stderr);
}
