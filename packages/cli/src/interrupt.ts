/** Exit codes after a signal, as a shell reports a process it ended: 128 + the signal number. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
export type HandledSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * How a command meets SIGINT/SIGTERM:
 * - `abort`: the first signal aborts the command's AbortSignal; the command cleans up (create
 *   removes what it made, run destroys its box) and the CLI then exits 130/143; a second signal
 *   exits at once.
 * - `exit`: nothing to clean up, exit 130/143 at once.
 * - `none`: Node's default, or the command's own handling (an interactive shell, the MCP server).
 */
export type InterruptMode = 'abort' | 'exit' | 'none';

export class Interrupt {
  private readonly controller = new AbortController();
  received: HandledSignal | undefined;

  constructor(
    private readonly mode: InterruptMode,
    private readonly exit: (code: number) => void = (code) => process.exit(code),
  ) {
    if (mode === 'none') return;
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** 130/143 once a signal was received. */
  get exitCode(): number | undefined {
    return this.received ? SIGNAL_EXIT_CODES[this.received] : undefined;
  }

  dispose(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    const first = (signal === 'SIGTERM' ? 'SIGTERM' : 'SIGINT') satisfies HandledSignal;
    if (this.received || this.mode === 'exit') {
      this.exit(SIGNAL_EXIT_CODES[this.received ?? first]);
      return;
    }
    this.received = first;
    this.controller.abort(new Error(`interrupted by ${first}`));
  };
}
