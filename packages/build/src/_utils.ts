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

/** True when a string holds a C0 control character or DEL (would break a line or a terminal). */
export function hasControlChar(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** One line of untrusted output made safe to print: no escape sequences, no control characters, bounded. */
export function cleanLine(line: string, max = 2000): string {
  let out = '';
  for (let i = 0; i < line.length && out.length < max; i++) {
    const code = line.charCodeAt(i);
    if (code === 0x1b && line[i + 1] === '[') {
      // CSI: parameters and intermediates up to the final byte (@ to ~).
      i += 2;
      while (i < line.length && !/[@-~]/.test(line[i] ?? '')) i++;
      continue;
    }
    if (code === 0x09 || (code >= 0x20 && code !== 0x7f)) out += line[i];
  }
  return out;
}
