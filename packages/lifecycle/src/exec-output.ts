import type { Readable } from 'node:stream';

// A command's output as exec keeps it: bounded, never cutting a UTF-8 sequence in two.

/**
 * Reads a stream to its end, keeping at most `max` bytes; the rest is read and dropped so the
 * writer never blocks and memory stays bounded.
 */
export async function captureCapped(
  stream: Readable | null | undefined,
  max: number,
): Promise<{ data: Buffer; truncated: boolean; total: number }> {
  const kept: Buffer[] = [];
  let size = 0;
  let total = 0;
  if (!stream) return { data: Buffer.alloc(0), truncated: false, total };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (size >= max) continue;
    const room = max - size;
    // Copy a partial chunk so the dropped tail is not kept alive by a view.
    const piece = chunk.length <= room ? chunk : Buffer.from(chunk.subarray(0, room));
    kept.push(piece);
    size += piece.length;
  }
  const data = Buffer.concat(kept, size);
  const truncated = total > max;
  return { data: truncated ? trimPartialUtf8(data) : data, truncated, total };
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
