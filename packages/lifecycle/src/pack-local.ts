import { constants } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { BOX_GID, BOX_UID, formatSize, SOURCE_LIMITS } from '@ca-sandbox/docker/process';
import tar from 'tar-stream';
import { SourceChangedError, SourceTooLargeError } from './errors.js';

export interface PackLimits {
  /** Total bytes of regular files. */
  maxBytes: number;
  /** Files, directories and symlinks. */
  maxEntries: number;
}

/** The default caps (`maxSourceBytes`, `maxSourceEntries`): contracts' SOURCE_LIMITS. */
export const DEFAULT_PACK_LIMITS: PackLimits = SOURCE_LIMITS;

export interface ScannedEntry {
  /** Relative posix path, no leading `./`. */
  path: string;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  mode: number;
  mtime: Date;
  dev: number;
  ino: number;
  linkname?: string;
}

export interface DirectoryScan {
  root: string;
  entries: ScannedEntry[];
  bytes: number;
  /** The directory has a `.git` directory: it is cloned (`--no-local`) rather than copied. */
  gitRepo: boolean;
  skipped: { path: string; reason: string }[];
}

/**
 * Walks `root` with lstat only (symlinks are recorded as links, never followed) and enforces
 * the caps before anything is sent anywhere. Only regular files, directories and symlinks are
 * kept; sockets, FIFOs and devices are skipped and listed.
 */
export async function scanDirectory(
  root: string,
  limits: PackLimits = DEFAULT_PACK_LIMITS,
): Promise<DirectoryScan> {
  const scan: DirectoryScan = { root, entries: [], bytes: 0, gitRepo: false, skipped: [] };
  const gitDir = await lstat(join(root, '.git')).catch(() => undefined);
  scan.gitRepo = gitDir?.isDirectory() ?? false;
  const pending: string[] = [''];
  while (pending.length > 0) {
    const relDir = pending.pop() as string;
    const names = await readdir(join(root, relDir)).catch((error: NodeJS.ErrnoException) => {
      scan.skipped.push({ path: relDir || '.', reason: `unreadable directory (${error.code ?? 'error'})` });
      return [] as string[];
    });
    for (const name of names.sort()) {
      const path = relDir ? `${relDir}/${name}` : name;
      const entry = await scanEntry(root, path, scan);
      if (!entry) continue;
      scan.entries.push(entry);
      if (scan.entries.length > limits.maxEntries) {
        throw new SourceTooLargeError(
          `the directory has more than ${limits.maxEntries} entries, over the entry cap (--max-source-entries ${limits.maxEntries})`,
        );
      }
      if (entry.type === 'directory') pending.push(path);
    }
  }
  return scan;

  async function scanEntry(
    base: string,
    path: string,
    into: DirectoryScan,
  ): Promise<ScannedEntry | undefined> {
    const info = await lstat(join(base, path)).catch(() => undefined);
    if (!info) {
      into.skipped.push({ path, reason: 'vanished while scanning' });
      return undefined;
    }
    const common = { path, mode: info.mode & 0o777, mtime: info.mtime, dev: info.dev, ino: info.ino };
    if (info.isDirectory()) return { ...common, type: 'directory', size: 0, mode: common.mode | 0o700 };
    if (info.isSymbolicLink()) {
      const linkname = await readlink(join(base, path));
      return { ...common, type: 'symlink', size: 0, linkname };
    }
    if (info.isFile()) {
      into.bytes += info.size;
      if (into.bytes > limits.maxBytes) {
        throw new SourceTooLargeError(
          `the directory holds more than ${formatSize(limits.maxBytes)} of files, over the byte cap (--max-source-bytes ${formatSize(limits.maxBytes)})`,
        );
      }
      return { ...common, type: 'file', size: info.size, mode: common.mode | 0o600 };
    }
    into.skipped.push({ path, reason: 'not a regular file, directory or symlink' });
    return undefined;
  }
}

/**
 * A tar stream of the scanned entries under `prefix` (e.g. `src/`), owned by 1000:1000, with
 * setuid/setgid/sticky bits dropped. Files are opened with O_NOFOLLOW and checked against the
 * scan, so a file swapped for a symlink after the scan fails the pack instead of being followed.
 */
export function packDirectory(scan: DirectoryScan, prefix = ''): Readable {
  const pack = tar.pack();
  const out = new PassThrough();
  // The Node stream carries the failure to whoever consumes it (docker's stdin, a pipeline).
  pack.on('error', (error: Error) => out.destroy(error));
  pack.pipe(out);
  void (async () => {
    try {
      if (prefix)
        await addEntry(pack, { ...OWNER, name: prefix.replace(/\/$/, ''), type: 'directory', mode: 0o700 });
      for (const entry of scan.entries) await packEntry(pack, scan.root, entry, prefix);
      pack.finalize();
    } catch (error) {
      pack.destroy(error as Error);
    }
  })();
  return out;
}

type Sink = ReturnType<tar.Pack['entry']>;
type TarHeader = Partial<tar.Header> & { name: string };

const OWNER = { uid: BOX_UID, gid: BOX_GID, uname: 'sandbox', gname: 'sandbox' };

async function packEntry(pack: tar.Pack, root: string, entry: ScannedEntry, prefix: string): Promise<void> {
  const header = { ...OWNER, name: `${prefix}${entry.path}`, mode: entry.mode, mtime: entry.mtime };
  if (entry.type === 'directory') return addEntry(pack, { ...header, type: 'directory' });
  if (entry.type === 'symlink')
    return addEntry(pack, { ...header, type: 'symlink', linkname: entry.linkname });
  const handle = await open(join(root, entry.path), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.ino !== entry.ino || info.dev !== entry.dev || info.size !== entry.size) {
      throw new SourceChangedError(entry.path, 'changed');
    }
    const { sink, done } = startEntry(pack, { ...header, type: 'file', size: entry.size });
    const buffer = Buffer.allocUnsafe(64 * 1024);
    let position = 0;
    while (position < entry.size) {
      const { bytesRead } = await handle.read(
        buffer,
        0,
        Math.min(buffer.length, entry.size - position),
        position,
      );
      if (bytesRead === 0) throw new SourceChangedError(entry.path, 'shrank');
      position += bytesRead;
      if (!sink.write(Buffer.from(buffer.subarray(0, bytesRead)))) await drained(sink);
    }
    sink.end(undefined);
    await done;
  } finally {
    await handle.close();
  }
}

function addEntry(pack: tar.Pack, header: TarHeader): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (error) => (error ? reject(error) : resolve()));
  });
}

function startEntry(pack: tar.Pack, header: TarHeader): { sink: Sink; done: Promise<void> } {
  let settle: (error?: Error | null) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  const sink = pack.entry(header, (error) => settle(error));
  return { sink, done };
}

/**
 * Waits for one 'drain'. Every listener goes when any of them fires: this runs once per 64 KiB
 * chunk of a big file, and leftover 'close'/'error' listeners piled up on the entry (Node's
 * MaxListenersExceededWarning on every create of a directory with a file over ~700 KiB).
 */
function drained(sink: Sink): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      sink.off('drain', onDrain);
      sink.off('close', onClose);
      sink.off('error', onError);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => settle();
    const onClose = () => settle(new Error('the tar stream was closed'));
    const onError = (error: Error) => settle(error);
    sink.once('drain', onDrain);
    sink.once('close', onClose);
    sink.once('error', onError);
  });
}
