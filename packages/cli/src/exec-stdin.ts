// `exec` never forwards stdin: nothing is ever copied into a box. Dropping it silently would make
// `printf x | ca-sandbox exec <id> -- cat` look like it worked, so data on stdin is refused.
//
// The rule, cheapest checks first:
//   - a terminal, /dev/null, or a closed stdin: fine (nothing is read from them);
//   - a regular file: refused when it is not empty (`< file`);
//   - another character device: refused (`< /dev/zero`, a serial line);
//   - a pipe or a socket: read once without waiting. Data there → refused; end of input (an empty
//     pipe whose writer is done, as from a test harness or `true |`) → fine; nothing yet (a writer
//     that holds the pipe open) → the command runs, and if data arrives while it runs, a warning
//     says it was not forwarded.
import { fstatSync, statSync } from 'node:fs';
import type { Socket } from 'node:net';
import { isatty } from 'node:tty';
import { UsageError } from './errors.js';

const HINT =
  'run it with stdin from a terminal or </dev/null; data enters a box only with the repo it is created from';

/** stdin holds data that exec would have to drop (exit 125, like every exec usage error). */
export class StdinNotForwardedError extends UsageError {
  constructor(what: string) {
    super(
      `exec does not forward stdin (there is no copy-in, by design), but stdin ${what}`,
      'STDIN_NOT_FORWARDED',
      HINT,
    );
  }
}

/** What is left to watch once the command starts: a stdin that may still receive data. */
export interface StdinWatch {
  /** True once data arrived after the check. Stops watching. */
  stop(): boolean;
}

const NOTHING: StdinWatch = { stop: () => false };

/** Throws StdinNotForwardedError when stdin holds data (the rule above); else what to watch. */
export async function checkStdin(fd = 0): Promise<StdinWatch> {
  let stats: ReturnType<typeof fstatSync>;
  try {
    stats = fstatSync(fd);
  } catch {
    return NOTHING; // closed
  }
  if (stats.isCharacterDevice()) {
    if (isatty(fd)) return NOTHING;
    if (stats.rdev === statSync('/dev/null').rdev) return NOTHING;
    throw new StdinNotForwardedError('is a device');
  }
  if (stats.isFile()) {
    if (stats.size > 0) throw new StdinNotForwardedError('is a non-empty file');
    return NOTHING;
  }
  if (!stats.isFIFO() && !stats.isSocket()) return NOTHING;
  return peekStream(fd);
}

async function peekStream(fd: number): Promise<StdinWatch> {
  const { Socket } = await import('node:net');
  let socket: Socket;
  try {
    socket = new Socket({ fd, readable: true, writable: false });
  } catch {
    return NOTHING;
  }
  const state: { seen: 'data' | 'end' | undefined } = { seen: undefined };
  socket.on('data', () => {
    state.seen = 'data';
    socket.destroy();
  });
  socket.on('end', () => {
    state.seen ??= 'end';
    socket.destroy();
  });
  socket.on('error', () => socket.destroy());
  // What is already in the pipe is read in the loop's next poll phase, before two check phases.
  await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
  if (state.seen === 'data') throw new StdinNotForwardedError('has data');
  if (state.seen === 'end' || socket.destroyed) return NOTHING;
  socket.unref();
  return {
    stop: () => {
      socket.destroy();
      return state.seen === 'data';
    },
  };
}

/** The warning for data that arrived on stdin after the command started. */
export const LATE_STDIN_WARNING =
  'stdin received data while the command ran; it was not forwarded (exec never reads stdin, there is no copy-in)';
