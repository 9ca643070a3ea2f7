import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';

/**
 * The shell with the host's own frame around it: a banner before (which sandbox, which network,
 * how to leave) and a line after, both written by us on stderr, where the box cannot forge them
 * in advance. The box's output in between is filtered by the lifecycle.
 */
export async function openShellWithBanner(out: Output, id: string, signal?: AbortSignal): Promise<number> {
  const lifecycle = await loadLifecycle();
  const stderr = out.streams.stderr;
  const code = await lifecycle.openShell(id, {
    ...(signal ? { signal } : {}),
    onStart: (session) => {
      const name = sanitizeName(session.id);
      stderr.write(
        `${out.bold(`ca-sandbox: shell in sandbox ${name}`)} (network ${sanitizeName(session.network)}, runtime ${sanitizeName(session.runtime)}): commands run in the box, not on this host.\n` +
          `ca-sandbox: the prompt is [sandbox ${name}]; leave with exit or Ctrl-D.\n`,
      );
    },
  });
  stderr.write(`${out.bold(`ca-sandbox: left sandbox ${sanitizeName(id)}`)} (exit ${code})\n`);
  return code;
}

/** `ca-sandbox shell <id>`: interactive shell at /work/repo; exits with the shell's code. */
export async function shellCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  return openShellWithBanner(out, id);
}
