import { isatty } from 'node:tty';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import type { ActionContext } from '../action-context.js';
import { describeError } from '../error-report.js';
import { loadLifecycle } from '../lifecycle-api.js';
import { resolveCreateOptions } from '../options.js';
import type { Output } from '../output.js';
import { type CreateCommandFlags, createWithProgress } from './create.js';
import { reportTeardown } from './destroy.js';
import { openShellWithBanner } from './shell.js';

/** `ca-sandbox run <repo>`: create, shell, destroy (unless --keep). Exits with the shell's code. */
export async function runCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
  { signal }: ActionContext,
): Promise<number> {
  const flags = options as CreateCommandFlags & { keep?: boolean };
  if (!isatty(0)) {
    // The shell needs a terminal: refused before anything is created (bad flags are said first).
    const request = resolveCreateOptions(String(args[0] ?? ''), flags);
    const lifecycle = await loadLifecycle();
    // The lifecycle's own checks too (--with-claude beside --network or --allow): pure, no docker.
    lifecycle.resolveCreateOptions(request);
    throw new lifecycle.ShellNeedsTerminalError();
  }
  const record = await createWithProgress(out, String(args[0] ?? ''), flags, { signal, showNext: false });
  const lifecycle = await loadLifecycle();
  let shellCode = 0;
  try {
    // SIGINT/SIGTERM end the shell; the box is then destroyed as after any shell (unless --keep).
    shellCode = await openShellWithBanner(out, record.id, signal);
  } catch (error) {
    out.error(describeError(error), error);
    shellCode = 1;
  }
  if (flags.keep) {
    out.info(
      `kept sandbox ${sanitizeName(record.id)}; remove it with: ca-sandbox destroy ${sanitizeName(record.id)}`,
    );
    if (out.options.json) out.json({ sandbox: record, shellExitCode: shellCode });
    return shellCode;
  }
  const teardown = await lifecycle.destroySandbox(record.id);
  const teardownCode = reportTeardown(out, teardown, { json: false });
  if (out.options.json) out.json({ sandbox: record, shellExitCode: shellCode, teardown });
  return teardownCode !== 0 ? teardownCode : shellCode;
}
