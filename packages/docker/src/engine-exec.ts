// `docker exec` over the Engine API: create, start with the hijacked stream (stdout and stderr
// multiplexed in 8-byte-header frames), then inspect for the exit code. No zod and no CLI process:
// this is the hot path of `ca-sandbox exec`, measured against raw `docker exec`.
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { engineHijack, engineJson, segment } from './engine-client.js';
import { DockerEngineError } from './errors.js';
import type { DockerProcessResult } from './exec-docker.js';
import { ENV_BIN, type InternalExecOptions, internalExecCommand, SYSTEM_PATH } from './internal-exec.js';

/** What runs: the argv, as whom, where, with which variables. Never privileged. */
export interface ExecSpec {
  cmd: readonly string[];
  user: string;
  workdir?: string;
  /** `NAME=value` entries, docker's `-e`. */
  env?: readonly string[];
  /** Attach stdin: what the caller writes to `stdin` reaches the command (a tar stream, a script). */
  stdin?: boolean;
  /**
   * A terminal (`docker exec -t`, the interactive shell): the engine allocates a pty, the output is
   * one raw stream on `stdout` (no frames, stderr merged), and `engine.exec.resize` sizes it.
   */
  tty?: boolean;
}

/** How an exec ended: its exit code, or the error that kept it from running or finishing. */
export interface ExecEnd extends DockerProcessResult {
  /** DockerUnavailableError, DockerNotFoundError (no such container), DockerEngineError (not running). */
  error?: Error;
  /**
   * With `reportStartFailure`: the command never started (the engine recorded no process: a
   * command not found, not executable, a missing working directory). `message` is the engine's
   * own text, which it wrote as the exec's output; it was kept out of the stdout sink.
   */
  notStarted?: { message: string };
}

/**
 * How the engine's message begins when an exec cannot start the process (runc and runsc alike,
 * through containerd); the API writes it as the exec's first stdout frame, with `\r\n`.
 */
const START_FAILURE_PREFIX = Buffer.from('OCI runtime exec failed');

/** A running exec: awaitable for how it ended (never rejects), with its streams. */
export type ExecChild = Promise<ExecEnd> & {
  stdin: Writable | null;
  stdout: Readable | null;
  stderr: Readable | null;
  /** The exec's id once created. */
  readonly id: string | undefined;
  /** Drops the connection (the command itself goes on: kill it inside the box to stop it). */
  kill(): boolean;
};

export type ExecOutput = 'pipe' | 'ignore' | Writable;

/** The Engine API body of `POST /containers/{id}/exec`. */
function createBody(spec: ExecSpec): object {
  return {
    AttachStdin: spec.stdin === true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: spec.tty === true,
    Privileged: false,
    User: spec.user,
    Cmd: [...spec.cmd],
    ...(spec.workdir ? { WorkingDir: spec.workdir } : {}),
    ...(spec.env?.length ? { Env: [...spec.env] } : {}),
  };
}

/** Creates the exec; DockerNotFoundError when there is no such container, DockerEngineError when it is stopped. */
export async function createExec(container: string, spec: ExecSpec): Promise<string> {
  const answer = (await engineJson('POST', `/containers/${segment(container)}/exec`, {
    verb: 'exec create',
    body: createBody(spec),
  })) as { Id?: unknown } | undefined;
  if (typeof answer?.Id !== 'string')
    throw new DockerEngineError('exec create', 0, 'the engine gave no exec id');
  return answer.Id;
}

/** `GET /exec/{id}/json`: running or not, and the exit code once it ended. */
export async function inspectExec(
  id: string,
): Promise<{ running: boolean; exitCode: number | undefined; pid: number | undefined }> {
  const answer = (await engineJson('GET', `/exec/${segment(id)}/json`, { verb: 'exec inspect' })) as {
    Running?: unknown;
    ExitCode?: unknown;
    Pid?: unknown;
  };
  return {
    running: answer?.Running === true,
    exitCode: typeof answer?.ExitCode === 'number' ? answer.ExitCode : undefined,
    pid: typeof answer?.Pid === 'number' ? answer.Pid : undefined,
  };
}

/**
 * The exit code (and pid: 0 when no process ever started) once the engine has recorded it (the
 * stream may end a moment before).
 */
async function endStateOf(id: string): Promise<{ exitCode: number | undefined; pid: number | undefined }> {
  for (let round = 0; round < 50; round += 1) {
    const state = await inspectExec(id);
    if (!state.running && state.exitCode !== undefined) return state;
    await new Promise((resolve) => setTimeout(resolve, round < 10 ? 2 : 20));
  }
  return inspectExec(id);
}

