import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAllowEntries, parseAllowEntry } from './allow-entries.js';
import { cidrContains, formatCidr, parseCidr } from './cidr.js';
import { InvalidAllowEntryError } from './errors.js';

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('missing value');
  return value;
}

const CANONICAL_V4 = /^(?:(?:0|[1-9]\d{0,2})\.){3}(?:0|[1-9]\d{0,2})\/(?:\d|[12]\d|3[0-2])$/;
const CANONICAL_V6 = /^[0-9a-f:]+\/(?:\d|[1-9]\d|1[01]\d|12[0-8])$/;

function thrown(fn: () => unknown): InvalidAllowEntryError {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidAllowEntryError) return error;
    throw error;
  }
  throw new Error('expected InvalidAllowEntryError');
}

describe('parseAllowEntries', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7/32'],
    ['203.0.113.7/32', '203.0.113.7/32'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['255.255.255.255', '255.255.255.255/32'],
    [' 192.168.1.9/24 ', '192.168.1.0/24'],
    ['2001:DB8::1', '2001:db8::1/128'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001/64', '2001:db8::/64'],
    ['::', '::/128'],
    ['::/0', '::/0'],
    ['::1', '::1/128'],
    ['fe80::', 'fe80::/128'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1/128'],
    ['1:0:0:2:3:0:0:4', '1::2:3:0:0:4/128'],
    ['1:2:3:4:5:6:7:0', '1:2:3:4:5:6:7:0/128'],
    ['::ffff:192.0.2.1', '::ffff:c000:201/128'],
  ])('normalises %s to %s', (entry, expected) => {
    expect(parseAllowEntries([entry])).toEqual([expected]);
  });

  it('drops duplicates after normalisation and keeps the order', () => {
    expect(parseAllowEntries(['10.0.0.1', '2001:db8::1', '10.0.0.1/32', '10.0.0.0/8', '10.9.9.9/8'])).toEqual(
      ['10.0.0.1/32', '2001:db8::1/128', '10.0.0.0/8'],
    );
  });

  it('accepts an empty list (everything dropped)', () => {
    expect(parseAllowEntries([])).toEqual([]);
  });

  it.each(['example.com', 'api.github.com', 'localhost', 'example.com/24', 'registry.npmjs.org.'])(
    'refuses the hostname %s and says to resolve it',
    (entry) => {
      const error = thrown(() => parseAllowEntries([entry]));
      expect(error.kind).toBe('usage');
      expect(error.code).toBe('INVALID_ALLOW_ENTRY');
      expect(error.message).toMatch(/^allowlist entries must be IP addresses or CIDRs; resolve '/);
      expect(error.message).toContain(entry.replace(/\/\d+$/, ''));
    },
  );

  it.each([
    '',
    ' ',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '010.0.0.1',
    '1.2.3.4/33',
    '1.2.3.4/',
    '1.2.3.4/08',
    '1.2.3.4/-1',
    '1.2.3.4/+8',
    '::/129',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':1:2:3:4:5:6:7',
    '12345::',
    'fe80::1%eth0',
    '1.2.3.4 5.6.7.8',
    '-j ACCEPT',
    '1.2.3.4\n-A INPUT',
    '0x7f.0.0.1',
    '127.1',
  ])('refuses %j with a clear lower-case message', (entry) => {
    const error = thrown(() => parseAllowEntries([entry]));
    expect(error.kind).toBe('usage');
    expect(error.message).toMatch(/^(invalid allowlist entry|allowlist entries must be)/);
    expect(error.message).not.toMatch(/[\n\r]/);
  });

  it('refuses non-strings and too many entries', () => {
    expect(() => parseAllowEntries([42])).toThrow(InvalidAllowEntryError);
    expect(() =>
      parseAllowEntries(Array.from({ length: 300 }, (_, i) => `10.0.${i >> 8}.${i & 255}`)),
    ).toThrow(/too many allowlist entries/);
  });
});

describe('parseAllowEntries (properties)', () => {
  const prefix4 = fc.integer({ min: 0, max: 32 });
  const prefix6 = fc.integer({ min: 0, max: 128 });

  it('every IPv4 address, with or without a prefix, normalises to a canonical, idempotent CIDR', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.option(prefix4), (ip, prefix) => {
        const entry = prefix === null ? ip : `${ip}/${prefix}`;
        const [out] = parseAllowEntries([entry]);
        expect(out).toMatch(CANONICAL_V4);
        expect(parseAllowEntries([out as string])).toEqual([out]);
        // The block contains the address the user typed.
        expect(cidrContains(must(parseCidr(out as string)), must(parseCidr(ip)))).toBe(true);
        if (prefix === null) expect(out).toBe(`${ip}/32`);
      }),
    );
  });

  it('every IPv6 address normalises to a canonical, idempotent CIDR that contains it', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.option(prefix6), (ip, prefix) => {
        const entry = prefix === null ? ip : `${ip}/${prefix}`;
        const [out] = parseAllowEntries([entry]);
        expect(out).toMatch(CANONICAL_V6);
        expect(parseAllowEntries([out as string])).toEqual([out]);
        expect(cidrContains(must(parseCidr(out as string)), must(parseCidr(ip)))).toBe(true);
        if (prefix === null) expect(parseCidr(out as string)?.bits).toBe(parseCidr(ip)?.bits);
      }),
    );
  });

  it('host bits are always cleared', () => {
    fc.assert(
      fc.property(fc.ipV4(), prefix4, (ip, prefix) => {
        const cidr = parseAllowEntry(`${ip}/${prefix}`);
        const hostBits = (1n << BigInt(32 - prefix)) - 1n;
        expect(cidr.bits & hostBits).toBe(0n);
        expect(formatCidr(cidr)).toBe(parseAllowEntries([`${ip}/${prefix}`])[0]);
      }),
    );
  });

  it('every hostname is refused with the resolve-it-yourself message', () => {
    fc.assert(
      fc.property(fc.domain(), (host) => {
        expect(() => parseAllowEntries([host])).toThrow(
          /^allowlist entries must be IP addresses or CIDRs; resolve/,
        );
      }),
    );
  });

  it('any string either throws InvalidAllowEntryError or yields only canonical CIDRs', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 50 }), { maxLength: 5 }), (entries) => {
        try {
          for (const out of parseAllowEntries(entries))
            expect(out).toMatch(/^(?:[0-9.]+|[0-9a-f:]+)\/\d{1,3}$/);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidAllowEntryError);
          expect((error as Error).message).not.toMatch(/[\n\r]/);
        }
      }),
    );
  });
});
