import { isatty } from 'node:tty';
import {
  type ContainerInspect,
  DockerEngineError,
  type ExecSpec,
  engine,
  internalExecSpec,
  LABEL_POLICY,
  LABEL_RUNTIME,
  SH_BIN,
  SYSTEM_PATH,
} from '@ca-sandbox/docker';
import { BOX_USER, ENV_NAME_PATTERN, REPO_DIR } from '@ca-sandbox/docker/process';
import { assertBoxRunning, boxName } from './_utils.js';
import { recordCommand } from './command-log.js';
import { ShellNeedsTerminalError } from './errors.js';
import { KILL_MARKER_ENV, killInBox, newKillMarker } from './in-box-kill.js';
import { TerminalFilter } from './terminal-filter.js';

/**
 * Started by path from an empty environment (see shellEnvironment): bash without any rc or
 * profile file, else sh (ENV is unset, so it reads none either). HOME is the box's writable /tmp:
 * a `.bashrc`, `.profile` or `.inputrc` the box planted there is never read. `$1 $2` are the
 * terminal's rows and columns (set again from here: a resize may come before the shell runs), `$3`
 * the sandbox id for sh's prompt.
 */
const LAUNCHER = [
  'if [ -n "$1" ] && [ -x /usr/bin/stty ]; then /usr/bin/stty rows "$1" cols "$2" 2>/dev/null; fi',
  'if [ -x /bin/bash ]; then exec /bin/bash --norc --noprofile -i; fi',
  'PS1="[sandbox $3] \\$ "; export PS1',
  'exec /bin/sh -i',
].join('\n');

/** Variables of the image that a shell would act on at start-up or prompt time: never passed. */
const SHELL_STARTUP_VARIABLES = new Set([
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS0',
  'PS1',
  'PS2',
  'PS3',
  'PS4',
  'PROMPT_COMMAND',
  'CDPATH',
  'GLOBIGNORE',
  'HISTFILE',
  'INPUTRC',
  'PATH',
  'HOME',
  'TERM',
]);
const TERM_VALUE = /^[A-Za-z0-9._+-]{1,64}$/;

/** What the caller learns when the shell is about to start (the CLI prints its banner from it). */
export interface ShellSession {
  id: string;
  container: string;
  /** The network policy (`offline`, `clone-then-cut`, `allowlist`). */
  network: string;
  runtime: string;
}

export interface OpenShellOptions {
  /** Called once the box is found running, before the shell starts. */
  onStart?: (session: ShellSession) => void;
  /** Aborting ends the session (the CLI's `run` on SIGINT/SIGTERM, then destroys the box). */
  signal?: AbortSignal;
}

/**
 * The shell's PATH: the system directories first, so nothing a dependency ships (`ls`, `sh`,
 * `sudo`...) shadows a system command; then the image's other absolute directories (the deps'
 * bins, a toolchain's), so they can still be run by name.
 */
export function shellPath(imagePath: string | undefined): string {
  const system = SYSTEM_PATH.split(':');
  const extra = (imagePath ?? '')
    .split(':')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
    .filter((dir) => dir.startsWith('/') && !system.includes(dir) && !/[\s\u0000-\u001f]/.test(dir));
  return [...system, ...new Set(extra)].join(':');
}

/**
 * The shell's whole environment: the image's variables minus anything a shell acts on at start-up
 * (BASH_ENV, exported bash functions, SHELLOPTS, prompts...), plus ours: PATH, HOME=/tmp, TERM,
 * a prompt that names the sandbox, no history file, readline's system configuration only.
 */
export function shellEnvironment(
  id: string,
  imageEnv: readonly string[],
  term: string | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of imageEnv) {
    const equals = entry.indexOf('=');
    const name = equals > 0 ? entry.slice(0, equals) : '';
    if (!ENV_NAME_PATTERN.test(name) || SHELL_STARTUP_VARIABLES.has(name) || name.startsWith('BASH_'))
      continue;
    env[name] = entry.slice(equals + 1);
  }
  const imagePath = imageEnv.find((entry) => entry.startsWith('PATH='))?.slice('PATH='.length);
  return {
    ...env,
    PATH: shellPath(imagePath),
    HOME: '/tmp',
    TERM: term && TERM_VALUE.test(term) ? term : 'xterm-256color',
    PS1: `[sandbox ${id}] \\w \\$ `,
    HISTFILE: '/dev/null',
    INPUTRC: '/etc/inputrc',
  };
}

/**
 * The exec of the shell: a TTY, the box user at /work/repo, never privileged, the launcher by
 * absolute path from an empty environment.
 */
export function buildShellSpec(
  id: string,
  env: Record<string, string>,
  size: { rows: number; columns: number } | undefined,
): ExecSpec {
  const spec = internalExecSpec(
    [SH_BIN, '-c', LAUNCHER, 'ca-sbx-shell', String(size?.rows ?? ''), String(size?.columns ?? ''), id],
    { user: BOX_USER, workdir: REPO_DIR, env, stdin: true },
  );
  // The engine allocates the terminal; its output comes back to us to filter.
  return { ...spec, tty: true };
}

