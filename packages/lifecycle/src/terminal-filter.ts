// What a box sends to a terminal passes through here, byte by byte, on the host side. A box must
// not act on the host terminal: no clipboard write (OSC 52), no title (OSC 0/1/2, whose report
// can be replayed as typed input), no hyperlink, no DCS/APC/PM/SOS string (tmux passthrough,
// DECRQSS, kitty graphics), no window manipulation (CSI t), no answerback (ENQ), no charset or
// C1 switch that would make later bytes mean something else, no bidi override.
//
// Every escape sequence is held until it is complete and then passed whole or dropped whole, so
// the terminal only ever sees sequences we approved and is back in its ground state after each
// one: a sequence cut across chunks, interrupted by another control, or too long, is dropped.
import { Transform, type TransformCallback } from 'node:stream';
// The bidi controls (Trojan Source) are the sanitiser's list: one rule for every shown text.
import { isBidiControl } from '@ca-sandbox/docker/contracts';

/**
 * `interactive`: a shell (colours, cursor movement, alternate screen and modes, so vim and less
 * work). `output`: a command's output on a terminal (colours, carriage return, erase and
 * column moves for progress bars; nothing that moves the cursor to earlier lines).
 */
export type TerminalPolicy = 'interactive' | 'output';

const ESC = 0x1b;
const MAX_SEQUENCE = 96;

const State = {
  Ground: 0,
  Escape: 1,
  EscapeIntermediate: 2,
  Csi: 3,
  CsiDiscard: 4,
  String: 5,
  StringEscape: 6,
} as const;
type State = (typeof State)[keyof typeof State];

// BS, HT, LF, CR and BEL; every other C0 control (ENQ answerback, SO/SI charset shifts, ...) and
// DEL are dropped.
const KEPT_C0 = new Set([0x07, 0x08, 0x09, 0x0a, 0x0d]);
// ESC + one final byte that a full-screen program needs: save/restore cursor, keypad modes,
// index, next line, tab set, reverse index, full reset.
const INTERACTIVE_ESC_FINALS = new Set(
  ['7', '8', '=', '>', 'D', 'E', 'H', 'M', 'c'].map((c) => c.charCodeAt(0)),
);
// ESC + intermediate + final: charset designations (line drawing) and DEC screen tests (`ESC # 8`).
// Not `ESC %` (leaves UTF-8, after which raw C1 bytes act) nor `ESC SP` (7/8-bit controls).
const INTERACTIVE_ESC_INTERMEDIATES = new Set(
  ['(', ')', '*', '+', '-', '.', '/', '#'].map((c) => c.charCodeAt(0)),
);

/** DEC private modes that are on in a terminal by default: autowrap (7) and a visible cursor (25). */
const DEFAULT_ON_MODES = new Set([7, 25]);

/**
 * The byte filter. `push` returns what may go to the terminal now; `end` what is left (a
 * sequence still incomplete at the end is dropped); `restore` the sequences that put back the
 * terminal modes the box changed (alternate screen, mouse reporting, bracketed paste, keypad,
 * colours...), so that nothing it switched on survives into the host's shell.
 */
export class TerminalFilter {
  private state: State = State.Ground;
  private sequence: number[] = [];
  /** Bytes of a UTF-8 sequence being assembled, and how many it needs in all. */
  private utf8: number[] = [];
  private utf8Need = 0;
  private readonly modes = new Map<number, boolean>();
  private readonly touched = new Set<string>();

  constructor(readonly policy: TerminalPolicy) {}

