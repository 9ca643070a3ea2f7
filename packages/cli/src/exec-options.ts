// Zod-free on purpose: `ca-sandbox exec` start-up is measured against raw `docker exec`.
import { assertSandboxIdSyntax } from '@ca-sandbox/docker/contracts';
import { UsageError } from './errors.js';

function flagNumber(
  value: string | undefined,
  flag: string,
  pattern: RegExp,
  expected: string,
): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const number = Number(text);
  if (
    !pattern.test(text) ||
    !Number.isFinite(number) ||
    number <= 0 ||
    !Number.isSafeInteger(Math.ceil(number))
  ) {
    throw new UsageError(`invalid value for ${flag}: expected ${expected}`, 'INVALID_OPTIONS');
  }
  return number;
}

/** The exec flags as commander (or the bin's fast path) hands them over. */
export interface ExecFlags {
  timeout?: string;
  maxBytes?: string;
  /** `-e KEY=VALUE`, repeatable. */
  env?: string[];
  /** `-w DIR`. */
  workdir?: string;
  /** `-i` / `-t`: refused, with a pointer to `shell`. */
  interactive?: boolean;
  tty?: boolean;
}

export interface ExecCallOptions {
  timeoutMs?: number;
  maxBytes?: number;
  env?: Record<string, string>;
  workdir?: string;
}

/**
 * exec flags → execInSandbox options (seconds → milliseconds). Only the syntax is checked here;
 * which names and directories are allowed is the lifecycle's rule (checkExecEnv, resolveExecWorkdir).
 */
export function resolveExecOptions(flags: ExecFlags, json = true): ExecCallOptions {
  if (flags.interactive || flags.tty) {
    throw new UsageError(
      'exec is not interactive: it never reads stdin and never allocates a terminal',
      'EXEC_NOT_INTERACTIVE',
      'for a terminal in the box use `ca-sandbox shell <id>`',
    );
  }
  const timeout = flagNumber(flags.timeout, '--timeout', /^\d+(\.\d+)?$/, 'a positive number of seconds');
  const maxBytes = flagNumber(flags.maxBytes, '--max-bytes', /^\d+$/, 'a positive whole number of bytes');
  if (maxBytes !== undefined && !json) {
    throw new UsageError(
      '--max-bytes caps what --json captures; without --json the output streams as it comes',
      'INVALID_OPTIONS',
      'add --json, or drop --max-bytes',
    );
  }
  const options: ExecCallOptions = {};
  if (timeout !== undefined) options.timeoutMs = Math.max(1, Math.round(timeout * 1000));
  if (maxBytes !== undefined) options.maxBytes = maxBytes;
  if (flags.env?.length) {
    const env: Record<string, string> = {};
    for (const entry of flags.env) {
      const equals = entry.indexOf('=');
      if (equals <= 0) {
        throw new UsageError(
          `invalid value for -e: expected KEY=VALUE, got '${entry.slice(0, 60)}'`,
          'INVALID_OPTIONS',
          "give the value: the host's environment is never passed to a box",
        );
      }
      env[entry.slice(0, equals)] = entry.slice(equals + 1);
    }
    options.env = env;
  }
  if (flags.workdir !== undefined) options.workdir = flags.workdir;
  return options;
}

/** Throws a usage error unless `id` is a well-formed sandbox id. */
export function assertSandboxId(id: string): string {
  return assertSandboxIdSyntax(id);
}
