import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  hasControlCharacter,
  SHOWN_NAME_MAX,
  safeJsonStringify,
  sanitizeForTerminal,
  sanitizeLine,
  sanitizeName,
} from './sanitize.js';

/** Anything a terminal could act on, or that reorders what a reader sees (newline and tab aside). */
function dangerous(text: string, allowNewline = true): string[] {
  return [...text].filter((char) => {
    const n = char.codePointAt(0) ?? 0;
    if (allowNewline && (n === 0x0a || n === 0x09)) return false;
    return (
      n <= 0x1f || (n >= 0x7f && n <= 0x9f) || (n >= 0x202a && n <= 0x202e) || (n >= 0x2066 && n <= 0x2069)
    );
  });
}

const HOSTILE: [string, string][] = [
  ['SGR color', '\u001b[31mred\u001b[0m'],
  ['cursor movement and erase', 'a\u001b[2J\u001b[Hb\u001b[1A\u001b[K'],
  ['OSC title with BEL', '\u001b]0;pwned\u0007after'],
  ['OSC 52 clipboard write with ST', '\u001b]52;c;ZWNobyBoaQ==\u001b\\after'],
  ['OSC 8 hyperlink', '\u001b]8;;https://evil.example\u001b\\click\u001b]8;;\u001b\\'],
  ['DCS', '\u001bPq#0;2;0;0;0\u001b\\after'],
  ['APC', '\u001b_payload\u001b\\after'],
  ['8-bit CSI', '\u009b31mred'],
  ['8-bit OSC', '\u009d0;title\u009cafter'],
  ['C1 NEL and others', 'a\u0085b\u0090c\u009fd'],
  ['carriage return overwrite', 'rm -rf /\rls'],
  ['backspace', 'safe\b\b\b\bevil'],
  ['bell and null', 'a\u0007b\u0000c'],
  ['DEL', 'a\u007fb'],
  ['bidi override (Trojan Source)', 'access\u202e\u2066// admin\u2069\u2066'],
  ['lone ESC', 'a\u001b'],
  ['unterminated OSC', '\u001b]0;never ends'],
  ['nested escape rebuild', '\u001b\u001b[31m[31m'],
  ['ESC charset switch', '\u001b(0lqk\u001b(B'],
];

describe('sanitizeForTerminal', () => {
  it.each(HOSTILE)('neutralises %s', (_name, input) => {
    const output = sanitizeForTerminal(input);
    expect(dangerous(output)).toEqual([]);
    expect(output).not.toContain('\u001b');
  });

  it('drops whole escape sequences, payload included', () => {
    expect(sanitizeForTerminal('\u001b[31mred\u001b[0m')).toBe('red');
    expect(sanitizeForTerminal('\u001b]0;pwned\u0007after')).toBe('after');
    expect(sanitizeForTerminal('\u001b]52;c;ZWNobyBoaQ==\u001b\\x')).toBe('x');
    expect(sanitizeForTerminal('\u009d0;title\u009cafter')).toBe('after');
  });

  it('shows stray controls as visible escapes', () => {
    expect(sanitizeForTerminal('a\rb')).toBe('a\\x0db');
    expect(sanitizeForTerminal('a\u0085b')).toBe('a\\x85b');
    expect(sanitizeForTerminal('x\u202ey')).toBe('x\\u202ey');
    expect(sanitizeForTerminal('a\u001b')).toBe('a\\x1b');
  });

  it('keeps newline, tab and ordinary unicode', () => {
    expect(sanitizeForTerminal('line 1\n\tline 2 — ünïcødé 🚀')).toBe('line 1\n\tline 2 — ünïcødé 🚀');
  });

  it('never lets a dangerous character through (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (input) => {
        expect(dangerous(sanitizeForTerminal(input))).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves printable ASCII untouched (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...' abcXYZ019~!@#$%^&*()[]{};:\'",.<>/?\\|`-_=+\n\t') }),
        (input) => {
          expect(sanitizeForTerminal(input)).toBe(input);
        },
      ),
    );
  });
});