  push(chunk: Uint8Array): Buffer {
    const parts: Buffer[] = [];
    let out: number[] = [];
    let index = 0;
    while (index < chunk.length) {
      if (this.state === State.Ground && this.utf8Need === 0) {
        // Runs of printable ASCII, the bulk of any output, are copied as they are.
        let end = index;
        while (end < chunk.length && (chunk[end] as number) >= 0x20 && (chunk[end] as number) < 0x7f)
          end += 1;
        if (end > index) {
          if (out.length) parts.push(Buffer.from(out));
          out = [];
          parts.push(Buffer.from(chunk.subarray(index, end)));
          index = end;
          continue;
        }
      }
      this.byte(chunk[index] as number, out);
      index += 1;
    }
    if (out.length) parts.push(Buffer.from(out));
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** Ends the stream: an unfinished sequence or character is dropped. */
  end(): Buffer {
    this.state = State.Ground;
    this.sequence = [];
    this.utf8 = [];
    this.utf8Need = 0;
    return Buffer.alloc(0);
  }

  /** Sequences that undo what the box switched on, for when the session ends. */
  restore(): Buffer {
    const parts: string[] = [];
    for (const [mode, on] of this.modes) {
      const normallyOn = DEFAULT_ON_MODES.has(mode);
      if (on !== normallyOn) parts.push(`\u001b[?${mode}${normallyOn ? 'h' : 'l'}`);
    }
    if (this.touched.has('scroll-region')) parts.push('\u001b7\u001b[r\u001b8');
    if (this.touched.has('insert')) parts.push('\u001b[4l');
    if (this.touched.has('keypad')) parts.push('\u001b>');
    if (this.touched.has('charset')) parts.push('\u001b(B\u001b)B');
    if (this.touched.has('keys')) parts.push('\u001b[>4m');
    if (this.touched.has('cursor-style')) parts.push('\u001b[0 q');
    if (this.touched.has('sgr')) parts.push('\u001b[0m');
    return Buffer.from(parts.join(''), 'latin1');
  }

  private byte(byte: number, out: number[]): void {
    switch (this.state) {
      case State.Ground:
        this.ground(byte, out);
        return;
      case State.Escape:
        this.escape(byte, out);
        return;
      case State.EscapeIntermediate:
        this.escapeIntermediate(byte, out);
        return;
      case State.Csi:
        this.csi(byte, out);
        return;
      case State.CsiDiscard:
        if (byte >= 0x40 && byte <= 0x7e) this.state = State.Ground;
        else if (byte < 0x20 || byte > 0x7e) {
          this.state = State.Ground;
          this.ground(byte, out);
        }
        return;
      case State.String:
        // Dropped whole, payload included. BEL, ST (ESC \), CAN and SUB end it, as in a terminal.
        if (byte === 0x07 || byte === 0x18 || byte === 0x1a) this.state = State.Ground;
        else if (byte === ESC) this.state = State.StringEscape;
        return;
      case State.StringEscape:
        // ESC \ is the terminator; any other ESC ends the string and starts a new sequence.
        this.state = State.Ground;
        if (byte !== 0x5c) {
          this.startEscape();
          this.escape(byte, out);
        }
        return;
    }
  }

  private startEscape(): void {
    this.dropUtf8();
    this.state = State.Escape;
    this.sequence = [ESC];
  }

  private ground(byte: number, out: number[]): void {
    if (byte === ESC) {
      this.startEscape();
      return;
    }
    if (byte < 0x80) {
      this.dropUtf8();
      if (byte < 0x20 || byte === 0x7f) {
        if (KEPT_C0.has(byte)) out.push(byte);
        return;
      }
      out.push(byte);
      return;
    }
    this.utf8Byte(byte, out);
  }

  /** UTF-8 is passed through once a character is complete; C1 controls and bidi overrides are not. */
  private utf8Byte(byte: number, out: number[]): void {
    const continuation = byte >= 0x80 && byte <= 0xbf;
    if (this.utf8Need === 0) {
      // A stray continuation byte: 0x80–0x9F are 8-bit C1 controls to a terminal not in UTF-8.
      if (continuation) return;
      const need =
        byte >= 0xc2 && byte <= 0xdf
          ? 2
          : byte >= 0xe0 && byte <= 0xef
            ? 3
            : byte >= 0xf0 && byte <= 0xf4
              ? 4
              : 0;
      if (need === 0) return; // never valid in UTF-8 (C0, C1, F5–FF)
      this.utf8 = [byte];
      this.utf8Need = need;
      return;
    }
    if (!continuation) {
      // The character was cut short: it is dropped, and this byte starts afresh.
      this.dropUtf8();
      this.utf8Byte(byte, out);
      return;
    }
    this.utf8.push(byte);
    if (this.utf8.length < this.utf8Need) return;
    const character = Buffer.from(this.utf8).toString('utf8');
    const codePoint = character.codePointAt(0) ?? 0xfffd;
    this.dropUtf8();
    if (character.length === 0 || codePoint === 0xfffd) return; // overlong or surrogate
    if (codePoint >= 0x80 && codePoint <= 0x9f) return; // C1 control spelled in UTF-8
    if (isBidiControl(codePoint)) return;
    for (const b of Buffer.from(character, 'utf8')) out.push(b);
  }

  private dropUtf8(): void {
    this.utf8 = [];
    this.utf8Need = 0;
  }

  private escape(byte: number, out: number[]): void {
    if (byte === 0x5b) {
      this.state = State.Csi;
      this.sequence.push(byte);
      return;
    }
    // OSC, DCS, SOS, PM, APC: control strings, always dropped.
    if (byte === 0x5d || byte === 0x50 || byte === 0x58 || byte === 0x5e || byte === 0x5f) {
      this.state = State.String;
      this.sequence = [];
      return;
    }
    if (byte === ESC) {
      this.startEscape();
      return;
    }
    if (byte >= 0x20 && byte <= 0x2f) {
      this.state = State.EscapeIntermediate;
      this.sequence.push(byte);
      return;
    }
    this.state = State.Ground;
    this.sequence = [];
    if (byte >= 0x30 && byte <= 0x7e) {
      if (this.policy === 'interactive' && INTERACTIVE_ESC_FINALS.has(byte)) {
        if (byte === 0x3d) this.touched.add('keypad');
        out.push(ESC, byte);
      }
      return;
    }
    // A control or a non-ASCII byte cuts the escape short: the ESC is dropped, the byte is not.
    this.ground(byte, out);
  }

  private escapeIntermediate(byte: number, out: number[]): void {
    if (byte >= 0x20 && byte <= 0x2f && this.sequence.length < 4) {
      this.sequence.push(byte);
      return;
    }
    const sequence = this.sequence;
    this.state = State.Ground;
    this.sequence = [];
    if (byte >= 0x30 && byte <= 0x7e) {
      const intermediate = sequence[1] as number;
      if (
        this.policy === 'interactive' &&
        sequence.length === 2 &&
        INTERACTIVE_ESC_INTERMEDIATES.has(intermediate)
      ) {
        if (intermediate !== 0x23) this.touched.add('charset');
        out.push(...sequence, byte);
      }
      return;
    }
    if (byte === ESC) {
      this.startEscape();
      return;
    }
    this.ground(byte, out);
  }

  private csi(byte: number, out: number[]): void {
    if (byte >= 0x20 && byte <= 0x3f) {
      // Parameters must come before intermediates; the order is checked when the final arrives.
      this.sequence.push(byte);
      if (this.sequence.length > MAX_SEQUENCE) {
        this.state = State.CsiDiscard;
        this.sequence = [];
      }
      return;
    }
    const sequence = this.sequence;
    this.state = State.Ground;
    this.sequence = [];
    if (byte >= 0x40 && byte <= 0x7e) {
      const body = Buffer.from(sequence.slice(2)).toString('latin1');
      if (this.csiAllowed(body, String.fromCharCode(byte))) out.push(...sequence, byte);
      return;
    }
    if (byte === ESC) {
      this.startEscape();
      return;
    }
    this.ground(byte, out);
  }

  /** `body` is what stands between `ESC [` and the final byte. */
  private csiAllowed(body: string, final: string): boolean {
    const match = /^([<=>?]?)([0-9;:]*)([ -/]*)$/.exec(body);
    if (!match) return false;
    const [, prefix = '', params = '', intermediates = ''] = match;
    if (this.policy === 'output') {
      // Colours, erase in line, column: a progress bar redraws its own line and nothing else.
      const allowed =
        prefix === '' && intermediates === '' && (final === 'm' || final === 'K' || final === 'G');
      if (allowed && final === 'm') this.touched.add('sgr');
      return allowed;
    }
    // Window manipulation: resize, move, iconify, title stack, and reports of title and size.
    if (final === 't') return false;
    // ANSI (non-private) modes: only insert mode (4), which restore() undoes. The others outlive
    // the session unseen: keyboard lock (2), local echo off (12 l: a password typed at the host
    // prompt afterwards would show), newline mode (20).
    if (prefix === '' && intermediates === '' && (final === 'h' || final === 'l'))
      if (!params.split(';').every((value) => value === '4')) return false;
    // The kitty keyboard protocol and media copy (printing).
    if (final === 'u' && prefix !== '') return false;
    if (final === 'i') return false;
    this.note(prefix, params, intermediates, final);
    return true;
  }

  /** Remembers which modes the box changed, for restore(). */
  private note(prefix: string, params: string, intermediates: string, final: string): void {
    if (prefix === '?' && intermediates === '' && (final === 'h' || final === 'l')) {
      for (const value of params.split(';')) {
        const mode = Number(value);
        if (value !== '' && Number.isInteger(mode)) this.modes.set(mode, final === 'h');
      }
      return;
    }
    if (prefix === '' && intermediates === '') {
      if (final === 'm') this.touched.add('sgr');
      else if (final === 'r') this.touched.add('scroll-region');
      else if (final === 'h' && params.split(';').includes('4')) this.touched.add('insert');
    } else if (prefix === '>' && final === 'm') this.touched.add('keys');
    else if (intermediates === ' ' && final === 'q') this.touched.add('cursor-style');
  }
}

/** A stream that filters what is written to it for a terminal under `policy`. */
export function terminalFilterStream(policy: TerminalPolicy): Transform & { filter: TerminalFilter } {
  const filter = new TerminalFilter(policy);
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      const clean = filter.push(chunk);
      callback(null, clean.length ? clean : undefined);
    },
    flush(callback: TransformCallback) {
      filter.end();
      callback();
    },
  });
  return Object.assign(stream, { filter });
}