/**
 * Splits docker's multiplexed stream (frames of [type, 0, 0, 0, size32be] + payload; type 1
 * stdout, 2 stderr) into two sinks, with backpressure on the connection.
 *
 * `holdStartFailure`: a first stdout frame that reads like the engine's start failure is held
 * back; the next frame releases it (the process did start and printed that itself), else it is
 * what the promise resolves with, for the caller to judge with the exec's state.
 */
export function demultiplex(
  source: Readable,
  head: Buffer,
  stdout: Writable,
  stderr: Writable,
  holdStartFailure = false,
): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    let pending = head.length ? head : Buffer.alloc(0);
    let first = true;
    let held: Buffer | undefined;
    const write = (sink: Writable, payload: Buffer) => {
      if (payload.length && !sink.write(payload)) {
        source.pause();
        sink.once('drain', () => source.resume());
      }
    };
    const drain = () => {
      while (pending.length >= 8) {
        const size = pending.readUInt32BE(4);
        if (pending.length < 8 + size) break;
        const type = pending[0];
        const payload = pending.subarray(8, 8 + size);
        pending = pending.subarray(8 + size);
        const sink = type === 2 ? stderr : stdout;
        if (first && holdStartFailure && sink === stdout && startsWith(payload, START_FAILURE_PREFIX)) {
          first = false;
          held = Buffer.from(payload);
          continue;
        }
        first = false;
        if (held) {
          write(stdout, held);
          held = undefined;
        }
        write(sink, payload);
      }
    };
    const end = () => resolve(held);
    drain();
    source.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      drain();
    });
    source.once('end', end);
    source.once('close', end);
    source.once('error', (error) => (isClosedByUs(error) ? end() : reject(error)));
  });
}

function startsWith(payload: Buffer, prefix: Buffer): boolean {
  return payload.length >= prefix.length && payload.subarray(0, prefix.length).equals(prefix);
}

/** A TTY exec's output: the raw stream as it comes, with backpressure on the connection. */
function relay(source: Readable, head: Buffer, sink: Writable): Promise<undefined> {
  return new Promise((resolve, reject) => {
    const write = (chunk: Buffer) => {
      if (chunk.length && !sink.write(chunk)) {
        source.pause();
        sink.once('drain', () => source.resume());
      }
    };
    write(head);
    source.on('data', write);
    source.once('end', () => resolve(undefined));
    source.once('close', () => resolve(undefined));
    source.once('error', (error) => (isClosedByUs(error) ? resolve(undefined) : reject(error)));
  });
}

