// The light docker entry: exec and shell load this on their start-up path.
import { BOX_USER, collectExec, type ExecSpec, internalExecSpec, SH_BIN } from '@ca-sandbox/docker/process';

/**
 * The variable that marks a command we started in the box (an exec, a shell) and everything it
 * forks, so that an interrupt, a timeout or the end of our process can find them inside the box.
 * Callers may not set it (see checkExecEnv's reserved prefixes).
 */
export const KILL_MARKER_ENV = 'CA_SBX_EXEC';

/**
 * A marker unique among concurrent commands. Not a secret (a process that copies it only gets
 * itself killed); node:crypto is not loaded for it, to keep exec start-up short.
 */
export function newKillMarker(): string {
  const random = () =>
    Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return `${process.pid.toString(16)}${Date.now().toString(16)}${random()}${random()}`;
}

/**
 * The in-box kill: every process whose environment holds our marker, and its process group
 * (docker exec makes the command a session and group leader), killed with SIGKILL, a few rounds
 * so that children forked meanwhile go too. Nothing here is looked up on the box's PATH (a
 * dependency may ship `sh` or `grep`): /bin/sh and /bin/grep by path, from an empty environment.
 */
export function buildKillSpec(marker: string): ExecSpec {
  const script = [
    'for round in 1 2 3; do',
    '  for p in /proc/[0-9]*; do',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '    pid=${p#/proc/}',
    `    if /bin/grep -qsxzF "${KILL_MARKER_ENV}=$1" "$p/environ"; then`,
    // dash's kill takes no `--`: the group and the process in two calls, so one miss skips nothing.
    '      kill -s KILL "-$pid" 2>/dev/null; kill -s KILL "$pid" 2>/dev/null',
    '    fi',
    '  done',
    'done',
  ].join('\n');
  return internalExecSpec([SH_BIN, '-c', script, 'ca-sbx-kill', marker], { user: BOX_USER });
}

/** The in-box kill (see buildKillSpec), over the API like the command itself. Never throws. */
export async function killInBox(container: string, marker: string): Promise<void> {
  try {
    await collectExec(container, buildKillSpec(marker), { timeoutMs: 10_000 });
  } catch {
    // the box is gone or the engine does not answer: the command's own end reports that
  }
}
