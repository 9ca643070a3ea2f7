import { SHOWN_NAME_MAX, sanitizeName } from '@ca-sandbox/docker/contracts';
import { CommandNotFoundError, ExecStartError } from './errors.js';

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
