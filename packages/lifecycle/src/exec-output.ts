import type { Readable } from 'node:stream';

// A command's output as exec keeps it: bounded, never cutting a UTF-8 sequence in two.

/** Below this cap the output keeps its start only: a note of what was left out would not fit. */
const ENDS_MIN_CAP = 256;

/** What a capped capture kept: the output whole, or its start and its end with a gap between. */
export interface CappedOutput {
  /** The output whole, or its start. */
  data: Buffer;
  /** The output's end when something between was left out (with `omitted` > 0). */
  tail?: Buffer;
  /** Bytes left out between `data` and `tail` (or after `data`, below ENDS_MIN_CAP). */
  omitted: number;
  truncated: boolean;
  /** Bytes the stream carried. */
  total: number;
}

/**
 * The line that stands where output was left out. It is counted in the cap, and it says so in
 * words: a reader (a person, an agent) sees where the gap is and how to get the rest.
 */
export function omissionNote(omitted: number): string {
  return `\n[... ${omitted} bytes left out here by ca-sandbox: the start and the end are kept; a larger maxBytes, or the output written to a file in the box, has the rest ...]\n`;
}

/**
 * Reads a stream to its end, keeping at most `max` bytes: past the cap, the first quarter of it
 * and the last bytes (a test run says what failed and its summary at the end), with a note of the
 * gap between that counts in the cap. The rest is read and dropped so the writer never blocks,
 * and memory stays bounded (the end is a window of whole chunks, trimmed when it is read).
 */
export async function captureCapped(stream: Readable | null | undefined, max: number): Promise<CappedOutput> {
  const head: Buffer[] = [];
  let headSize = 0;
  const ends = max >= ENDS_MIN_CAP;
  const headMax = ends ? Math.floor(max / 4) : max;
  const window: Buffer[] = [];
  let windowSize = 0;
  let total = 0;
  if (!stream) return { data: Buffer.alloc(0), omitted: 0, truncated: false, total };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    let rest = chunk;
    if (headSize < headMax) {
      const room = headMax - headSize;
      // Copy a partial chunk so the dropped part is not kept alive by a view.
      const piece = rest.length <= room ? rest : Buffer.from(rest.subarray(0, room));
      head.push(piece);
      headSize += piece.length;
      rest = rest.length <= room ? Buffer.alloc(0) : rest.subarray(room);
    }
    if (!ends || rest.length === 0) continue;
    window.push(rest);
    windowSize += rest.length;
    // Keep whole chunks while the window without its oldest still holds all a tail could use.
    while (window.length > 1 && windowSize - (window[0] as Buffer).length >= max) {
      windowSize -= (window.shift() as Buffer).length;
    }
  }
  const start = Buffer.concat(head, headSize);
  if (total <= max) {
    return { data: Buffer.concat([start, ...window], total), omitted: 0, truncated: false, total };
  }
  if (!ends) {
    const data = trimPartialUtf8(start);
    return { data, omitted: total - data.length, truncated: true, total };
  }
  const data = trimPartialUtf8(start);
  // The note sized for the whole total: the real count (smaller) never makes it longer.
  const room = Math.max(0, max - data.length - Buffer.byteLength(omissionNote(total)));
  const whole = Buffer.concat(window, windowSize);
  const tail = skipPartialUtf8(Buffer.from(whole.subarray(Math.max(0, whole.length - room))));
  return { data, tail, omitted: total - data.length - tail.length, truncated: true, total };
}

/** The capture as text: invalid UTF-8 as U+FFFD, the gap (if any) as omissionNote. */
export function capturedText(output: CappedOutput): string {
  if (!output.tail) return decodeUtf8(output.data);
  return `${decodeUtf8(output.data)}${omissionNote(output.omitted)}${decodeUtf8(output.tail)}`;
}

/** Drops the continuation bytes a cut left at the start of a tail (at most three). */
export function skipPartialUtf8(data: Buffer): Buffer {
  let skip = 0;
  while (skip < Math.min(3, data.length) && ((data[skip] as number) & 0xc0) === 0x80) skip += 1;
  return data.subarray(skip);
}

/** Drops an incomplete UTF-8 sequence that the cap cut at the end. */
export function trimPartialUtf8(data: Buffer): Buffer {
  for (let back = 1; back <= Math.min(3, data.length); back += 1) {
    const byte = data[data.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    // Only a valid lead byte (C2..F4) starts a sequence the cap may have cut; anything else is
    // already invalid and decodes to U+FFFD on its own.
    const need = byte >= 0xc2 && byte <= 0xf4 ? (byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2) : 1;
    return need > back ? data.subarray(0, data.length - back) : data;
  }
  return data;
}

/** UTF-8 to string, invalid sequences as U+FFFD, a BOM kept as data. */
export function decodeUtf8(data: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(data);
}
