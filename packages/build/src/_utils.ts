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
