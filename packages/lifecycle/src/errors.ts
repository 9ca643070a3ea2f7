import { CaSandboxError, formatSize, SHOWN_NAME_MAX, sanitizeName } from '@ca-sandbox/docker/process';

/** The repo source is not an accepted git URL or an existing directory (refused before anything runs). */
export class InvalidSourceError extends CaSandboxError {
  readonly code = 'INVALID_SOURCE';
  readonly kind = 'usage';
  constructor(reason: string) {
    super(`invalid source: ${reason}`);
  }
}

/** A sandbox name/id outside `[a-z0-9][a-z0-9_.-]{0,62}`: the one error of @ca-sandbox/docker. */
export { InvalidSandboxIdError } from '@ca-sandbox/docker/process';

/** Options that do not validate (unknown keys, wrong types, a bad ref). */
export class InvalidOptionsError extends CaSandboxError {
  readonly code = 'INVALID_OPTIONS';
  readonly kind = 'usage';
}

/**
 * A resource limit out of bounds (the size syntax, docker's minimum, the engine's cores or memory).
 * `option` is the createSandbox option (`memory`, `cpus`, `pids`) and `detail` says the value and
 * the limit, so each caller can name the option its own way (the CLI: `--memory`).
 */
export class LimitError extends CaSandboxError {
  readonly code = 'LIMIT_OUT_OF_RANGE';
  readonly kind = 'usage';
  constructor(
    readonly option: 'memory' | 'cpus' | 'pids',
    readonly detail: string,
  ) {
    super(`${option} ${detail}`);
  }
}

/** `--name` names a sandbox that already exists. */
export class SandboxExistsError extends CaSandboxError {
  readonly code = 'SANDBOX_EXISTS';
  readonly kind = 'usage';
  constructor(id: string) {
    super(`a sandbox named '${id}' already exists: pick another --name or destroy it first`);
  }
}

/** No sandbox (box container) with that id. */
export class SandboxNotFoundError extends CaSandboxError {
  readonly code = 'SANDBOX_NOT_FOUND';
  readonly kind = 'usage';
  constructor(id: string, detail = 'no such sandbox') {
    super(`sandbox '${sanitizeName(id, SHOWN_NAME_MAX)}': ${detail}`);
  }
}

/** The sandbox exists but is not running (stopped, exited): exec, cp and shell need it running. */
export class SandboxNotRunningError extends CaSandboxError {
  readonly code = 'SANDBOX_NOT_RUNNING';
  readonly kind = 'usage';
  constructor(id: string, status: string) {
    const shown = sanitizeName(id, SHOWN_NAME_MAX);
    super(
      `sandbox '${shown}': the sandbox is ${sanitizeName(status, SHOWN_NAME_MAX)}, not running (ca-sandbox start ${shown} starts it again and re-checks its isolation)`,
    );
  }
}

/** The container of that name is not a sandbox box (a helper, or not ours): exec/cp/shell refuse it. */
export class NotABoxError extends CaSandboxError {
  readonly code = 'NOT_A_BOX';
  readonly kind = 'usage';
  constructor(id: string, container: string, role: string) {
    super(
      `sandbox '${sanitizeName(id, SHOWN_NAME_MAX)}': container '${sanitizeName(container, SHOWN_NAME_MAX)}' is ${role ? `a ${sanitizeName(role, 40)}` : 'not a ca-sandbox box'}, not a box; exec, cp and shell act only on boxes`,
    );
  }
}

/**
 * An exec was stopped by its caller (the CLI on SIGINT, SIGTERM or SIGHUP): the command and what it
 * forked were killed inside the box before this was thrown.
 */
export class ExecInterruptedError extends CaSandboxError {
  readonly code = 'EXEC_INTERRUPTED';
  readonly kind = 'failure';
  constructor(readonly reason: string) {
    super(`interrupted (${sanitizeName(reason, 40)}): the command was stopped inside the box`);
  }
}

/**
 * The command of an exec never started in the box (the engine recorded no process): not found on
 * the box's PATH. `exitCode` is a shell's for it (127), so a script tells it from the command's own.
 */
export class CommandNotFoundError extends CaSandboxError {
  readonly code = 'COMMAND_NOT_FOUND';
  readonly kind = 'usage';
  readonly exitCode = 127;
  constructor(command: string) {
    super(`command not found in the box: ${sanitizeName(command, SHOWN_NAME_MAX)}`, {
      hint: 'the box runs the program itself, with its own PATH; for shell syntax (pipes, builtins, &&) use sh -c "..."',
    });
  }
}

/**
 * The command of an exec never started in the box for another reason (not executable, a working
 * directory that is missing). `exitCode` 126, a shell's "found but cannot run".
 */
export class ExecStartError extends CaSandboxError {
  readonly code = 'EXEC_START_FAILED';
  readonly kind = 'usage';
  readonly exitCode = 126;
}

/**
 * `shell` without a terminal on stdin: keystrokes typed at a terminal are the only host input a
 * box ever gets; a pipe or a file would be a way to copy data in.
 */
export class ShellNeedsTerminalError extends CaSandboxError {
  readonly code = 'SHELL_NEEDS_TERMINAL';
  readonly kind = 'usage';
  constructor() {
    super(
      'shell needs a terminal on stdin (nothing is ever copied into a box); for a script, use exec with sh -c',
    );
  }
}

