import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';

/**
 * Writes the tree at `root/top` (a staging directory the extractor made: vetted names, modes and
 * links) as a tar stream to `output`, names `top/...`, in sorted order. Hard links inside the tree
 * stay links; nothing is followed. `output` is not ended (it may be the process's stdout).
 */
export async function packTree(root: string, top: string, output: Writable): Promise<void> {
  const pack = tar.pack();
  // tar-stream is a streamx stream: its pipe() ends the destination whatever the options, so the
  // bytes are moved by hand, with backpressure.
  const onError = (error: Error) => pack.destroy(error);
  output.on('error', onError);
  const producing = (async () => {
    try {
      await packEntry(pack, root, top, new Map());
      pack.finalize();
    } catch (error) {
      pack.destroy(error as Error);
      throw error;
    }
  })();
  const consuming = (async () => {
    for await (const chunk of pack) {
      if (!output.write(chunk)) await once(output, 'drain');
    }
  })();
  try {
    await Promise.all([producing, consuming]);
  } finally {
    output.off('error', onError);
  }
}

async function packEntry(
  pack: tar.Pack,
  root: string,
  name: string,
  seen: Map<string, string>,
): Promise<void> {
  const path = join(root, name);
  const info = await lstat(path);
  const base = { name, mode: info.mode & 0o7777, mtime: info.mtime };
  if (info.isSymbolicLink()) {
    await entry(pack, { ...base, type: 'symlink', linkname: await readlink(path) });
  } else if (info.isDirectory()) {
    // A trailing slash, as docker cp and tar write directory names.
    await entry(pack, { ...base, name: `${name}/`, type: 'directory' });
    for (const child of (await readdir(path)).sort()) await packEntry(pack, root, `${name}/${child}`, seen);
  } else if (info.isFile()) {
    const inode = `${info.dev}:${info.ino}`;
    const first = info.nlink > 1 ? seen.get(inode) : undefined;
    if (first !== undefined) {
      await entry(pack, { ...base, type: 'link', linkname: first });
      return;
    }
    if (info.nlink > 1) seen.set(inode, name);
    const sink = pack.entry({ ...base, type: 'file', size: info.size });
    await pipeline(createReadStream(path), sink);
  }
}

function entry(pack: tar.Pack, header: Partial<tar.Header> & { name: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (error) => (error ? reject(error) : resolve()));
  });
}
