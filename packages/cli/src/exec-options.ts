// Zod-free on purpose: `ca-sandbox exec` start-up is measured against raw `docker exec`.
import { SANDBOX_ID } from './constants.js';
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

/** exec flags → execInSandbox options (seconds → milliseconds). */
export function resolveExecOptions(flags: { timeout?: string; maxBytes?: string }): {
  timeoutMs?: number;
  maxBytes?: number;
} {
  const timeout = flagNumber(flags.timeout, '--timeout', /^\d+(\.\d+)?$/, 'a positive number of seconds');
  const maxBytes = flagNumber(flags.maxBytes, '--max-bytes', /^\d+$/, 'a positive whole number of bytes');
  const options: { timeoutMs?: number; maxBytes?: number } = {};
  if (timeout !== undefined) options.timeoutMs = Math.max(1, Math.round(timeout * 1000));
  if (maxBytes !== undefined) options.maxBytes = maxBytes;
  return options;
}

/** Throws a usage error unless `id` is a well-formed sandbox id. */
export function assertSandboxId(id: string): string {
  if (!SANDBOX_ID.test(id)) {
    throw new UsageError(
      `invalid sandbox id "${id}": expected lower-case letters, digits, ".", "_" or "-"`,
      'INVALID_SANDBOX_ID',
      'list sandboxes with `ca-sandbox list`',
    );
  }
  return id;
}
