import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TerminalFilter, type TerminalPolicy, terminalFilterStream } from './terminal-filter.js';

function run(policy: TerminalPolicy, ...chunks: (string | Buffer)[]): string {
  const filter = new TerminalFilter(policy);
  const parts = chunks.map((chunk) =>
    filter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk),
  );
  parts.push(filter.end());
  return Buffer.concat(parts).toString('utf8');
}

const OSC52 = '\u001b]52;c;cm0gLXJmIH4K\u0007';
const TITLE = '\u001b]0;root@host:~\u001b\\';

describe('TerminalFilter (interactive: a shell)', () => {
  it('drops clipboard writes, titles, hyperlinks and every control string, payload included', () => {
    const text = `a${OSC52}b${TITLE}c\u001b]8;;http://x\u0007link\u001b]8;;\u0007d\u001bPtmux;\u001b\u001b]52;c;eA==\u0007\u001b\\e\u001b_Gf=1;AAAA\u001b\\f\u001b^pm\u001b\\g\u001bXsos\u001b\\h`;
    expect(run('interactive', text)).toBe('abclinkdefgh');
  });

  it('keeps colours, cursor movement, the alternate screen and the modes vim and less use', () => {
    const screen =
      '\u001b[?1049h\u001b[H\u001b[2J\u001b[1;31mred\u001b[0m\u001b[10;5H\u001b[K\u001b[?25l\u001b[?2004h\u001b[?1h\u001b=\u001b(0lqk\u001b(B\u001b7\u001b8\u001bM\u001b[3A\u001b[2 q\u001b[1;24r';
    expect(run('interactive', screen)).toBe(screen);
  });

  it('drops window manipulation, title reports, kitty keyboard, printing and charset switches', () => {
    expect(
      run('interactive', 'a\u001b[21tb\u001b[8;1;1tc\u001b[>1ud\u001b[5ie\u001b%@f\u001b G\u001bZg'),
    ).toBe('abcdefg');
  });

  it('drops answerback and shift controls, C1 controls raw and in UTF-8, and bidi overrides', () => {
    const text = Buffer.concat([
      Buffer.from('a\u0005b\u000ec\u000fd\u0000e'),
      Buffer.from([0x9b, 0x33, 0x31, 0x6d]), // raw 8-bit CSI
      Buffer.from('f\u009d52;c;x\u0007g\u202eh\u2066i'),
    ]);
    expect(run('interactive', text)).toBe('abcde31mf52;c;x\u0007ghi');
  });

  it('keeps UTF-8 text, tabs, newlines, carriage returns, backspace and the bell', () => {
    const text = 'héllo → 世界 🙂\tx\r\ny\bz\u0007';
    expect(run('interactive', text)).toBe(text);
  });

  it('a sequence cut across chunks is held until it is complete', () => {
    expect(run('interactive', 'a\u001b', '[3', '1mb\u001b]5', '2;c;eA==', '\u0007c')).toBe('a\u001b[31mbc');
    expect(run('interactive', Buffer.from([0xe4, 0xb8]), Buffer.from([0x96, 0x41]))).toBe('世A');
  });

  it('an unfinished or interrupted sequence never reaches the terminal', () => {
    expect(run('interactive', 'a\u001b[31')).toBe('a');
    expect(run('interactive', 'a\u001b[3\n1mb')).toBe('a\n1mb');
    expect(run('interactive', `a\u001b[${'1;'.repeat(200)}mb`)).toBe('ab');
    // An ESC inside a string ends it and starts a sequence of its own, as a terminal does.
    expect(run('interactive', 'a\u001b]0;x\u001b[31mb')).toBe('a\u001b[31mb');
  });

  it('drops ANSI modes restore() cannot undo (keyboard lock, local echo, newline); keeps insert mode', () => {
    expect(run('interactive', 'a\u001b[2hb\u001b[12lc\u001b[20hd\u001b[2le\u001b[12hf\u001b[20lg')).toBe(
      'abcdefg',
    );
    // One forbidden mode in a list drops the whole sequence (no partial rewrite).
    expect(run('interactive', 'a\u001b[4;12lb\u001b[hc')).toBe('abc');
    const filter = new TerminalFilter('interactive');
    const kept = filter.push(Buffer.from('x\u001b[4hy\u001b[4;4lz')).toString('latin1');
    expect(kept).toBe('x\u001b[4hy\u001b[4;4lz');
    expect(filter.restore().toString('latin1')).toContain('\u001b[4l');
    // Private modes of the same numbers are other things (DEC modes) and stay.
    expect(run('interactive', '\u001b[?12l\u001b[?2h')).toBe('\u001b[?12l\u001b[?2h');
  });

  it('restore() undoes the modes the box switched on, and only those', () => {
    const filter = new TerminalFilter('interactive');
    expect(filter.restore().length).toBe(0);
    filter.push(
      Buffer.from('\u001b[?1049h\u001b[?1000h\u001b[?2004h\u001b[?25l\u001b[?1000l\u001b=\u001b[1m\u001b(0'),
    );
    const restore = filter.restore().toString('latin1');
    expect(restore).toContain('\u001b[?1049l');
    expect(restore).toContain('\u001b[?2004l');
    expect(restore).toContain('\u001b[?25h');
    expect(restore).not.toContain('1000');
    expect(restore).toContain('\u001b>');
    expect(restore).toContain('\u001b[0m');
    expect(restore).toContain('\u001b(B');
  });

  it('whatever the bytes, no control string or C1 control gets through', () => {
    const bytes = fc.uint8Array({ maxLength: 300 });
    const interesting = fc.constantFrom(
      ...[
        '\u001b',
        '\u001b]',
        '\u001bP',
        '\u001b[',
        '\u0007',
        '\u001b\\',
        '52;c;',
        '\u009b',
        '\u009d',
        '\u0018',
      ].map((s) => Buffer.from(s, 'utf8')),
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(bytes, interesting), { maxLength: 20 }), (chunks) => {
        for (const policy of ['interactive', 'output'] as const) {
          const out = Buffer.from(run(policy, ...chunks.map((c) => Buffer.from(c))), 'utf8');
          const text = out.toString('latin1');
          // ESC only ever starts CSI or an approved two/three-byte escape, never a string.
          // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal controls is the point
          expect(text).not.toMatch(/\u001b[\]P_^X]/);
          // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal controls is the point
          expect(text).not.toMatch(/[\u0000-\u0006\u000b\u000c\u000e-\u001a\u001c-\u001f\u007f]/);
          // No C1 control as a character.
          expect(out.toString('utf8')).not.toMatch(/[\u0080-\u009f]/);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('TerminalFilter (output: a command on a terminal)', () => {
  it('keeps colours, carriage returns and line erasing; drops cursor moves, modes and screen clears', () => {
    expect(run('output', '\u001b[32mok\u001b[0m\r\u001b[K50%\u001b[1G')).toBe(
      '\u001b[32mok\u001b[0m\r\u001b[K50%\u001b[1G',
    );
    expect(run('output', 'a\u001b[3Ab\u001b[2Jc\u001b[?1049hd\u001b7e\u001b=f')).toBe('abcdef');
    expect(run('output', `x${OSC52}y${TITLE}z`)).toBe('xyz');
  });

  it('resets colours the output left on', () => {
    const filter = new TerminalFilter('output');
    filter.push(Buffer.from('\u001b[31mred'));
    expect(filter.restore().toString()).toBe('\u001b[0m');
  });
});

describe('terminalFilterStream', () => {
  it('filters what goes through it', async () => {
    const stream = terminalFilterStream('interactive');
    const received: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => received.push(chunk));
    stream.write(`x${OSC52.slice(0, 4)}`);
    stream.end(`${OSC52.slice(4)}y`);
    await new Promise((resolve) => stream.once('end', resolve));
    expect(Buffer.concat(received).toString()).toBe('xy');
  });
});
