import type { z } from 'zod';
import { InvalidBuildOptionsError } from './errors.js';

/** zod parse at the package edge: one lower-case usage error naming the first bad field. */
export function parseOptions<T extends z.ZodType>(schema: T, input: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : 'options';
  throw new InvalidBuildOptionsError(
    `invalid ${what} option ${where}: ${(issue?.message ?? 'invalid').toLowerCase()}`,
  );
}

/** A POSIX shell single-quoted word. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Byte-wise comparator for stable, locale-free ordering. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A time limit that may start later than the work it bounds (see limitFrom). */
export interface StartedLimit {
  /** Whether the limit fired (onExpire ran). */
  readonly expired: boolean;
  /** Ends the limit: called when the work ends, however it ends (a later `start` arms nothing). */
  clear(): void;
}

/**
 * Calls `onExpire` `ms` after `start` settles (either way), or after now without one: an exec
 * started ahead of the checkout waits for it (the clone has its own limits), and that wait must
 * not use up the time of the work it was started for.
 */
export function limitFrom(
  start: Promise<unknown> | undefined,
  ms: number,
  onExpire: () => void,
): StartedLimit {
  let timer: NodeJS.Timeout | undefined;
  let cleared = false;
  let expired = false;
  const arm = () => {
    if (cleared) return;
    timer = setTimeout(() => {
      expired = true;
      onExpire();
    }, ms);
  };
  if (start) start.then(arm, arm);
  else arm();
  return {
    get expired() {
      return expired;
    },
    clear() {
      cleared = true;
      clearTimeout(timer);
    },
  };
}
