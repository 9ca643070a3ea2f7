/**
 * Everything a box produces (command output, file names, repo names, labels) is hostile. Before it
 * reaches a terminal we neutralise what a terminal would act on: escape sequences (CSI, OSC, DCS,
 * SOS/PM/APC and two-byte ESC forms), every C0 control except newline and tab, C1 controls
 * (U+0080–U+009F, which some terminals treat as 8-bit CSI/OSC), DEL, and the bidi overrides that
 * make text read differently from what it is (Trojan Source).
 */

// Complete, terminated control strings are dropped whole: their payload (a title, a hyperlink, a
// clipboard write) must not show up as stray text either. ST is ESC \ or BEL (OSC only) or 0x9C.
const STRING_SEQUENCE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u001b\u0007\u009c]*(?:\u0007|\u001b\\|\u009c)/g;
// CSI: ESC [ or 0x9B, parameter bytes, intermediate bytes, one final byte.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CSI_SEQUENCE = /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]/g;
// Two-byte escapes (ESC 7, ESC c, ESC ( B, ...).
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const ESC_SEQUENCE = /\u001b[\u0020-\u002f]*[\u0030-\u007e]/g;
// What is left: lone ESC, unterminated strings' introducers, any other control or bidi override.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_OR_LAYOUT = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Characters JSON.stringify leaves raw that can still harm a terminal or a JS consumer. */
const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `\u00XX`-style escape of one UTF-16 code unit. */
function unicodeEscape(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * Makes untrusted text safe to print on a terminal. Well-formed escape sequences are removed;
 * any other control character or bidi override is shown as a visible `\xNN` / `\uNNNN` escape so
 * that a reader sees something was there. Newline and tab are kept.
 */
export function sanitizeForTerminal(text: string): string {
  return text
    .replace(STRING_SEQUENCE, '')
    .replace(CSI_SEQUENCE, '')
    .replace(ESC_SEQUENCE, '')
    .replace(CONTROL, (char) => {
      const code = char.charCodeAt(0);
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : unicodeEscape(char);
    });
}

/** Like sanitizeForTerminal, for one line of output (a build log line): newline and tab shown escaped. */
export function sanitizeLine(text: string): string {
  return sanitizeForTerminal(text).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
}

/**
 * For names (sandbox ids, repo names, file names, paths) and messages that embed them: nothing is
 * dropped, every control character (newline and tab too) and bidi override is shown as a visible
 * escape, so `x\x1b[2Jy` reads as what the name really is.
 */
export function sanitizeName(text: string): string {
  return text.replace(CONTROL_OR_LAYOUT, (char) => {
    if (char === '\n') return '\\n';
    if (char === '\t') return '\\t';
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : unicodeEscape(char);
  });
}

/**
 * JSON for output: JSON.stringify already escapes C0 and lone surrogates; on top of that DEL, C1,
 * the line/paragraph separators (invalid in older JS string literals) and bidi overrides become
 * `\uXXXX` escapes, so the JSON text itself carries no raw control character. Parsing gives back
 * exactly the original strings.
 */
export function safeJsonStringify(value: unknown, indent?: number): string {
  return JSON.stringify(value, undefined, indent).replace(JSON_UNSAFE, unicodeEscape);
}
