import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packTree } from './pack-tree.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-lc-pack-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A plain Writable (not a Transform: pipeline leaves those open) that keeps what it gets. */
function sink(): Writable & { chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  const writable = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return Object.assign(writable, { chunks });
}

interface Packed {
  name: string;
  type: string;
  body: string;
  linkname?: string;
  mode?: number;
}

async function entriesOf(chunks: Buffer[]): Promise<Packed[]> {
  const extract = tar.extract();
  Readable.from([Buffer.concat(chunks)]).pipe(extract);
  const entries: Packed[] = [];
  for await (const entry of extract) {
    const body: Buffer[] = [];
    for await (const chunk of entry) body.push(chunk as Buffer);
    const { name, type, linkname, mode } = entry.header;
    entries.push({
      name,
      type: String(type),
      body: Buffer.concat(body).toString(),
      linkname: linkname ?? undefined,
      mode,
    });
  }
  return entries;
}

describe('packTree', () => {
  it('writes the staged tree as a tar stream: sorted, links kept as links, the stream left open', async () => {
    await mkdir(join(dir, 'repo', 'sub'), { recursive: true });
    await writeFile(join(dir, 'repo', 'b.txt'), 'bee', { mode: 0o755 });
    await writeFile(join(dir, 'repo', 'sub', 'a.txt'), 'a');
    await link(join(dir, 'repo', 'b.txt'), join(dir, 'repo', 'hard'));
    await symlink('sub/a.txt', join(dir, 'repo', 'soft'));
    await writeFile(join(dir, 'beside'), 'not packed');
    const output = sink();
    await packTree(dir, 'repo', output);
    expect(output.writableEnded).toBe(false);
    const entries = await entriesOf(output.chunks);
    expect(entries.map((e) => [e.name, e.type])).toEqual([
      ['repo/', 'directory'],
      ['repo/b.txt', 'file'],
      ['repo/hard', 'link'],
      ['repo/soft', 'symlink'],
      ['repo/sub/', 'directory'],
      ['repo/sub/a.txt', 'file'],
    ]);
    expect(entries[1]).toMatchObject({ body: 'bee', mode: 0o755 });
    expect(entries[2]?.linkname).toBe('repo/b.txt');
    expect(entries[3]?.linkname).toBe('sub/a.txt');
  });

  it('a single file', async () => {
    await writeFile(join(dir, 'note.txt'), 'hello');
    const output = sink();
    await packTree(dir, 'note.txt', output);
    expect(await entriesOf(output.chunks)).toEqual([
      expect.objectContaining({ name: 'note.txt', type: 'file', body: 'hello' }),
    ]);
  });
});