const isClosedByUs = (error: unknown) =>
  ['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'EPIPE'].includes(String((error as { code?: unknown }).code));

function sinkFor(choice: ExecOutput): { sink: Writable; stream: Readable | null } {
  if (choice === 'pipe') {
    const stream = new PassThrough();
    return { sink: stream, stream };
  }
  if (choice === 'ignore') {
    const nowhere = new PassThrough();
    nowhere.resume();
    return { sink: nowhere, stream: null };
  }
  return { sink: choice, stream: null };
}

/**
 * Starts `spec` in `container` and streams its output: `'pipe'` gives a stream to read, a Writable
 * is written to (never ended: the caller owns it), `'ignore'` drops it. Resolves once the output
 * is delivered and the exit code known; failures to run resolve with `error` set.
 *
 * `gate`: a check that must pass before anything runs (the box's labels). The exec is created
 * while it is asked, in the same round trip, and started only once it resolved; when it rejects,
 * its error is the outcome and the created exec is never started (the engine drops unstarted execs
 * on its own). One engine round trip less on the hot path of `ca-sandbox exec`.
 */
export function startExec(
  container: string,
  spec: ExecSpec,
  output: {
    stdout?: ExecOutput;
    stderr?: ExecOutput;
    /** Keep the engine's "could not start" message out of stdout: it comes back as `notStarted`. */
    reportStartFailure?: boolean;
  } = {},
  gate?: Promise<unknown>,
): ExecChild {
  const out = sinkFor(output.stdout ?? 'pipe');
  const err = sinkFor(output.stderr ?? 'pipe');
  const stdin = spec.stdin ? new PassThrough() : null;
  let socket: import('node:stream').Duplex | undefined;
  let killed = false;
  let execId: string | undefined;
  const run = async (): Promise<ExecEnd> => {
    try {
      const created = createExec(container, spec);
      if (gate) {
        // The gate's verdict first: a missing or foreign box is its error, not the create's 404.
        created.catch(() => {});
        await gate;
      }
      execId = await created;
      if (killed) return { exitCode: undefined, signal: 'SIGKILL' };
      const hijacked = await engineHijack(`/exec/${segment(execId)}/start`, {
        verb: 'exec start',
        body: { Detach: false, Tty: spec.tty === true },
      });
      socket = hijacked.socket;
      if (killed) socket.destroy();
      if (stdin) {
        stdin.pipe(socket, { end: false });
        stdin.once('end', () => socket?.end());
      }
      const held = spec.tty
        ? await relay(socket, hijacked.head, out.sink)
        : await demultiplex(socket, hijacked.head, out.sink, err.sink, output.reportStartFailure === true);
      if (killed) {
        if (held) out.sink.write(held);
        return { exitCode: undefined, signal: 'SIGKILL' };
      }
      const state = await endStateOf(execId);
      // No process ever ran (pid 0): the held frame is the engine's message, not the command's.
      if (state.pid === 0 && output.reportStartFailure) {
        return { exitCode: state.exitCode, notStarted: { message: held?.toString('utf8') ?? '' } };
      }
      if (held) out.sink.write(held);
      return { exitCode: state.exitCode };
    } catch (error) {
      if (killed) return { exitCode: undefined, signal: 'SIGKILL' };
      return { exitCode: undefined, error: error as Error };
    } finally {
      if (out.stream) out.sink.end();
      if (err.stream) err.sink.end();
    }
  };
  const done = run();
  const child = Object.assign(done, {
    stdin,
    stdout: out.stream,
    stderr: err.stream,
    kill: () => {
      killed = true;
      socket?.destroy();
      return true;
    },
  });
  // A live getter: Object.assign would copy the id's value at this moment (undefined).
  return Object.defineProperty(child, 'id', { get: () => execId, enumerable: true }) as ExecChild;
}

/** The buffered outcome of an exec (for short commands of ours). */
export interface ExecOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `spec` to its end and returns its output as text; `input` is written to its stdin.
 * Throws when it cannot run (unreachable engine, no such container, not running); a non-zero
 * exit is returned, not thrown.
 */
export async function collectExec(
  container: string,
  spec: ExecSpec,
  options: { input?: string | Buffer | Readable; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ExecOutcome> {
  const child = startExec(container, { ...spec, stdin: options.input !== undefined || spec.stdin === true });
  // A stream that fails (a local file that changed while it was packed) ends nothing by itself:
  // pipe() leaves the exec's stdin open and the command waits for the rest until the time limit.
  // The exec is dropped at once and the stream's error is the outcome.
  let inputError: Error | undefined;
  if (child.stdin) {
    const input = options.input;
    if (input === undefined || typeof input === 'string' || Buffer.isBuffer(input)) child.stdin.end(input);
    else {
      input.once('error', (error: Error) => {
        inputError = error;
        child.kill();
      });
      input.pipe(child.stdin);
    }
  }
  const timer = options.timeoutMs ? setTimeout(() => child.kill(), options.timeoutMs) : undefined;
  // An abort drops the connection, as killing the docker client did (the caller removes the container).
  const abort = () => child.kill();
  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener('abort', abort, { once: true });
  try {
    const [stdout, stderr, end] = await Promise.all([text(child.stdout), text(child.stderr), child]);
    if (inputError) throw inputError;
    if (end.error) throw end.error;
    if (end.exitCode === undefined) {
      const why = options.signal?.aborted
        ? 'was aborted'
        : `did not finish within ${options.timeoutMs ?? 0} ms`;
      throw new DockerEngineError('exec', 0, `the exec ${why}`);
    }
    return { exitCode: end.exitCode, stdout, stderr };
  } finally {
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener('abort', abort);
  }
}

async function text(stream: Readable | null): Promise<string> {
  if (!stream) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One of OUR commands in a container, the API twin of internalExecArgs: PATH fixed on the exec,
 * then `/usr/bin/env -i PATH=… HOME=/tmp …` so the image's environment chooses nothing.
 */
export function internalExecSpec(command: readonly string[], options: InternalExecOptions): ExecSpec {
  return {
    cmd: [ENV_BIN, '-i', ...internalExecCommand(command, options)],
    user: options.user,
    env: [`PATH=${SYSTEM_PATH}`],
    ...(options.workdir ? { workdir: options.workdir } : {}),
    ...(options.stdin ? { stdin: true } : {}),
  };
}
