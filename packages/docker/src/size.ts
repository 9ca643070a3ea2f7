// Zod-free: part of the light entry. The one parser of sizes for every package (memory, tmpfs,
// file size, build memory), so that a size means here what it means to docker.

/** Binary multipliers, as docker's RAMInBytes (go-units) applies them: `1k` is 1024 bytes. */
const MULTIPLIERS: Record<string, number> = {
  '': 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
  p: 1024 ** 5,
};

/**
 * docker's size syntax (go-units `RAMInBytes`, the parser of `--memory`, `--memory-swap`,
 * `--shm-size`, tmpfs `size=`): a decimal number, one optional space, an optional unit
 * b/k/m/g/t/p, an optional `i` and an optional `b`; case-insensitive. `2g`, `2gb`, `2GiB`, `1.5g`,
 * `512 m` and `1048576` are all accepted; `1.2.3m`, `-1g`, `2x` and `2 gb ` are not.
 */
const SIZE = /^(\d+(?:\.\d+)?) ?([kmgtp])?i?b?$/i;

/** 2^63: docker keeps sizes in an int64. */
const INT64_LIMIT = 2 ** 63;

/** What a size looks like, for messages. */
export const SIZE_SYNTAX = 'a number with an optional unit b, k, m, g or t (e.g. 512m, 2g, 2gb, 1.5g)';

/**
 * Bytes of a docker size (fractions truncated as docker truncates them), or undefined when the
 * text is not a size or does not fit docker's int64.
 */
export function parseSize(text: string): number | undefined {
  const match = SIZE.exec(text);
  if (!match) return undefined;
  const multiplier = MULTIPLIERS[(match[2] ?? '').toLowerCase()] ?? 1;
  const bytes = Math.trunc(Number(match[1]) * multiplier);
  return bytes < INT64_LIMIT ? bytes : undefined;
}

/** `6291456` → `6 MiB`, `25275953152` → `23.5 GiB` (binary units, as docker counts). */
export function formatSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || Number.isInteger(value) ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}
