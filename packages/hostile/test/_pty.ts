import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BIN } from './_harness.js';

/** A shell word for `script -c` (single quotes, any quote inside closed and escaped). */
function quote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The CLI bin in a real pseudo-terminal (util-linux `script` allocates it), as a person runs it:
 * stdin, stdout and stderr are the terminal, keystrokes (Ctrl-C included) go through its line
 * discipline. `output` is every byte the terminal received.
 */
export class PtySession {
  private chunks: Buffer[] = [];
  private readonly exited: Promise<number>;
  private readonly child: ChildProcessWithoutNullStreams;

  constructor(
    args: string[],
    options: {
      env?: Record<string, string>;
      rows?: number;
      columns?: number;
      /** A shell line run in the same terminal after the bin (its exit code is then script's). */
      after?: string;
    } = {},
  ) {
    const command = [process.execPath, BIN, ...args].map(quote).join(' ');
    const size = `stty rows ${options.rows ?? 30} cols ${options.columns ?? 100}`;
    const line = options.after ? `${size}; ${command}; ${options.after}` : `${size}; exec ${command}`;
    this.child = spawn('script', ['-qfec', line, '/dev/null'], {
      env: { ...process.env, TERM: 'xterm-256color', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (chunk: Buffer) => this.chunks.push(chunk));
    this.child.stderr.on('data', (chunk: Buffer) => this.chunks.push(chunk));
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve(code ?? -1)));
  }

  get output(): Buffer {
    return Buffer.concat(this.chunks);
  }

  get text(): string {
    return this.output.toString('utf8');
  }

  /** Waits until the terminal has shown `pattern`; fails with what it did show. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.text)) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${pattern}; terminal showed:\n${this.text}`);
      if (this.child.exitCode !== null)
        throw new Error(`exited before ${pattern}; terminal showed:\n${this.text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Types into the terminal. */
  type(text: string): void {
    this.child.stdin.write(text);
  }

  /** The bin's exit code (`script -e` passes it on). */
  async exit(timeoutMs = 60_000): Promise<number> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
      this.child.stdin.end();
    }
  }

  /** The bin's process id: the descendant of `script` that runs BIN. */
  binPid(): number {
    const children = (pid: number): number[] => {
      try {
        const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
        return text.split(' ').filter(Boolean).map(Number);
      } catch {
        return [];
      }
    };
    const queue = children(this.child.pid ?? 0);
    while (queue.length) {
      const pid = queue.shift() as number;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmdline.includes(BIN)) return pid;
      queue.push(...children(pid));
    }
    throw new Error('the bin is not running');
  }

  /** Resizes the terminal as a window does: the kernel sends SIGWINCH to the bin. */
  resize(rows: number, columns: number): void {
    execFileSync('stty', [
      '-F',
      `/proc/${this.binPid()}/fd/0`,
      'rows',
      String(rows),
      'cols',
      String(columns),
    ]);
  }
}
