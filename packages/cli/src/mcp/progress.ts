import { sanitizeLine } from '@ca-sandbox/docker/contracts';

export interface ProgressParams {
  progressToken: string | number;
  progress: number;
  total?: number;
  message?: string;
}

export interface CreateProgressOptions {
  /** At most one log line per this many ms (a build can print thousands). */
  minIntervalMs?: number;
  /** A notification at least this often while nothing else happens (a quiet install). */
  heartbeatMs?: number;
  now?: () => number;
}

/** Longest log line sent (the box writes it: capped and escaped like the CLI's build log). */
const MAX_MESSAGE = 300;

/**
 * Progress notifications of one sandbox_create call: each phase as it starts and ends, build log
 * lines (throttled), and a heartbeat while the install is silent, so that a client that resets
 * its request timeout on progress (the SDK's resetTimeoutOnProgress) does not cancel a long build.
 * `progress` only increases, as the protocol requires; there is no total (a build's length is
 * unknown).
 */
export class CreateProgress {
  private count = 0;
  private phase = 'preflight';
  private lastSent = 0;
  private pending: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly started: number;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  /** Sends in order, one after the other; the result waits for them (see close). */
  private inflight: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (params: ProgressParams) => Promise<void>,
    private readonly token: string | number,
    options: CreateProgressOptions = {},
  ) {
    this.minIntervalMs = options.minIntervalMs ?? 500;
    this.now = options.now ?? Date.now;
    this.started = this.now();
    const heartbeatMs = options.heartbeatMs ?? 5_000;
    // Checked five times per period, so that a gap never grows past heartbeatMs by much.
    this.heartbeat = setInterval(
      () => {
        if (this.now() - this.lastSent < heartbeatMs) return;
        const seconds = Math.round((this.now() - this.started) / 1000);
        this.emit(`${this.phase}: still running (${seconds}s)`);
      },
      Math.max(10, Math.floor(heartbeatMs / 5)),
    );
    this.heartbeat.unref();
  }

  /** A phase event of createSandbox. */
  onPhase(event: { phase: string; status: string; detail?: string }): void {
    // A line still held back belongs to the phase that printed it, not to the one starting now.
    this.flush();
    this.phase = event.phase;
    const detail = event.detail ? `: ${event.detail}` : '';
    this.emit(`${event.phase} ${event.status}${detail}`);
  }

  /** A log line of createSandbox (build output from the repo: hostile text). */
  onLog(line: string): void {
    this.pending = line;
    const wait = this.minIntervalMs - (this.now() - this.lastSent);
    if (wait <= 0) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /**
   * Stops the heartbeat and resolves once every notification is written: the client drops
   * progress that arrives after the result, so the result must not overtake the last phases.
   */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.flush();
    await this.inflight;
    // The TypeScript SDK client handles a notification a microtask later than a response that
    // arrives in the same read: without a pause the last phases would reach it after the result
    // and be dropped (it forgets the progress token when the result comes).
    if (this.count > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending === undefined) return;
    const line = this.pending;
    this.pending = undefined;
    this.emit(`${this.phase}: ${line}`);
  }

  private emit(message: string): void {
    this.count += 1;
    this.lastSent = this.now();
    const text = sanitizeLine(message);
    const params: ProgressParams = {
      progressToken: this.token,
      progress: this.count,
      message: text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text,
    };
    this.inflight = this.inflight.then(() => this.send(params)).catch(() => {});
  }
}