/** `start` of an allowlist box whose host egress rules are gone: it stays stopped. */
export class SandboxStartRefusedError extends CaSandboxError {
  readonly code = 'SANDBOX_START_REFUSED';
  readonly kind = 'failure';
  constructor(id: string, seen: string) {
    super(
      `sandbox '${sanitizeName(id, SHOWN_NAME_MAX)}' was not started: its allowlist egress rules are not in place on the host (${sanitizeName(seen, 80)}); a reboot or a firewall flush removes them`,
      { hint: 'destroy it and create it again with the same --allow list' },
    );
  }
}

/**
 * A file of the local directory changed (or was replaced, or shrank) while create copied it in:
 * the box would get a tree that never existed. Nothing is kept.
 */
export class SourceChangedError extends CaSandboxError {
  readonly code = 'SOURCE_CHANGED';
  readonly kind = 'failure';
  constructor(path: string, how: 'changed' | 'shrank') {
    super(`'${sanitizeName(path, SHOWN_NAME_MAX)}' ${how} while create copied the directory in`, {
      hint: 'stop what writes into it (a watcher, a build, a download) and create again, or create from a copy or a commit of it',
    });
  }
}

/** The local directory is over the packing caps (bytes or entries). */
export class SourceTooLargeError extends CaSandboxError {
  readonly code = 'SOURCE_TOO_LARGE';
  readonly kind = 'usage';
}

/**
 * The repo's checkout would write more entries or bytes than the source caps allow (a checkout
 * bomb: a few KB of git objects naming one blob a million times). Measured from git's trees in the
 * helper before any file is written; the create removes everything it made.
 */
export class CheckoutTooLargeError extends CaSandboxError {
  readonly code = 'CHECKOUT_TOO_LARGE';
  readonly kind = 'usage';
  constructor(
    readonly cap: 'entries' | 'bytes',
    limits: { maxEntries: number; maxBytes: number },
    seen: { entries: number; bytes: number },
  ) {
    super(
      cap === 'entries'
        ? `the checkout would create more than ${limits.maxEntries} entries, over the entry cap (--max-source-entries ${limits.maxEntries}); nothing was checked out`
        : `the checkout would write more than ${formatSize(limits.maxBytes)} (${seen.bytes} bytes in its first ${seen.entries} entries), over the byte cap (--max-source-bytes ${formatSize(limits.maxBytes)}); nothing was checked out`,
    );
  }
}

/** The helper image (git for clones) is not present locally. */
export class HelperImageMissingError extends CaSandboxError {
  readonly code = 'HELPER_IMAGE_MISSING';
  readonly kind = 'prerequisite';
  declare readonly hint: string;
  constructor(image: string) {
    super(`the helper image '${sanitizeName(image, 120)}' is not present`, {
      hint: 'build the local images with scripts/seed-images.sh, or name an image with git and tar as helperImage in the configuration file (ca-sandbox config path) or CA_SANDBOX_HELPER_IMAGE',
    });
  }
}

/** The clone (or the local transfer) failed inside the helper. */
export class CloneFailedError extends CaSandboxError {
  readonly code = 'CLONE_FAILED';
  readonly kind = 'failure';
}

/** createSandbox was aborted (SIGINT/SIGTERM wired to hooks.signal); what it made is removed. */
export class CreateAbortedError extends CaSandboxError {
  readonly code = 'CREATE_ABORTED';
  readonly kind = 'failure';
  constructor() {
    super('sandbox creation was interrupted; everything it created so far was removed');
  }
}

/**
 * A create failed (or was aborted) and its cleanup left objects behind; `cause` is the create's own
 * error. An allowlist box that could not be removed keeps its egress rules (listed as `firewall:`).
 */
export class CreateCleanupError extends CaSandboxError {
  readonly code = 'CREATE_CLEANUP_INCOMPLETE';
  readonly kind = 'failure';
  constructor(
    id: string,
    override readonly cause: unknown,
    readonly leftovers: string[],
  ) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`${why}; the cleanup after it left ${sanitizeName(leftovers.join(', '), 500)}`, {
      hint: `remove what is left with 'ca-sandbox destroy ${id}' (or 'ca-sandbox prune')`,
    });
  }
}

/** The operation is not supported on this host OS (ca-sandbox supports Linux and macOS hosts). */
export class UnsupportedHostError extends CaSandboxError {
  readonly code = 'UNSUPPORTED_HOST';
  readonly kind = 'prerequisite';
  override readonly hint = 'run ca-sandbox on a Linux or macOS host (on Windows, inside WSL 2)';
}

/** The copy-out destination is refused (exists without force, is a symlink, parent missing). */
export class CpOutDestinationError extends CaSandboxError {
  readonly code = 'CP_DESTINATION';
  readonly kind = 'usage';
}

/** The box path does not exist or cannot be copied. */
export class CpOutSourceError extends CaSandboxError {
  readonly code = 'CP_SOURCE';
  readonly kind = 'usage';
}

/** The copy-out stream is over its caps or malformed; nothing reaches the destination. */
export class CpOutLimitError extends CaSandboxError {
  readonly code = 'CP_LIMIT';
  readonly kind = 'failure';
}

/** The tar stream from the box is malformed or hostile beyond what we skip. */
export class CpOutStreamError extends CaSandboxError {
  readonly code = 'CP_STREAM';
  readonly kind = 'failure';
}

/** The box's trust of its credential gateway's CA could not be written (the box is removed). */
export class BoxTrustError extends CaSandboxError {
  readonly code = 'BOX_TRUST_FAILED';
  readonly kind = 'failure';
  constructor(container: string, reason: string) {
    super(`could not write the gateway's CA into ${container}: ${reason || 'no reason given'}`);
  }
}
