import { CreateAbortedError } from '../errors.js';

export type CreatePhase = 'preflight' | 'clone' | 'dephash' | 'build' | 'run' | 'verify';

export interface PhaseEvent {
  phase: CreatePhase;
  status: 'start' | 'done' | 'fail';
  detail?: string;
  elapsedMs?: number;
}

export interface CreateHooks {
  onPhase?(event: PhaseEvent): void;
  onLog?(line: string): void;
  /** A line the user must see whatever the verbosity (why the box does not get gVisor, say). */
  onNotice?(line: string): void;
  /** Abort (SIGINT/SIGTERM in the CLI): what was created so far is removed, then CreateAbortedError. */
  signal?: AbortSignal;
}

/**
 * One create's progress as the caller sees it: one phase at a time gets 'start', then 'done' with
 * its elapsed time or 'fail' with the error. A hook that throws never breaks the create.
 */
export class Progress {
  private current?: { phase: CreatePhase; started: number };

  constructor(private readonly hooks: CreateHooks) {}

  /** Runs one phase whose result is its detail line. */
  async phase(phase: CreatePhase, fn: () => Promise<string>): Promise<string> {
    this.checkAborted();
    this.start(phase);
    const detail = await fn();
    this.done(detail);
    return detail;
  }

  /** The phase running now, if any. */
  get running(): CreatePhase | undefined {
    return this.current?.phase;
  }

  start(phase: CreatePhase, detail?: string): void {
    this.emit({ phase, status: 'start', ...(detail ? { detail } : {}) });
    this.current = { phase, started: performance.now() };
  }

  done(detail?: string): void {
    if (!this.current) return;
    const elapsedMs = Math.round(performance.now() - this.current.started);
    this.emit({ phase: this.current.phase, status: 'done', elapsedMs, ...(detail ? { detail } : {}) });
    this.current = undefined;
  }

  /** Reports the phase that was running when the create failed. */
  fail(error: unknown): void {
    if (!this.current) return;
    const elapsedMs = Math.round(performance.now() - this.current.started);
    this.emit({ phase: this.current.phase, status: 'fail', elapsedMs, detail: (error as Error).message });
    this.current = undefined;
  }

  checkAborted(): void {
    if (this.hooks.signal?.aborted) throw new CreateAbortedError();
  }

  notice(line: string): void {
    try {
      this.hooks.onNotice?.(line);
    } catch {
      // A progress printer must not break a create.
    }
    this.log(line);
  }

  log(line: string): void {
    try {
      this.hooks.onLog?.(line);
    } catch {
      // idem
    }
  }

  private emit(event: PhaseEvent): void {
    try {
      this.hooks.onPhase?.(event);
    } catch {
      // idem
    }
  }
}
