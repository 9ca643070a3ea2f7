import type { Writable } from 'node:stream';
import { isCaSandboxError } from '@ca-sandbox/docker/contracts';
import { describeError, EXIT_EXEC_TOOL_FAILED } from '../error-report.js';
import { assertSandboxId, type ExecFlags, resolveExecOptions } from '../exec-options.js';
import { checkStdin, LATE_STDIN_WARNING } from '../exec-stdin.js';
import type { ExecResult } from '../lifecycle-api.js';
import type { Output } from '../output.js';

/** The process exit code for an exec result: the command's own when it fits a byte. */
export function execExitCode(result: Pick<ExecResult, 'exitCode'>): number {
  const code = result.exitCode;
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : EXIT_EXEC_TOOL_FAILED;
}

/** Exit code of an exec whose command never started in the box (COMMAND_NOT_FOUND, EXEC_START_FAILED). */
function notStartedExitCode(error: unknown): number | undefined {
  if (!isCaSandboxError(error) || !NOT_STARTED_CODES.has(error.code)) return undefined;
  const code = (error as { exitCode?: unknown }).exitCode;
  return typeof code === 'number' ? code : undefined;
}
const NOT_STARTED_CODES = new Set(['COMMAND_NOT_FOUND', 'EXEC_START_FAILED']);

/** Said after a command the kernel killed at the box's memory limit (exit 137, an `oom` event). */
export const OUT_OF_MEMORY_WARNING =
  "the command was killed for want of memory (exit 137): the box reached its memory limit; a box created with --memory (e.g. 'ca-sandbox create <repo> --memory 8g') gets more";

/** The signals that stop the command in the box, and the shell's exit code for each (128 + n). */
const STOP_SIGNALS = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof STOP_SIGNALS;

/**
 * `ca-sandbox exec <id> -- <cmd...>`: streams the command's stdout and stderr as they come (or,
 * under --json, prints the exec contract), and exits with the command's code.
 */
export async function execCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  return runExec(out, String(args[0]), args[1] as string[], options as ExecFlags);
}

/**
 * The exec itself, shared by the commander command and the bin's fast path. SIGINT, SIGTERM and
 * SIGHUP stop the command inside the box (it and what it forked), then exit 130/143/129.
 */
export async function runExec(out: Output, rawId: string, argv: string[], flags: ExecFlags): Promise<number> {
  const id = assertSandboxId(rawId);
  const json = out.options.json;
  const execOptions = resolveExecOptions(flags, json);
  const stdin = await checkStdin();
  const controller = new AbortController();
  const onSignal = (signal: StopSignal) => controller.abort(signal);
  const signals = Object.keys(STOP_SIGNALS) as StopSignal[];
  for (const signal of signals) process.on(signal, onSignal);
  try {
    // The exec entry alone: no zod, no execa, none of create's machinery on this hot path.
    const lifecycle = await import('@ca-sandbox/lifecycle/exec');
    const options = { ...execOptions, signal: controller.signal };
    if (json) {
      const result = await lifecycle.execInSandbox(id, argv, options);
      out.json(result);
      return execExitCode(result);
    }
    const stdout = await sink(out.streams.stdout, process.stdout);
    const stderr = await sink(out.streams.stderr, process.stderr);
    let result: Awaited<ReturnType<typeof lifecycle.streamExecInSandbox>>;
    try {
      result = await lifecycle.streamExecInSandbox(id, argv, {
        ...options,
        stdout: stdout.sink,
        stderr: stderr.sink,
      });
    } finally {
      await stdout.done();
      await stderr.done();
    }
    // After the command's own output: its last word is often just "Killed".
    if (result.outOfMemory) out.warn(OUT_OF_MEMORY_WARNING);
    return execExitCode(result);
  } catch (error) {
    const reason =
      isCaSandboxError(error) && error.code === 'EXEC_INTERRUPTED'
        ? (error as { reason?: unknown }).reason
        : undefined;
    if (typeof reason === 'string' && reason in STOP_SIGNALS) {
      out.error(describeError(error), error);
      return STOP_SIGNALS[reason as StopSignal];
    }
    // The command never started (not found 127, cannot run 126): a shell's codes, not 125.
    const startCode = notStartedExitCode(error);
    if (startCode !== undefined) {
      out.error(describeError(error), error);
      return startCode;
    }
    throw error;
  } finally {
    for (const signal of signals) process.off(signal, onSignal);
    if (stdin.stop()) out.warn(LATE_STDIN_WARNING);
  }
}

type Sink = { sink: Writable | 'inherit'; done(): Promise<void> };

/**
 * Where streamed output goes. Our own stdout, not a terminal: the descriptor itself (raw bytes, as
 * `docker exec` gives them, for a file or a pipe). A terminal: through the output filter
 * (colours and progress lines kept; clipboard, title, cursor jumps and every other control
 * string dropped), with colours reset at the end.
 */
async function sink(stream: Output['streams']['stdout'], own: NodeJS.WriteStream): Promise<Sink> {
  if (!stream.isTTY) {
    if (stream === own && own === process.stdout) return { sink: 'inherit', done: async () => {} };
    return { sink: stream as unknown as Writable, done: async () => {} };
  }
  const { Writable } = await import('node:stream');
  const { TerminalFilter } = await import('@ca-sandbox/lifecycle/terminal');
  const filter = new TerminalFilter('output');
  const writable = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const clean = filter.push(chunk);
      if (clean.length === 0) return callback();
      stream.write(clean, (error) => callback(error ?? null));
    },
  });
  return {
    sink: writable,
    done: async () => {
      await new Promise<void>((resolve) => writable.end(resolve));
      const reset = filter.restore();
      if (reset.length) stream.write(reset);
    },
  };
}
