// The argv of every command ca-sandbox itself runs inside a box or a helper (the timeout kill, the
// shell launcher, the clone, the manifest read, ...). Nothing of the container's environment
// chooses the program: the image's PATH may start with /deps/node_modules/.bin (a dependency can
// ship `sh` or `grep`), and its ENV may carry BASH_ENV, ENV, SHELLOPTS or exported bash functions.

import { ENV_NAME_PATTERN } from './contracts.js';
import { InvariantError } from './error-base.js';
/** The only PATH our own commands see in a box or a helper: system directories, nothing writable. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** `env` by absolute path: it starts our command with an environment made from nothing (`-i`). */
export const ENV_BIN = '/usr/bin/env';
/** The POSIX shell by absolute path, for our scripts. */
export const SH_BIN = '/bin/sh';
/**
 * `sleep` by absolute path: the box's main process (KEEP_ALIVE in @ca-sandbox/run). By name, the
 * engine would look it up on the image's PATH, where a dependency's `sleep` bin comes first.
 */
export const SLEEP_BIN = '/bin/sleep';

export interface InternalExecOptions {
  /** `-u`; our commands never run as root unless a caller says so. */
  user: string;
  /** `-w`, when the command needs a working directory. */
  workdir?: string;
  /** The only variables the command gets besides PATH and HOME. */
  env?: Record<string, string>;
  /** `-i`: docker's stdin is passed to the command (a tar stream into a helper). */
  stdin?: boolean;
}

/**
 * What follows `/usr/bin/env -i` for one of our commands: `PATH=… HOME=/tmp …` then the command,
 * whose `command[0]` must be an absolute path (no PATH lookup picks the program).
 */
export function internalExecCommand(command: readonly string[], options: InternalExecOptions): string[] {
  const program = command[0];
  if (!program?.startsWith('/')) {
    throw new InvariantError(
      `internal exec: the program must be an absolute path, got ${JSON.stringify(program)}`,
    );
  }
  const env = { PATH: SYSTEM_PATH, HOME: '/tmp', ...options.env };
  for (const name of Object.keys(env)) {
    if (!ENV_NAME_PATTERN.test(name))
      throw new InvariantError(`internal exec: invalid variable name ${JSON.stringify(name)}`);
  }
  return [...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...command];
}

/**
 * `docker exec` argv for one of OUR commands in a container: PATH fixed on the exec itself, then
 * `/usr/bin/env -i` so the command starts with PATH, HOME and `env` only, whatever the image set.
 * (The Engine API twin is internalExecSpec in engine-exec.ts.)
 */
export function internalExecArgs(
  container: string,
  command: readonly string[],
  options: InternalExecOptions,
): string[] {
  const tail = internalExecCommand(command, options);
  return [
    'exec',
    ...(options.stdin ? ['-i'] : []),
    '-u',
    options.user,
    ...(options.workdir ? ['-w', options.workdir] : []),
    '-e',
    `PATH=${SYSTEM_PATH}`,
    container,
    ENV_BIN,
    '-i',
    ...tail,
  ];
}
