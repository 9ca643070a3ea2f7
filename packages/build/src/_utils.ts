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

/**
 * True for characters a terminal or a text renderer acts on instead of printing: C0 controls
 * (except tab), DEL, C1 controls (U+0080–U+009F: U+009B is an 8-bit CSI) and the bidi embedding,
 * override and isolate controls (U+202A–U+202E, U+2066–U+2069), which reorder what a reader sees.
 */
function isUnprintable(code: number): boolean {
  if (code === 0x09) return false;
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/** One line of untrusted output made safe to print: no escape sequences, no control characters, bounded. */
export function cleanLine(line: string, max = 2000): string {
  let out = '';
  for (let i = 0; i < line.length && out.length < max; i++) {
    const code = line.charCodeAt(i);
    const csi = code === 0x1b && line[i + 1] === '[' ? 2 : code === 0x9b ? 1 : 0;
    if (csi) {
      // CSI (7-bit ESC [ or 8-bit U+009B): parameters and intermediates up to the final byte (@ to ~).
      i += csi;
      while (i < line.length && !/[@-~]/.test(line[i] ?? '')) i++;
      continue;
    }
    if (!isUnprintable(code)) out += line[i];
  }
  return out;
}
