import { Writable } from 'node:stream';
import type { OutputStreams } from '../src/output.js';

/** A writable that keeps what it was given, optionally pretending to be a TTY. */
export class Capture extends Writable {
  text = '';
  isTTY: boolean;
  columns = 80;
  constructor(tty = false) {
    super();
    this.isTTY = tty;
  }
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += String(chunk);
    done();
  }
}

export function captureStreams(options: { tty?: boolean; env?: NodeJS.ProcessEnv } = {}): OutputStreams & {
  stdout: Capture;
  stderr: Capture;
} {
  return { stdout: new Capture(options.tty), stderr: new Capture(options.tty), env: options.env ?? {} };
}
