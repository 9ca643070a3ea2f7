import { describe, expect, it } from 'vitest';
import { captureStreams } from '../test/_streams.js';
import { colorEnabled, Output } from './output.js';
import { clipped, formatElapsed, Progress } from './progress.js';

function output(options: Partial<Output['options']> = {}, tty = false, env: NodeJS.ProcessEnv = {}) {
  const streams = captureStreams({ tty, env });
  const out = new Output({ json: false, verbose: false, quiet: false, color: true, ...options }, streams);
  return { out, streams };
}

describe('Progress', () => {
  it('prints plain phase lines with elapsed times when not a TTY', () => {
    const { out, streams } = output();
    let now = 1000;
    const progress = new Progress(out, () => now);
    progress.onPhase({ phase: 'clone', status: 'start' });
    now = 2200;
    progress.onPhase({ phase: 'clone', status: 'done' });
    progress.onPhase({ phase: 'build', status: 'start' });
    progress.onLog('Step 1/3 : FROM base');
    progress.onPhase({ phase: 'build', status: 'fail', elapsedMs: 250, detail: 'exit 1' });
    progress.stop();
    expect(streams.stderr.text).toBe(
      'clone: started\nclone: done in 1.2s\nbuild: started\nbuild: failed in 250ms (exit 1)\n',
    );
    expect(streams.stdout.text).toBe('');
  });

  it('says a phase is still running when not a TTY, with the last log line, until it ends', async () => {
    const { out, streams } = output();
    let now = 0;
    const progress = new Progress(out, () => now, 20);
    progress.onPhase({ phase: 'deps', status: 'start' });
    progress.onLog('added 12 packages \u001b[2J');
    // The install step's records for the host are not its progress.
    progress.onLog('ca-sbx-toolchain:node=22.23.5,npm=10.9.9,gcc=12.2.0,');
    progress.onLog('ca-sandbox-confinement:;Uid: 1000 1000 1000 1000');
    now = 95_000;
    await new Promise((resolve) => setTimeout(resolve, 60));
    progress.onPhase({ phase: 'deps', status: 'done' });
    const before = streams.stderr.text;
    await new Promise((resolve) => setTimeout(resolve, 60));
    progress.stop();
    expect(before).toMatch(/^deps: still running after 1m35s: added 12 packages$/m);
    // Nothing more once no phase runs, and the log's own escape never reaches the stream raw.
    expect(streams.stderr.text.slice(before.length)).toBe('');
    expect(streams.stderr.text).not.toContain('\u001b[2J');
  });

  it('shows build log lines only under --verbose when not a TTY, sanitised', () => {
    const { out, streams } = output({ verbose: true });
    const progress = new Progress(out);
    progress.onLog('\u001b]0;owned\u0007npm \u001b[31mWARN\u001b[0m\rfake\r\n');
    expect(streams.stderr.text).toBe('  | npm WARN\\x0dfake\n');
  });

  it('keeps a warning on screen above the live frame on a TTY (the redraw moved up over it)', () => {
    const { out, streams } = output({ color: false }, true);
    const progress = new Progress(out, () => 0);
    progress.onPhase({ phase: 'clone', status: 'start' });
    progress.onPhase({ phase: 'clone', status: 'done' });
    progress.onPhase({ phase: 'build', status: 'start' });
    progress.onLog('npm install');
    progress.warn('the install registry presents a certificate the install does not trust');
    progress.onLog('still installing');
    progress.onPhase({ phase: 'build', status: 'done' });
    progress.stop();
    const screen = render(streams.stderr.text);
    expect(screen[0]).toBe('warning: the install registry presents a certificate the install does not trust');
    expect(screen.slice(1).filter(Boolean)).toEqual([
      expect.stringMatching(/^✓ clone/),
      expect.stringMatching(/^✓ build/),
    ]);
  });

  it('redraws live lines with a sanitised log tail on a TTY', () => {
    const { out, streams } = output({}, true);
    let now = 0;
    const progress = new Progress(out, () => now);
    progress.onPhase({ phase: 'build', status: 'start' });
    for (let i = 0; i < 8; i++) progress.onLog(`line ${i} \u001b[2J\u202e`);
    now = 3000;
    progress.onPhase({ phase: 'build', status: 'done' });
    progress.stop();
    const text = streams.stderr.text;
    expect(text).toContain('line 7 \\u202e');
    // Only what we paint: SGR colors and cursor movement, never the log's own sequences.
    expect(text).not.toContain('\u001b[2J');
    expect(text).not.toContain('\u202e');
    expect(text).toMatch(/build\s+\S*3\.0s/);
  });

  it('redraws in place from the first row without clearing the whole screen (tmux would scroll it)', () => {
    const { out, streams } = output({ color: false }, true);
    let now = 0;
    const progress = new Progress(out, () => now);
    progress.onPhase({ phase: 'clone', status: 'start' });
    progress.onLog('a long log line');
    progress.onLog('another');
    now = 500;
    progress.onPhase({ phase: 'clone', status: 'done', detail: 'ok' });
    progress.onPhase({ phase: 'build', status: 'start' });
    progress.stop();
    const screen = renderTerminal(streams.stderr.text);
    expect(screen.fullClears).toBe(0);
    expect(screen.rows).toEqual(['✓ clone     500ms ok', '⠋ build     0ms', '']);
    // What comes after the frame (the summary, a shell's prompt) starts a clean line.
    expect(streams.stderr.text.endsWith('\n')).toBe(true);
  });

  it('is silent under --json and --quiet', () => {
    for (const options of [{ json: true }, { quiet: true }]) {
      const { out, streams } = output(options, true);
      const progress = new Progress(out);
      progress.onPhase({ phase: 'clone', status: 'start' });
      progress.onLog('x');
      progress.stop();
      expect(streams.stderr.text).toBe('');
    }
  });
});

