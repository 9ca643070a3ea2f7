/** The repo source is not an accepted git URL or an existing directory (refused before anything runs). */
export class InvalidSourceError extends Error {
  override name = 'InvalidSourceError';
  readonly code = 'INVALID_SOURCE';
  readonly kind = 'usage' as const;
  constructor(reason: string) {
    super(`invalid source: ${reason}`);
  }
}

/** A sandbox name/id outside `[a-z0-9][a-z0-9_.-]{0,62}`. */
export class InvalidSandboxNameError extends Error {
  override name = 'InvalidSandboxNameError';
  readonly code = 'INVALID_SANDBOX_NAME';
  readonly kind = 'usage' as const;
  constructor(name: string) {
    super(
      `invalid sandbox name '${printable(name)}': use 1-63 characters of a-z, 0-9, '_', '.', '-', starting with a letter or digit`,
    );
  }
}

/** Options that do not validate (unknown keys, wrong types, a bad ref). */
export class InvalidOptionsError extends Error {
  override name = 'InvalidOptionsError';
  readonly code = 'INVALID_OPTIONS';
  readonly kind = 'usage' as const;
}

/**
 * A resource limit out of bounds (the size syntax, docker's minimum, the engine's cores or memory).
 * `option` is the createSandbox option (`memory`, `cpus`, `pids`) and `detail` says the value and
 * the limit, so each caller can name the option its own way (the CLI: `--memory`).
 */
export class LimitError extends Error {
  override name = 'LimitError';
  readonly code = 'LIMIT_OUT_OF_RANGE';
  readonly kind = 'usage' as const;
  constructor(
    readonly option: 'memory' | 'cpus' | 'pids',
    readonly detail: string,
  ) {
    super(`${option} ${detail}`);
  }
}

/** `--name` names a sandbox that already exists. */
export class SandboxExistsError extends Error {
  override name = 'SandboxExistsError';
  readonly code = 'SANDBOX_EXISTS';
  readonly kind = 'usage' as const;
  constructor(id: string) {
    super(`a sandbox named '${id}' already exists: pick another --name or destroy it first`);
  }
}

/** No sandbox (box container) with that id. */
export class SandboxNotFoundError extends Error {
  override name = 'SandboxNotFoundError';
  readonly code = 'SANDBOX_NOT_FOUND';
  readonly kind = 'usage' as const;
  constructor(id: string, detail = 'no such sandbox') {
    super(`sandbox '${printable(id)}': ${detail}`);
  }
}

/**
 * An exec was stopped by its caller (the CLI on SIGINT, SIGTERM or SIGHUP): the command and what it
 * forked were killed inside the box before this was thrown.
 */
export class ExecInterruptedError extends Error {
  override name = 'ExecInterruptedError';
  readonly code = 'EXEC_INTERRUPTED';
  readonly kind = 'failure' as const;
  constructor(readonly reason: string) {
    super(`interrupted (${printable(reason, 40)}): the command was stopped inside the box`);
  }
}

/**
 * `shell` without a terminal on stdin: keystrokes typed at a terminal are the only host input a
 * box ever gets; a pipe or a file would be a way to copy data in.
 */
export class ShellNeedsTerminalError extends Error {
  override name = 'ShellNeedsTerminalError';
  readonly code = 'SHELL_NEEDS_TERMINAL';
  readonly kind = 'usage' as const;
  constructor() {
    super(
      'shell needs a terminal on stdin (nothing is ever copied into a box); for a script, use exec with sh -c',
    );
  }
}

/** `start` of an allowlist box whose host egress rules are gone: it stays stopped. */
export class SandboxStartRefusedError extends Error {
  override name = 'SandboxStartRefusedError';
  readonly code = 'SANDBOX_START_REFUSED';
  readonly kind = 'failure' as const;
  readonly hint: string;
  constructor(id: string, seen: string) {
    super(
      `sandbox '${printable(id)}' was not started: its allowlist egress rules are not in place on the host (${printable(seen, 80)}); a reboot or a firewall flush removes them`,
    );
    this.hint = `destroy it and create it again with the same --allow list`;
  }
}

