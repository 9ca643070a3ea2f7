#!/usr/bin/env node
// Draws the plugin icon (a sealed box on a dark tile) as a 512x512 PNG without any image library,
// so the icon can be regenerated anywhere: node packages/cli/scripts/plugin-icon.mjs <out.png>
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const SIZE = 512;
const out = process.argv[2] ?? new URL('../../../plugin/.claude-plugin/icon.png', import.meta.url).pathname;

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buffer) {
  let c = 0xffffffff;
  for (const byte of buffer) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function inRoundedRect(x, y, x0, y0, x1, y1, r) {
  if (x < x0 || x > x1 || y < y0 || y > y1) return false;
  const cx = Math.min(Math.max(x, x0 + r), x1 - r);
  const cy = Math.min(Math.max(y, y0 + r), y1 - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
}

function pixel(x, y) {
  const background = [22, 27, 34, 255];
  if (!inRoundedRect(x, y, 0, 0, SIZE - 1, SIZE - 1, 96)) return [0, 0, 0, 0];
  const teal = [45, 212, 191, 255];
  const amber = [251, 191, 36, 255];
  // The box: an outlined square with a lid line.
  const outer = inRoundedRect(x, y, 112, 150, 400, 420, 28);
  const inner = inRoundedRect(x, y, 140, 178, 372, 392, 12);
  if (outer && !inner) return teal;
  if (y >= 236 && y <= 256 && x >= 140 && x <= 372) return teal;
  // The seal: a padlock on the lid.
  const shackleOuter = (x - 256) ** 2 + (y - 120) ** 2 <= 62 ** 2 && y <= 150;
  const shackleInner = (x - 256) ** 2 + (y - 120) ** 2 <= 40 ** 2;
  if (shackleOuter && !shackleInner) return amber;
  if (inRoundedRect(x, y, 196, 140, 316, 236, 14)) {
    const keyhole =
      (x - 256) ** 2 + (y - 178) ** 2 <= 14 ** 2 || (x >= 250 && x <= 262 && y >= 178 && y <= 212);
    return keyhole ? background : amber;
  }
  return background;
}

const raw = Buffer.alloc((SIZE * 4 + 1) * SIZE);
for (let y = 0; y < SIZE; y++) {
  const row = y * (SIZE * 4 + 1);
  raw[row] = 0;
  for (let x = 0; x < SIZE; x++) raw.set(pixel(x, y), row + 1 + x * 4);
}
const header = Buffer.alloc(13);
header.writeUInt32BE(SIZE, 0);
header.writeUInt32BE(SIZE, 4);
header.set([8, 6, 0, 0, 0], 8);
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', header),
  chunk('IDAT', deflateSync(raw, { level: 9 })),
  chunk('IEND', Buffer.alloc(0)),
]);
writeFileSync(out, png);
console.log(`wrote ${out} (${png.length} bytes)`);
