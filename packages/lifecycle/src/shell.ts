import { dockerSpawnError, spawnDocker } from '@ca-sandbox/docker';
import { assertBoxRunning, BOX_USER, BOX_WORKDIR, boxName } from './_utils.js';

/** bash when the image has it, else sh. */
const SHELL_SCRIPT = 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi';

/** The `docker exec` argv of an interactive shell: the box user at /work/repo, a TTY only when we have one. */
export function buildShellArgs(container: string, tty: boolean): string[] {
  return [
    'exec',
    '-i',
    ...(tty ? ['-t'] : []),
    '-u',
    BOX_USER,
    '-w',
    BOX_WORKDIR,
    container,
    'sh',
    '-c',
    SHELL_SCRIPT,
  ];
}

/**
 * Opens an interactive shell in the sandbox (stdio inherited) and resolves with its exit code.
 * Runs as 1000:1000 at /work/repo, like exec; never privileged.
 */
export async function openShell(id: string, options: { signal?: AbortSignal } = {}): Promise<number> {
  const container = boxName(id);
  await assertBoxRunning(id);
  const argv = buildShellArgs(container, Boolean(process.stdin.isTTY && process.stdout.isTTY));
  const child = spawnDocker(argv, { stdin: 'inherit', stdout: 'inherit', stderr: 'inherit' });
  // A SIGTERM sent to the CLI alone (not to the terminal's process group) must end the shell too.
  const stop = () => child.kill('SIGTERM');
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    const result = await child;
    if (result.exitCode === undefined && !options.signal?.aborted)
      throw dockerSpawnError(argv, undefined, '', result);
    return result.exitCode ?? 1;
  } finally {
    options.signal?.removeEventListener('abort', stop);
  }
}