/** The local directory is over the packing caps (bytes or entries). */
export class SourceTooLargeError extends Error {
  override name = 'SourceTooLargeError';
  readonly code = 'SOURCE_TOO_LARGE';
  readonly kind = 'usage' as const;
}

/** The helper image (git for clones) is not present locally. */
export class HelperImageMissingError extends Error {
  override name = 'HelperImageMissingError';
  readonly code = 'HELPER_IMAGE_MISSING';
  readonly kind = 'prerequisite' as const;
  readonly hint: string;
  constructor(image: string) {
    super(`the helper image '${printable(image, 120)}' is not present`);
    this.hint =
      'build the local images with scripts/seed-images.sh, or name an image with git and tar as helperImage in the configuration file (ca-sandbox config path) or CA_SANDBOX_HELPER_IMAGE';
  }
}

/** The clone (or the local transfer) failed inside the helper. */
export class CloneFailedError extends Error {
  override name = 'CloneFailedError';
  readonly code = 'CLONE_FAILED';
  readonly kind = 'failure' as const;
}

/** createSandbox was aborted (SIGINT/SIGTERM wired to hooks.signal); what it made is removed. */
export class CreateAbortedError extends Error {
  override name = 'CreateAbortedError';
  readonly code = 'CREATE_ABORTED';
  readonly kind = 'failure' as const;
  constructor() {
    super('sandbox creation was interrupted; everything it created so far was removed');
  }
}

/**
 * A create failed (or was aborted) and its cleanup left objects behind; `cause` is the create's own
 * error. An allowlist box that could not be removed keeps its egress rules (listed as `firewall:`).
 */
export class CreateCleanupError extends Error {
  override name = 'CreateCleanupError';
  readonly code = 'CREATE_CLEANUP_INCOMPLETE';
  readonly kind = 'failure' as const;
  readonly hint: string;
  constructor(
    id: string,
    override readonly cause: unknown,
    readonly leftovers: string[],
  ) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`${why}; the cleanup after it left ${printable(leftovers.join(', '), 500)}`);
    this.hint = `remove what is left with 'ca-sandbox destroy ${id}' (or 'ca-sandbox prune')`;
  }
}

/** The operation is not supported on this host OS (ca-sandbox supports Linux and macOS hosts). */
export class UnsupportedHostError extends Error {
  override name = 'UnsupportedHostError';
  readonly code = 'UNSUPPORTED_HOST';
  readonly kind = 'prerequisite' as const;
  readonly hint = 'run ca-sandbox on a Linux or macOS host (on Windows, inside WSL 2)';
}

/** The copy-out destination is refused (exists without force, is a symlink, parent missing). */
export class CpOutDestinationError extends Error {
  override name = 'CpOutDestinationError';
  readonly code = 'CP_DESTINATION';
  readonly kind = 'usage' as const;
}

/** The box path does not exist or cannot be copied. */
export class CpOutSourceError extends Error {
  override name = 'CpOutSourceError';
  readonly code = 'CP_SOURCE';
  readonly kind = 'usage' as const;
}

/** The copy-out stream is over its caps or malformed; nothing reaches the destination. */
export class CpOutLimitError extends Error {
  override name = 'CpOutLimitError';
  readonly code = 'CP_LIMIT';
  readonly kind = 'failure' as const;
}

/** The tar stream from the box is malformed or hostile beyond what we skip. */
export class CpOutStreamError extends Error {
  override name = 'CpOutStreamError';
  readonly code = 'CP_STREAM';
  readonly kind = 'failure' as const;
}

/** Text from outside (names, docker output) made safe for a one-line message. */
export function printable(text: string, max = 200): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we strip
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}
