import { isInstallRecord } from '@ca-sandbox/build';
import { sanitizeLine, sanitizeName } from '@ca-sandbox/docker/contracts';
import type { Output } from './output.js';

/** What @ca-sandbox/lifecycle reports through hooks.onPhase. */
export interface PhaseUpdate {
  phase: string;
  status: 'start' | 'done' | 'fail';
  detail?: string;
  elapsedMs?: number;
}

interface PhaseState {
  phase: string;
  status: 'start' | 'done' | 'fail';
  startedAt: number;
  elapsedMs?: number;
  detail?: string;
}

const TAIL_LINES = 5;
/**
 * Without a terminal, a phase still running says so this often: a piped or logged `create` whose
 * install takes minutes would otherwise print nothing between "deps: started" and its end.
 */
export const PLAIN_HEARTBEAT_MS = 30_000;
const ERASE_LINE = '\u001b[2K';
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** `1.2s`, `850ms`, `2m05s`. */
export function formatElapsed(ms: number): string {
  // Rounded once, then split: rounding the remainder after flooring gave `1m60s`, and 59.97 s `60.0s`.
  if (Math.round(ms) < 1000) return `${Math.round(ms)}ms`;
  if (Math.round(ms / 100) < 600) return `${(Math.round(ms / 100) / 10).toFixed(1)}s`;
  const total = Math.round(ms / 1000);
  return `${Math.floor(total / 60)}m${String(total % 60).padStart(2, '0')}s`;
}

/**
 * Progress of `create` on stderr. On a TTY: one live line per phase with its elapsed time and,
 * under the running phase, the tail of the build log; redrawn in place. Not on a TTY: one plain
 * line per phase start and end (build log lines only under --verbose). Silent under --json/--quiet.
 * Log lines come from the build of an untrusted repo: each is sanitised to one line.
 */
export class Progress {
  private readonly phases: PhaseState[] = [];
  private tail: string[] = [];
  private drawnLines = 0;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** The last log line seen, for the plain heartbeat (the lines themselves show only with --verbose). */
  private lastLog: string | undefined;
  private readonly live: boolean;
  private readonly enabled: boolean;

  constructor(
    private readonly out: Output,
    private readonly now: () => number = Date.now,
    private readonly heartbeatMs = PLAIN_HEARTBEAT_MS,
  ) {
    this.enabled = out.chatty;
    this.live = this.enabled && Boolean(out.streams.stderr.isTTY);
  }

  /** hooks.onPhase */
  readonly onPhase = (update: PhaseUpdate): void => {
    if (!this.enabled) return;
    let state = this.phases.find((p) => p.phase === update.phase);
    if (!state || update.status === 'start') {
      state = { phase: update.phase, status: 'start', startedAt: this.now() };
      this.phases.push(state);
    }
    state.status = update.status;
    if (update.detail) state.detail = update.detail;
    if (update.status !== 'start') {
      state.elapsedMs = update.elapsedMs ?? this.now() - state.startedAt;
      this.tail = [];
    }
    if (this.live) {
      this.startTimer();
      this.redraw();
    } else {
      this.out.streams.stderr.write(`${this.plainLine(state)}\n`);
      this.startHeartbeat();
    }
  };

  /** hooks.onLog */
  readonly onLog = (line: string): void => {
    if (!this.enabled) return;
    const clean = sanitizeLine(line.replace(/\r?\n$/, ''));
    if (this.live) {
      this.tail.push(clean);
      if (this.tail.length > TAIL_LINES) this.tail.shift();
      this.redraw();
    } else if (this.out.options.verbose) {
      this.out.streams.stderr.write(`  | ${clean}\n`);
    } else if (clean.trim() && !isInstallRecord(clean)) {
      // The install's own last line: our records for the host (the toolchain's) say nothing of it.
      this.lastLog = clean.trim();
    }
  };

  /**
   * A warning while the create runs (hooks.onNotice). On a TTY it is written where the live frame
   * starts and the frame is drawn again below it: written plainly, the next redraw (a tenth of a
   * second later) moved up over it and erased it.
   */
  readonly warn = (line: string): void => {
    if (this.live && this.drawnLines > 0) {
      this.out.streams.stderr.write(`\u001b[${this.drawnLines}F${ERASE_LINE}`);
      this.out.warn(line);
      this.drawnLines = 0;
      this.redraw();
      return;
    }
    this.out.warn(line);
  };

  /** Stops the live redraw; the last frame stays on screen. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.timer = undefined;
    this.heartbeat = undefined;
    if (this.live) {
      this.tail = [];
      this.redraw();
    }
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.frame = (this.frame + 1) % FRAMES.length;
      this.redraw();
    }, 100);
    this.timer.unref();
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  /** One line per phase still running: how long, and the last log line (quiet runs never show it otherwise). */
  beat(): void {
    for (const state of this.phases) {
      if (state.status !== 'start') continue;
      const last = this.lastLog ? `: ${clipped(this.lastLog, 120)}` : '';
      this.out.streams.stderr.write(
        `${state.phase}: still running after ${formatElapsed(this.now() - state.startedAt)}${last}\n`,
      );
    }
    this.lastLog = undefined;
  }

  private plainLine(state: PhaseState): string {
    const detail = state.detail ? ` (${sanitizeName(state.detail)})` : '';
    if (state.status === 'start') return `${state.phase}: started${detail}`;
    const verb = state.status === 'done' ? 'done' : 'failed';
    return `${state.phase}: ${verb} in ${formatElapsed(state.elapsedMs ?? 0)}${detail}`;
  }

  private liveLine(state: PhaseState): string {
    const { out } = this;
    const elapsed = formatElapsed(state.elapsedMs ?? this.now() - state.startedAt);
    const room = Math.max(10, (out.streams.stderr.columns || 80) - 30);
    const detail = state.detail ? out.dim(` ${sanitizeName(state.detail).slice(0, room)}`) : '';
    const mark =
      state.status === 'done'
        ? out.green('✓')
        : state.status === 'fail'
          ? out.red('✗')
          : out.yellow(FRAMES[this.frame] ?? '*');
    return `${mark} ${state.phase.padEnd(9)} ${out.dim(elapsed)}${detail}`;
  }

  private redraw(): void {
    const width = Math.max(20, (this.out.streams.stderr.columns || 80) - 1);
    const lines = this.phases.map((state) => this.liveLine(state));
    for (const line of this.tail) lines.push(this.out.dim(`    ${line.slice(0, width - 4)}`));
    // Up over the previous frame, each line erased as it is drawn over, then what a taller frame
    // left below cleared. Not "clear to the end of the screen" first: from the screen's top-left
    // corner (a create started on the first row) tmux takes that for a full clear and scrolls
    // the whole screen into its history on every redraw, ten times a second.
    const up = this.drawnLines > 0 ? `\u001b[${this.drawnLines}F` : '';
    const drawn = lines.map((line) => `${ERASE_LINE}${line}`).join('\n');
    // The clear goes at the end of the last line, before its newline: what is written after the
    // frame (the summary, a prompt) then starts a clean line, not one that begins with ESC[J.
    this.out.streams.stderr.write(`${up}${drawn}\u001b[J\n`);
    this.drawnLines = lines.length;
  }
}

/** `line` within `max` characters, cut at a word when it is longer, with `…` where it was cut. */
export function clipped(line: string, max: number): string {
  if (line.length <= max) return line;
  const cut = line.slice(0, max - 1);
  const atWord = cut.replace(/\s+\S*$/, '');
  return `${atWord.length >= max / 2 ? atWord : cut}…`;
}
