// The one sanitiser of text that comes from a box or a repo and is shown to a person (a terminal,
// a log file, an error message, JSON). No imports: the contracts entry carries it.

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
/**
 * The bidi controls that make text read differently from what it is (Trojan Source): the Arabic
 * letter mark, the LRM/RLM marks, embeddings and overrides (U+202A–U+202E) and isolates
 * (U+2066–U+2069). A regex character-class body: the one list, also used by the terminal filter.
 */
const BIDI_CONTROLS = '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';
// What is left: lone ESC, unterminated strings' introducers, any other control or bidi override.
const CONTROL = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${BIDI_CONTROLS}]`, 'g');
// Every C0 control (newline and tab too), DEL, C1 and the bidi controls.
const CONTROL_OR_LAYOUT = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI_CONTROLS}]`, 'g');
const BIDI_CONTROL = new RegExp(`^[${BIDI_CONTROLS}]$`);

/** True for a bidi control code point (see BIDI_CONTROLS): never shown as it is. */
export function isBidiControl(codePoint: number): boolean {
  return BIDI_CONTROL.test(String.fromCodePoint(codePoint));
}

/** Characters JSON.stringify leaves raw that can still harm a terminal or a JS consumer. */
const JSON_UNSAFE = new RegExp(`[\\u007f-\\u009f\\u2028\\u2029${BIDI_CONTROLS}]`, 'g');

/** `\u00XX`-style escape of one UTF-16 code unit. */
function unicodeEscape(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** A control character as a visible escape: `\xNN` up to U+00FF, else `\uNNNN`. */
function visibleEscape(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : unicodeEscape(char);
}

/** At most `max` characters (after sanitising, so an escape is never cut open by the caller). */
function capped(text: string, max: number | undefined): string {
  return max !== undefined && text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Makes untrusted text safe to print on a terminal or write to a log a person reads. Well-formed
 * escape sequences are removed; any other control character or bidi override is shown as a
 * visible `\xNN` / `\uNNNN` escape so that a reader sees something was there. Newline and tab are
 * kept. `max` bounds the result (an ellipsis marks the cut).
 */
export function sanitizeForTerminal(text: string, max?: number): string {
  return capped(
    text
      .replace(STRING_SEQUENCE, '')
      .replace(CSI_SEQUENCE, '')
      .replace(ESC_SEQUENCE, '')
      .replace(CONTROL, visibleEscape),
    max,
  );
}

/** Like sanitizeForTerminal, for one line of output (a build log line): newline and tab shown escaped. */
export function sanitizeLine(text: string, max?: number): string {
  return capped(sanitizeForTerminal(text).replace(/\n/g, '\\n').replace(/\t/g, '\\t'), max);
}

/** Where a name quoted in a one-line message is cut (a path or a ref the box or the repo chose). */
export const SHOWN_NAME_MAX = 200;

/**
 * For names (sandbox ids, repo names, file names, paths) and messages that embed them: nothing is
 * dropped, every control character (newline and tab too) and bidi override is shown as a visible
 * escape, so `x\x1b[2Jy` reads as what the name really is. `max` bounds the result (an error
 * message that quotes a name the repo or the box chose).
 */
export function sanitizeName(text: string, max?: number): string {
  return capped(
    text.replace(CONTROL_OR_LAYOUT, (char) => {
      if (char === '\n') return '\\n';
      if (char === '\t') return '\\t';
      return visibleEscape(char);
    }),
    max,
  );
}

/** True when the text holds a character sanitizeName would escape (a control or a bidi mark). */
export function hasControlCharacter(text: string): boolean {
  return text.search(CONTROL_OR_LAYOUT) !== -1;
}

/**
 * JSON for output: JSON.stringify already escapes C0 and lone surrogates; on top of that DEL, C1,
 * the line/paragraph separators (invalid in older JS string literals) and bidi controls become
 * `\uXXXX` escapes, so the JSON text itself carries no raw control character. Parsing gives back
 * exactly the original strings.
 */
export function safeJsonStringify(value: unknown, indent?: number): string {
  return JSON.stringify(value, undefined, indent).replace(JSON_UNSAFE, unicodeEscape);
}