// A build's output lines (once build's own cleanLine): each is shown on a terminal and kept in the
// install log a person reads.
describe('sanitizeForTerminal on a build log line', () => {
  it.each([
    ['7-bit CSI', 'a\u001b[31mred\u001b[0m b', 'ared b'],
    ['8-bit CSI (U+009B)', 'a\u009b31mred\u009b2J b', 'ared b'],
    ['C1 controls', 'x\u0080\u0085y', 'x\\x80\\x85y'],
    ['OSC title via C1, payload included', 'x\u009d0;pwned\u009cy', 'xy'],
    ['bidi overrides', 'evil\u202eexe.txt', 'evil\\u202eexe.txt'],
    ['bidi isolates and marks', '\u2066\u200fok', '\\u2066\\u200fok'],
    ['C0 and DEL', 'a\u0000b\u0007c\u007fd\re', 'a\\x00b\\x07c\\x7fd\\x0de'],
  ])('neutralises %s', (_what, hostile, expected) => {
    expect(sanitizeForTerminal(hostile, 2000)).toBe(expected);
  });

  it('keeps tabs and ordinary non-ASCII text (accents, CJK, emoji, the ZWJ sequence)', () => {
    const text = 'npm\tinstallé 依存関係 ✓ 👩‍💻 \u00a0done';
    expect(sanitizeForTerminal(text, 2000)).toBe(text);
  });

  it('bounds the line after sanitising, marking the cut', () => {
    expect(sanitizeForTerminal('x'.repeat(10_000), 2000)).toBe(`${'x'.repeat(2000)}…`);
    expect(sanitizeForTerminal('\u001b[31m'.repeat(1000) + 'short', 2000)).toBe('short');
  });
});

describe('sanitizeLine', () => {
  it('makes one line of a multi-line name', () => {
    expect(sanitizeLine('evil\nname\twith\u001b[2Kstuff')).toBe('evil\\nname\\twithstuff');
  });
});

describe('sanitizeName', () => {
  it('shows every control as a visible escape and drops nothing', () => {
    expect(sanitizeName('x\u001b[2Jy')).toBe('x\\x1b[2Jy');
    expect(sanitizeName('a\nb\tc\rd')).toBe('a\\nb\\tc\\x0dd');
    expect(sanitizeName('invoice\u202egpj.exe')).toBe('invoice\\u202egpj.exe');
    expect(sanitizeName('\u009b31m')).toBe('\\x9b31m');
  });

  it.each(HOSTILE)('leaves no dangerous character and no newline in %s', (_name, input) => {
    expect(dangerous(sanitizeName(input), false)).toEqual([]);
  });

  it('never lets a dangerous character or newline through (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (input) => {
        expect(dangerous(sanitizeName(input), false)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('sanitizeName with a cap (a name quoted in an error message)', () => {
  it('escapes first, then cuts, and says it cut', () => {
    expect(sanitizeName('a'.repeat(300), SHOWN_NAME_MAX)).toBe(`${'a'.repeat(SHOWN_NAME_MAX)}…`);
    expect(sanitizeName('id\u001b]0;x', 40)).toBe('id\\x1b]0;x');
    expect(sanitizeName('short', 40)).toBe('short');
  });
});

describe('hasControlCharacter', () => {
  it.each([
    ['NUL', 'a\u0000'],
    ['newline', 'a\nb'],
    ['tab', 'a\tb'],
    ['DEL', 'a\u007f'],
    ['C1', 'a\u0085'],
    ['bidi override', 'a\u202eb'],
    ['Arabic letter mark', 'a\u061cb'],
  ])('finds %s', (_what, text) => {
    expect(hasControlCharacter(text)).toBe(true);
  });

  it('passes plain and non-ASCII text, every time (no regex state between calls)', () => {
    for (let i = 0; i < 3; i += 1) {
      expect(hasControlCharacter('https://registry.npmjs.org/ é 依存')).toBe(false);
      expect(hasControlCharacter('x\u0007')).toBe(true);
    }
  });

  it('agrees with sanitizeName: a text is left unchanged exactly when it has none (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 50 }), (input) => {
        expect(hasControlCharacter(input)).toBe(sanitizeName(input) !== input);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('safeJsonStringify', () => {
  it('escapes DEL, C1, U+2028/2029 and bidi overrides on top of what JSON.stringify escapes', () => {
    const text = safeJsonStringify({ s: 'a\u007fb\u0085c\u2028d\u2029e\u202ef\u001bg' });
    expect(text).toBe('{"s":"a\\u007fb\\u0085c\\u2028d\\u2029e\\u202ef\\u001bg"}');
  });

  it('round-trips any value and emits no raw control character (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
        const input = { value, text };
        const json = safeJsonStringify(input, 2);
        expect(dangerous(json.replace(/\n/g, ''), false)).toEqual([]);
        expect(json).not.toMatch(/[\u2028\u2029]/);
        expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(input)));
      }),
      { numRuns: 500 },
    );
  });
});
