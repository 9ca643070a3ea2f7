import { EXIT_EXEC_TOOL_FAILED } from '../error-report.js';
import { assertSandboxId, resolveExecOptions } from '../exec-options.js';
import type { ExecResult } from '../lifecycle-api.js';
import type { Output } from '../output.js';

/** The process exit code for an exec result: the command's own when it fits a byte. */
export function execExitCode(result: Pick<ExecResult, 'exitCode'>): number {
  const code = result.exitCode;
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : EXIT_EXEC_TOOL_FAILED;
}

/** `ca-sandbox exec <id> -- <cmd...>`: prints the exec contract as JSON, exits with the command's code. */
export async function execCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  return runExec(
    out,
    String(args[0]),
    args[1] as string[],
    options as { timeout?: string; maxBytes?: string },
  );
}

/** The exec itself, shared by the commander command and the bin's fast path. */
export async function runExec(
  out: Output,
  rawId: string,
  argv: string[],
  flags: { timeout?: string; maxBytes?: string },
): Promise<number> {
  const id = assertSandboxId(rawId);
  const execOptions = resolveExecOptions(flags);
  // The exec entry alone: no zod, no execa, none of create's machinery on this hot path.
  const { execInSandbox } = await import('@ca-sandbox/lifecycle/exec');
  const result = await execInSandbox(id, argv, execOptions);
  out.json(result);
  return execExitCode(result);
}
