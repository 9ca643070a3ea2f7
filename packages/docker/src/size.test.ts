import { describe, expect, it } from 'vitest';
import { formatSize, parseSize } from './size.js';

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const TiB = 1024 ** 4;
const PiB = 1024 ** 5;

describe('parseSize (docker RAMInBytes)', () => {
  // The cases of go-units' own TestRAMInBytes, which docker's --memory parses with.
  it.each([
    ['32', 32],
    ['32b', 32],
    ['32B', 32],
    ['32k', 32 * KiB],
    ['32K', 32 * KiB],
    ['32kb', 32 * KiB],
    ['32Kb', 32 * KiB],
    ['32Kib', 32 * KiB],
    ['32KIB', 32 * KiB],
    ['32Mb', 32 * MiB],
    ['32Gb', 32 * GiB],
    ['32Tb', 32 * TiB],
    ['32Pb', 32 * PiB],
    ['32PB', 32 * PiB],
    ['32P', 32 * PiB],
    ['32.3', 32],
    ['32.3 mb', Math.trunc(32.3 * MiB)],
  ])('%s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  // What the issue found: docker takes these, we refused 2gb.
  it.each([
    ['2gb', 2 * GiB],
    ['2GB', 2 * GiB],
    ['2gib', 2 * GiB],
    ['1.5g', 1.5 * GiB],
    ['1 g', GiB],
    ['512m', 512 * MiB],
    ['6m', 6 * MiB],
  ])('%s is %d bytes (checked against docker create)', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each([
    '',
    'hello',
    '-32',
    ' 32 ',
    '32m b',
    '32bm',
    '1.2.3m',
    '2x',
    '.5g',
    '5.g',
    '2g,uid=0',
    '1e3',
    '0x10',
  ])('%j is not a size', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it('refuses sizes beyond int64, as docker does', () => {
    expect(parseSize('9999999999p')).toBeUndefined();
    expect(parseSize('100000g')).toBe(100_000 * GiB);
  });
});

describe('formatSize', () => {
  it.each([
    [512, '512 B'],
    [6 * MiB, '6 MiB'],
    [25_275_953_152, '23.5 GiB'],
    [2 * GiB, '2 GiB'],
  ])('%d is %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });
});