/**
 * The little of a terminal the live progress uses, started on the screen's first row: text, \\n,
 * CPL (`ESC[nF`), erase line (`ESC[2K`), erase below (`ESC[J`). `fullClears` counts an erase below
 * issued at the top-left corner: a whole-screen clear, which tmux scrolls into its history.
 */
function renderTerminal(text: string): { rows: string[]; fullClears: number } {
  const rows = [''];
  let row = 0;
  let column = 0;
  let fullClears = 0;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape sequences are what it reads
  const pattern = /\u001b\[(\d*)([A-Za-z])|\n|[^\u001b\n]+/gu;
  for (const [token, count, command] of text.matchAll(pattern)) {
    if (token === '\n') {
      row += 1;
      column = 0;
      rows[row] ??= '';
    } else if (command === 'F') {
      row = Math.max(0, row - Number(count || 1));
      column = 0;
    } else if (command === 'K') rows[row] = '';
    else if (command === 'J') {
      if (row === 0 && column === 0) fullClears += 1;
      rows.length = row + 1;
      rows[row] = (rows[row] ?? '').slice(0, column);
    } else if (command === undefined) {
      rows[row] = `${rows[row] ?? ''}${token}`;
      column += token.length;
    }
  }
  return { rows, fullClears };
}

describe('formatElapsed', () => {
  it('formats milliseconds, seconds and minutes', () => {
    expect(formatElapsed(850)).toBe('850ms');
    expect(formatElapsed(1234)).toBe('1.2s');
    expect(formatElapsed(125_000)).toBe('2m05s');
    // Never a 60 in the seconds (a new-user trial saw `clone: still running after 1m60s`).
    expect(formatElapsed(119_600)).toBe('2m00s');
    expect(formatElapsed(90_000)).toBe('1m30s');
    expect(formatElapsed(59_970)).toBe('1m00s');
    expect(formatElapsed(59_940)).toBe('59.9s');
    expect(formatElapsed(999.6)).toBe('1.0s');
    expect(formatElapsed(3_599_999)).toBe('60m00s');
  });
});

describe('Output', () => {
  it('colors only on a TTY without --no-color, NO_COLOR or --json', () => {
    const tty = captureStreams({ tty: true });
    const base = { json: false, color: true };
    expect(colorEnabled(base, tty)).toBe(true);
    expect(colorEnabled({ ...base, color: false }, tty)).toBe(false);
    expect(colorEnabled({ ...base, json: true }, tty)).toBe(false);
    expect(colorEnabled(base, captureStreams({ tty: true, env: { NO_COLOR: '1' } }))).toBe(false);
    expect(colorEnabled(base, captureStreams())).toBe(false);
  });

  it('prints tables with every cell on one sanitised line', () => {
    const { out, streams } = output();
    out.table(
      ['ID', 'REPO'],
      [
        ['a', 'evil\nrepo\u001b]0;x\u0007'],
        ['bb', 'ok'],
      ],
    );
    expect(streams.stdout.text).toBe('ID  REPO\na   evil\\nrepo\\x1b]0;x\\x07\nbb  ok\n');
  });

  it('writes errors as one line, or JSON under --json', () => {
    const human = output();
    human.out.error({ code: 'X', kind: 'failure', message: 'it broke\u001b[2J', hint: 'try again' });
    expect(human.streams.stderr.text).toBe('error: it broke\\x1b[2J\nhint: try again\n');
    const json = output({ json: true });
    json.out.error({ code: 'X', kind: 'failure', message: 'it\u2028broke' });
    expect(json.streams.stderr.text).toBe('{"error":{"code":"X","message":"it\\u2028broke"}}\n');
  });

  it('prints warnings even under --quiet and --json', () => {
    const { out, streams } = output({ quiet: true, json: true });
    out.warn('allowlist is EXPERIMENTAL');
    out.info('hidden');
    expect(streams.stderr.text).toBe('warning: allowlist is EXPERIMENTAL\n');
  });
});

describe('clipped', () => {
  it('keeps a short line, cuts a long one at a word with an ellipsis, a long word where it must', () => {
    expect(clipped('npm install', 120)).toBe('npm install');
    const line = 'docker build ca-sbx:underscore-1 (network ca-sbx.egress.t-underscore, memory 2g, cpus 2)';
    expect(clipped(line, 60)).toBe('docker build ca-sbx:underscore-1 (network…');
    expect(clipped('x'.repeat(200), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

/** The screen a terminal shows after `text`: lines, ESC[nF (n up, column 0), ESC[2K, ESC[J. */
function render(text: string): string[] {
  const screen: string[] = [''];
  let row = 0;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's escape sequences are what is read
  for (const token of text.match(/\u001b\[[0-9]*[A-Za-z]|\n|[^\u001b\n]+/g) ?? []) {
    if (token === '\n') {
      row += 1;
      screen[row] ??= '';
    } else if (token.startsWith('\u001b[')) {
      const code = token.at(-1);
      const n = Number(token.slice(2, -1) || 1);
      if (code === 'F') row = Math.max(0, row - n);
      else if (code === 'K') screen[row] = '';
      else if (code === 'J') screen.length = row + 1;
    } else screen[row] = (screen[row] ?? '') + token;
  }
  return screen;
}
