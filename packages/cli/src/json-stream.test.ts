import { PassThrough } from 'node:stream';
import { safeJsonStringify } from '@ca-sandbox/docker/contracts';
import { describe, expect, it } from 'vitest';
import { writeJson } from './json-stream.js';

async function written(value: unknown): Promise<string> {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await writeJson(stream, value);
  stream.end();
  return Buffer.concat(chunks).toString('utf8');
}

describe('writeJson', () => {
  it('writes what safeJsonStringify(value, 2) writes, piece by piece', async () => {
    const values: unknown[] = [
      { a: 1, b: [1, 'two', { c: null, d: undefined, e: [] }], f: {}, g: 'x\u001b]52;\u202e\u0085', h: true },
      [],
      [undefined, () => 1, { toJSON: () => ({ k: [1, 2] }) }],
      'plain',
      // Rows with lists of plain values: written as one piece each, the same text.
      {
        rows: [
          { path: 'a', changed: ['content', 'mode'] },
          { path: 'b', changed: [], x: [undefined, 1, null] },
        ],
      },
      {
        nested: {
          deeper: { list: Array.from({ length: 5000 }, (_, i) => ({ path: `/work/repo/${i}`, n: i })) },
        },
      },
    ];
    for (const value of values) expect(await written(value)).toBe(`${safeJsonStringify(value, 2)}\n`);
  });
});
