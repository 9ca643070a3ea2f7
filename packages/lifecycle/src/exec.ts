import type { Writable } from 'node:stream';
// The light docker entry and no zod: `ca-sandbox exec` start-up is measured against raw docker exec.
import {
  BOX_USER,
  DockerEngineError,
  DockerNotFoundError,
  type ExecChild,
  type ExecEnd,
  startExec,
} from '@ca-sandbox/docker/process';
import { type CommandEntry, loggedArgv, recordCommand } from './command-log.js';
import { ExecInterruptedError, InvalidOptionsError } from './errors.js';
import {
  buildExecSpec,
  checkArgv,
  EXEC_TIMEOUT_EXIT_CODE,
  type ExecOptions,
  type ExecResult,
  type ResolvedExecOptions,
  resolveExecOptions,
  type StreamExecOptions,
  type StreamExecResult,
} from './exec-options.js';
import { captureCapped, capturedText } from './exec-output.js';
import { startFailureError } from './exec-start-failure.js';
import { killInBox, newKillMarker } from './in-box-kill.js';
import { boxName, resolveBox } from './names.js';

// `./exec` is the fast path's entry: its contract, checks and output helpers are re-exported.
export * from './exec-options.js';
export * from './exec-output.js';
export * from './exec-start-failure.js';

/** How long the exec's stream may stay open after the in-box kill before we drop it. */
const CLIENT_GRACE_MS = 3000;

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
 * contract: stdout and stderr apart, each capped at `maxBytes` (past it the start and the end
 * are kept with a note of the gap; the rest drained and dropped, never buffered), invalid UTF-8 as U+FFFD, and on `timeoutMs` or an abort the command killed
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
    stdout: capturedText(out),
    stderr: capturedText(err),
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
