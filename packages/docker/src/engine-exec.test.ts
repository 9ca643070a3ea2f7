import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demultiplex } from './engine-exec.js';

/** One frame of docker's multiplexed stream: [type, 0, 0, 0, size32be] + payload. */
function frame(type: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

async function split(frames: Buffer[], hold: boolean) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.on('data', (chunk: Buffer) => err.push(chunk));
  // One byte at a time: frames cut anywhere.
  const bytes = [...Buffer.concat(frames)].map((byte) => Buffer.from([byte]));
  const held = await demultiplex(Readable.from(bytes), Buffer.alloc(0), stdout, stderr, hold);
  return {
    held: held?.toString(),
    stdout: Buffer.concat(out).toString(),
    stderr: Buffer.concat(err).toString(),
  };
}

const ENGINE =
  'OCI runtime exec failed: exec failed: unable to start container process: exec: "x": executable file not found in $PATH: unknown\r\n';

describe('demultiplex', () => {
  it('splits stdout and stderr frames', async () => {
    expect(await split([frame(1, 'a'), frame(2, 'b'), frame(1, 'c')], false)).toEqual({
      held: undefined,
      stdout: 'ac',
      stderr: 'b',
    });
  });

  it('holds back a lone first frame in the engine start-failure words, for the caller to judge', async () => {
    expect(await split([frame(1, ENGINE)], true)).toEqual({ held: ENGINE, stdout: '', stderr: '' });
    // Without the option it is output like any other.
    expect(await split([frame(1, ENGINE)], false)).toEqual({ held: undefined, stdout: ENGINE, stderr: '' });
  });

  it('releases the held frame, in order, as soon as another frame shows the process runs', async () => {
    expect(await split([frame(1, ENGINE), frame(2, 'e'), frame(1, 'more')], true)).toEqual({
      held: undefined,
      stdout: `${ENGINE}more`,
      stderr: 'e',
    });
  });

  it('holds nothing else: other first frames, a later frame in those words, stderr', async () => {
    expect(await split([frame(1, 'hi'), frame(1, ENGINE)], true)).toMatchObject({
      held: undefined,
      stdout: `hi${ENGINE}`,
    });
    expect(await split([frame(2, ENGINE)], true)).toMatchObject({ held: undefined, stderr: ENGINE });
  });
});
