import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { isBuilderFraming } from './build-log.js';

/**
 * Where full install logs are kept: `$XDG_STATE_HOME/ca-sandbox/logs`, else
 * `~/.local/state/ca-sandbox/logs` (the XDG default). Only failed builds keep theirs.
 */
export function installLogDir(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  const state = env.XDG_STATE_HOME;
  const base = state && isAbsolute(state) ? state : join(home, '.local', 'state');
  return join(base, 'ca-sandbox', 'logs');
}

/**
 * How much of a build's output the log file keeps: the install is the repo's code and prints
 * as much as it likes, and this file is on the host (a flood would fill the user's disk). Past
 * it, only the last INSTALL_LOG_TAIL_LINES are kept, written at the end after a line that says
 * how much was left out: the end of a failed install is what explains it.
 */
export const INSTALL_LOG_MAX_BYTES = 16 * 1024 * 1024;
export const INSTALL_LOG_TAIL_LINES = 500;

/** The build's output (already cleaned of control sequences), line by line, on the host, capped. */
export class InstallLog {
  private written = 0;
  private dropped = 0;
  private droppedBytes = 0;
  /** The last lines past the cap (a ring: `tail[next]` is the oldest once it is full). */
  private readonly tail: string[] = [];
  private next = 0;

  private constructor(
    readonly path: string,
    private readonly stream: WriteStream,
  ) {}

  /** `name` is ours (sanitised repo part, dephash, time): no path separator comes from the repo. */
  static async open(name: string, dir = installLogDir()): Promise<InstallLog> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `${name}.log`);
    const stream = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    });
    return new InstallLog(path, stream);
  }

  write(line: string): void {
    const bytes = Buffer.byteLength(line) + 1;
    if (this.dropped === 0 && this.written + bytes <= INSTALL_LOG_MAX_BYTES) {
      this.written += bytes;
      this.stream.write(`${line}\n`);
      return;
    }
    this.dropped += 1;
    this.droppedBytes += bytes;
    if (this.tail.length < INSTALL_LOG_TAIL_LINES) this.tail.push(line);
    else {
      this.tail[this.next] = line;
      this.next = (this.next + 1) % INSTALL_LOG_TAIL_LINES;
    }
  }

  async close(): Promise<void> {
    if (this.dropped > 0) {
      const left = this.dropped - this.tail.length;
      if (left > 0) {
        const mib = INSTALL_LOG_MAX_BYTES / 1024 / 1024;
        this.stream.write(
          `[ca-sandbox: the install printed more than this log keeps (${mib} MiB, then its last ${INSTALL_LOG_TAIL_LINES} lines): ${left} lines (${this.droppedBytes} bytes with the last ones) left out here]\n`,
        );
      }
      const ordered = [...this.tail.slice(this.next), ...this.tail.slice(0, this.next)];
      for (const line of ordered) this.stream.write(`${line}\n`);
    }
    await new Promise<void>((resolve) => this.stream.end(resolve));
  }

  /** A build that succeeded keeps no log. */
  async discard(): Promise<void> {
    await new Promise<void>((resolve) => this.stream.end(resolve));
    await rm(this.path, { force: true });
  }
}

/** Lines that say why an install failed, by tool. */
const CAUSE = [
  /npm (ERR!|error)/,
  /gyp (ERR!|info it worked)|gyp: /,
  /ERR_PNPM_[A-Z_]+/,
  /\bYN0\d{3}\b.*(error|fail|couldn't|not found|✘)/i,
  /^error /,
  /^(ERROR|error): /,
  /No matching distribution|Could not find a version|ResolutionImpossible|HTTP error \d+|ModuleNotFoundError|subprocess-exited-with-error/,
  /^go: |^go\b.*(: (not found|reading|verifying|downloading)|module lookup disabled|dial tcp|410 Gone|404 Not Found)/,
  /^(fatal|FATAL|Traceback)\b/,
  /\b(No such file or directory|command not found|Permission denied|ENOENT|EACCES|ERESOLVE|ETIMEDOUT|ECONNREFUSED|EAI_AGAIN|ENOTFOUND|CERT_|certificate)\b/,
];

/** Lines that name the failure most precisely: the one quoted in the error message. */
const SPECIFIC =
  /\b(40[0-9]|Not Found|No matching distribution|Could not find|ERR_PNPM_\w+|ERESOLVE|ETARGET|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|certificate|gyp ERR! stack Error|fatal error|undefined reference|unknown revision|invalid version|checksum mismatch|module lookup disabled|Killed)\b/i;

/** A detail line's width (meaningfulLines' default): a joined cause line is held to it too. */
const CAUSE_WIDTH = 300;

/** The line of `details` to quote in a one-line message (with the next one when it ends in ':'). */
export function causeLine(details: readonly string[]): string | undefined {
  const index = Math.max(
    0,
    details.findIndex((line) => SPECIFIC.test(line)),
  );
  const line = details[index];
  const next = details[index + 1];
  if (!line?.trimEnd().endsWith(':') || !next) return line;
  const joined = `${line.trimEnd()} ${next.trim()}`;
  return joined.length > CAUSE_WIDTH ? `${joined.slice(0, CAUSE_WIDTH)}…` : joined;
}

/** Tools' trailers: never the cause (docker's own framing is isBuilderFraming's). */
const NOISE = [
  /A complete log of this run can be found in|Log files were not written/,
  /^gyp ERR! (cwd|node -v|node-gyp -v|System|command|not ok)\b/,
];

/**
 * The last meaningful lines of a failed build's output: those of the step that failed (after the
 * last `Step N/M :`), cause lines first-class (npm ERR!, gyp ERR!, ERR_PNPM_*, pip's resolution
 * errors, go's lookups, with the lines a cause ending in ':' introduces); without any, the step's
 * last lines. At most `max`, each bounded.
 */
export function meaningfulLines(lines: readonly string[], max = 8, width = CAUSE_WIDTH): string[] {
  let start = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^Step \d+\/\d+ : /.test(lines[i] ?? '')) {
      start = i + 1;
      break;
    }
  }
  // docker's closing "The command '<our script, over many lines>' returned a non-zero code" ends it.
  let end = lines.length;
  for (let i = lines.length - 1; i >= start; i--) {
    if ((lines[i] ?? '').startsWith("The command '")) {
      end = i;
      break;
    }
  }
  const step = lines
    .slice(start, end)
    .filter((line) => !isBuilderFraming(line) && !NOISE.some((re) => re.test(line)));
  // A cause that ends with ':' introduces what it is about on the lines after it (pnpm's
  // "1 lockfile entries failed verification:" then the entry): those come with it, up to three.
  // Whole groups are kept or cut, from the last: never a follower without its cause.
  const groups: string[][] = [];
  step.forEach((line, index) => {
    if (!CAUSE.some((re) => re.test(line))) return;
    const group = [line];
    if (line.trimEnd().endsWith(':'))
      for (const next of step.slice(index + 1, index + 4)) {
        if (CAUSE.some((re) => re.test(next))) break;
        group.push(next);
      }
    groups.push(group);
  });
  const causes: string[] = [];
  for (const group of groups.reverse()) {
    if (causes.length + group.length > max) {
      if (causes.length === 0) causes.push(...group.slice(0, max));
      break;
    }
    causes.unshift(...group);
  }
  const picked = causes.length > 0 ? causes : step.slice(-max);
  return picked.map((line) => (line.length > width ? `${line.slice(0, width)}…` : line));
}