function terminalSize(): { rows: number; columns: number } | undefined {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.isTTY) {
      const [columns, rows] = stream.getWindowSize();
      if (rows > 0 && columns > 0) return { rows, columns };
    }
  }
  return undefined;
}

/**
 * Opens an interactive shell in the sandbox and resolves with its exit code. Needs a terminal on
 * stdin (keystrokes are the only host input a box ever gets; a pipe would be a copy-in). Runs as
 * 1000:1000 at /work/repo, never privileged, with no start-up file read. Everything the box sends
 * back passes through the terminal filter (no clipboard, title or other control strings), and the
 * modes the box switched on are switched off when it ends.
 */
export async function openShell(id: string, options: OpenShellOptions = {}): Promise<number> {
  const container = boxName(id);
  if (!isatty(0)) throw new ShellNeedsTerminalError();
  const inspect: ContainerInspect = await assertBoxRunning(id);
  const labels = inspect.Config.Labels;
  options.onStart?.({
    id,
    container,
    network: labels[LABEL_POLICY] ?? 'unknown',
    runtime: labels[LABEL_RUNTIME] ?? 'unknown',
  });
  // The session's mark on the shell and everything started from it (background jobs, setsid and
  // nohup included: they keep the environment), so that ending the session by a signal ends them.
  const marker = newKillMarker();
  const env = { ...shellEnvironment(id, inspect.Config.Env, process.env.TERM), [KILL_MARKER_ENV]: marker };
  const spec = buildShellSpec(id, env, terminalSize());
  const child = engine.exec.start(container, spec, {
    stdout: 'pipe',
    stderr: 'ignore',
  });
  // Everything the box sends is one stream (a terminal merges stderr): filtered before it is shown.
  const screen = new TerminalFilter('interactive');
  child.stdout?.on('data', (chunk: Buffer) => process.stdout.write(screen.push(chunk)));
  // One resize in flight at a time, the size read again when it is sent: two requests at once may
  // reach the engine in either order (`stty rows R cols C` alone sends two SIGWINCHs), and the box
  // kept the older size (41x100 for 41x133 under gVisor in CI).
  let resizing = false;
  let resizeAgain = false;
  const resize = () => {
    if (resizing) {
      resizeAgain = true;
      return;
    }
    const size = terminalSize();
    if (!size || !child.id) return;
    resizing = true;
    void engine.exec
      .resize(child.id, size.rows, size.columns)
      .catch(() => false)
      .finally(() => {
        resizing = false;
        if (resizeAgain) {
          resizeAgain = false;
          resize();
        }
      });
  };
  // Sized again once it runs (a resize before the start is refused), then on every SIGWINCH.
  child.stdout?.once('data', resize);

  // Keystrokes go to the box as they are typed, Ctrl-C included: the host terminal is raw for the
  // session (what `docker exec -it` did) and restored after.
  const stdin = process.stdin;
  const raw = stdin.isTTY && !stdin.isRaw;
  if (raw) stdin.setRawMode(true);
  const type = (chunk: Buffer) => child.stdin?.write(chunk);
  stdin.on('data', type);
  stdin.resume();

  // SIGTERM or SIGHUP to us ends the session (the terminal is restored below); a SIGINT can only
  // come from `kill` (the terminal is raw, Ctrl-C goes to the box as a key) and is treated alike.
  // The engine keeps an exec's processes running when its client leaves (as `docker exec -it`
  // does): the shell and what it started are killed in the box first, then the stream dropped. A
  // second signal does not wait for that.
  let stoppedBy: NodeJS.Signals | undefined;
  const stop = (signal: NodeJS.Signals) => {
    if (stoppedBy) {
      child.kill();
      return;
    }
    stoppedBy = signal;
    void killInBox(container, marker).finally(() => child.kill());
  };
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT'];
  process.on('SIGWINCH', resize);
  for (const signal of signals) process.on(signal, stop);
  const onAbort = () => stop('SIGTERM');
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  const startedAt = new Date();
  // The session on the command log of the vetting report: its program, how it ended, how long.
  const logSession = (exitCode: number | null) =>
    recordCommand(id, {
      via: 'shell',
      command: [...spec.cmd],
      user: spec.user ?? BOX_USER,
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      exitCode,
      timedOut: false,
      outOfMemory: false,
      stdoutBytes: null,
      stderrBytes: null,
    });
  try {
    const result = await child;
    const tail = screen.end();
    if (tail.length) process.stdout.write(tail);
    if (process.stdout.isTTY) process.stdout.write(screen.restore());
    if (stoppedBy) {
      const code = 128 + (stoppedBy === 'SIGHUP' ? 1 : stoppedBy === 'SIGINT' ? 2 : 15);
      await logSession(code);
      return code;
    }
    if (result.error || result.exitCode === undefined) await logSession(null);
    if (result.error) throw result.error;
    if (result.exitCode === undefined)
      throw new DockerEngineError('exec inspect', 0, 'the engine recorded no exit code for the shell');
    await logSession(result.exitCode);
    return result.exitCode;
  } finally {
    stdin.off('data', type);
    stdin.pause();
    if (raw) stdin.setRawMode(false);
    process.off('SIGWINCH', resize);
    for (const signal of signals) process.off(signal, stop);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
