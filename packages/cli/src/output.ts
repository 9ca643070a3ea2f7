import { isCaSandboxError, safeJsonStringify, sanitizeName } from '@ca-sandbox/docker/contracts';
import type { ErrorReport } from './error-report.js';

/** The options every command takes. */
export interface GlobalOptions {
  json: boolean;
  verbose: boolean;
  quiet: boolean;
  color: boolean;
}

export interface OutputStreams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

type Paint = (text: string) => string;

/** Color only on a TTY, never under --json, --no-color or a non-empty NO_COLOR. */
export function colorEnabled(
  options: Pick<GlobalOptions, 'json' | 'color'>,
  streams: OutputStreams,
): boolean {
  if (options.json || !options.color) return false;
  if (streams.env.NO_COLOR) return false;
  return Boolean(streams.stderr.isTTY);
}

/**
 * Where every byte the CLI prints goes through. Results go to stdout (JSON under --json),
 * progress and notes to stderr (silenced by --quiet and --json), warnings and errors to stderr
 * always. Text from a box or a repo must be passed through sanitize before it gets here.
 */
export class Output {
  readonly colored: boolean;
  readonly bold: Paint;
  readonly dim: Paint;
  readonly red: Paint;
  readonly green: Paint;
  readonly yellow: Paint;

  constructor(
    readonly options: GlobalOptions,
    readonly streams: OutputStreams = { stdout: process.stdout, stderr: process.stderr, env: process.env },
  ) {
    this.colored = colorEnabled(options, streams);
    const paint =
      (open: number, close: number): Paint =>
      (text) =>
        this.colored ? `\u001b[${open}m${text}\u001b[${close}m` : text;
    this.bold = paint(1, 22);
    this.dim = paint(2, 22);
    this.red = paint(31, 39);
    this.green = paint(32, 39);
    this.yellow = paint(33, 39);
  }

  /** Progress and notes are for a human watching a terminal. */
  get chatty(): boolean {
    return !this.options.json && !this.options.quiet;
  }

  /** The command's result under --json. */
  json(value: unknown): void {
    this.streams.stdout.write(`${safeJsonStringify(value, 2)}\n`);
  }

  /** A result line for humans (already sanitised by the caller). */
  result(text: string): void {
    this.streams.stdout.write(`${text}\n`);
  }

  /** A note on stderr, hidden by --quiet and --json. */
  info(text: string): void {
    if (this.chatty) this.streams.stderr.write(`${text}\n`);
  }

  /** A warning is printed whatever the mode: it must be seen every time. */
  warn(text: string): void {
    this.streams.stderr.write(`${this.yellow('warning:')} ${text}\n`);
  }

  /** Only under --verbose. */
  debug(text: string): void {
    if (this.options.verbose) this.streams.stderr.write(`${this.dim(text)}\n`);
  }

  /** One line (plus a hint line) on stderr; JSON under --json; the stack only under --verbose. */
  error(report: ErrorReport, error?: unknown): void {
    if (this.options.json) {
      const body: Record<string, string | string[]> = { code: report.code, message: report.message };
      if (report.hint) body.hint = report.hint;
      if (report.details) body.details = report.details;
      if (report.logFile) body.logFile = report.logFile;
      this.streams.stderr.write(`${safeJsonStringify({ error: body })}\n`);
    } else {
      this.streams.stderr.write(`${this.red('error:')} ${sanitizeName(report.message)}\n`);
      // The install's own lines (repo-controlled): each shown on one line with visible escapes.
      for (const line of report.details ?? [])
        this.streams.stderr.write(`  ${this.dim(sanitizeName(line))}\n`);
      if (report.hint) this.streams.stderr.write(`${this.dim('hint:')} ${sanitizeName(report.hint)}\n`);
    }
    if (this.options.verbose && error instanceof Error && error.stack) {
      this.streams.stderr.write(`${this.dim(sanitizeName(stackText(error)).replace(/\\n/g, '\n'))}\n`);
    }
  }

  /** A plain text table; every cell is a name shown on one line with visible escapes. */
  table(headers: string[], rows: string[][]): void {
    const cells = rows.map((row) => row.map((cell) => sanitizeName(cell)));
    // A reduce, not Math.max(...): a spread of 100,000 rows overflows the stack.
    const widths = headers.map((header, i) =>
      cells.reduce((widest, row) => Math.max(widest, (row[i] ?? '').length), header.length),
    );
    const format = (row: string[]) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd();
    this.result(this.bold(format(headers)));
    for (const row of cells) this.result(format(row));
  }
}

/**
 * The stack as --verbose prints it, headed by the error's code for one of ours: the bundle's
 * minifier renames classes, so `name` (and the stack's first line) reads `L: dependency install
 * failed`. The frames name the source files when the bin enabled source maps (it does so under
 * --verbose).
 */
export function stackText(error: Error): string {
  const stack = error.stack ?? '';
  const header = `${error.name}: ${error.message}`;
  if (!isCaSandboxError(error) || !stack.startsWith(header)) return stack;
  return `${error.code}: ${error.message}${stack.slice(header.length)}`;
}
