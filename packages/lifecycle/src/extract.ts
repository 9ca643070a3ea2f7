import { constants } from 'node:fs';
import { chmod, link, lstat, mkdir, open, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import tar from 'tar-stream';
import { CpOutLimitError, CpOutStreamError } from './errors.js';

export interface ExtractLimits {
  /** Bytes of file content written. */
  maxBytes: number;
  /** Entries read from the stream, skipped ones included. */
  maxEntries: number;
}

export interface ExtractSummary {
  files: number;
  directories: number;
  symlinks: number;
  bytes: number;
  skipped: { path: string; reason: string }[];
}

const MAX_SKIPPED = 1000;

/** One entry of tar-stream's extract iterator. */
type TarEntry = AsyncIterable<unknown> & { header: tar.Header; resume(): unknown };

/**
 * Extracts a tar stream from the box into `target` (a fresh, empty directory we own) under strict
 * rules, because every name, link and mode in it is hostile:
 * - only entries under the single top-level name `top` are written;
 * - absolute, `..`, NUL and backslash names are skipped;
 * - regular files are created with O_EXCL|O_NOFOLLOW; setuid/setgid/sticky and group/world write
 *   bits are dropped from files and directories;
 * - devices and FIFOs are skipped;
 * - symlinks and hardlinks are made last and only when they resolve inside the copied tree without
 *   passing through another link; the rest are skipped and listed;
 * - caps on bytes and entries throw CpOutLimitError (the caller deletes `target`).
 */
export async function extractTar(
  input: Readable,
  target: string,
  top: string,
  limits: ExtractLimits,
): Promise<ExtractSummary> {
  const state = new ExtractState(target, top, limits);
  const extract = tar.extract();
  input.on('error', (error) => extract.destroy(error));
  input.pipe(extract);
  let entries = 0;
  try {
    for await (const entry of extract) {
      entries += 1;
      if (entries > limits.maxEntries) {
        throw new CpOutLimitError(`the copy has more than ${limits.maxEntries} entries`);
      }
      await state.add(entry);
    }
  } catch (error) {
    if (error instanceof CpOutLimitError || error instanceof CpOutStreamError) throw error;
    throw new CpOutStreamError(`the tar stream from the box is malformed: ${(error as Error).message}`);
  }
  await state.finish();
  return state.summary;
}

interface PendingLink {
  path: string[];
  linkname: string;
  kind: 'symlink' | 'hardlink';
}

class ExtractState {
  readonly summary: ExtractSummary = { files: 0, directories: 0, symlinks: 0, bytes: 0, skipped: [] };
  private readonly directories = new Map<string, number>();
  private readonly files = new Set<string>();
  private readonly links: PendingLink[] = [];

  constructor(
    private readonly target: string,
    private readonly top: string,
    private readonly limits: ExtractLimits,
  ) {}

  async add(entry: TarEntry): Promise<void> {
    const header = entry.header;
    const parts = entryParts(header.name);
    const reason = parts.reason ?? this.outsideTop(parts.path);
    if (reason) return this.skip(entry, header.name, reason);
    const path = parts.path;
    switch (header.type) {
      case 'directory':
        await this.directory(path, header.mode ?? 0o755, entry);
        return;
      case 'file':
      case 'contiguous-file':
        await this.file(path, header, entry);
        return;
      case 'symlink':
      case 'link':
        entry.resume();
        if (this.links.length >= this.limits.maxEntries) throw new CpOutLimitError('too many links');
        this.links.push({
          path,
          linkname: header.linkname ?? '',
          kind: header.type === 'link' ? 'hardlink' : 'symlink',
        });
        return;
      case 'fifo':
        return this.skip(entry, header.name, 'fifo');
      case 'character-device':
      case 'block-device':
        return this.skip(entry, header.name, 'device');
      default:
        return this.skip(entry, header.name, `unsupported entry type ${String(header.type)}`);
    }
  }

  async finish(): Promise<void> {
    for (const pending of this.links) if (pending.kind === 'hardlink') await this.hardlink(pending);
    for (const pending of this.keptSymlinks()) await this.symlink(pending);
    // Deepest first, so a read-only parent does not block its children's chmod.
    const dirs = [...this.directories.entries()].sort((a, b) => b[0].length - a[0].length);
    for (const [key, mode] of dirs) await chmod(join(this.target, key), safeMode(mode) | 0o700);
  }

  private outsideTop(path: string[]): string | undefined {
    if (path.length === 0) return 'empty name';
    return path[0] === this.top ? undefined : 'outside the copied path';
  }

  private async skip(entry: TarEntry, path: string, reason: string): Promise<void> {
    entry.resume();
    if (this.summary.skipped.length < MAX_SKIPPED)
      this.summary.skipped.push({ path: path.slice(0, 4096), reason });
    else if (this.summary.skipped.length === MAX_SKIPPED) {
      this.summary.skipped.push({ path: '…', reason: 'more entries skipped (list truncated)' });
    }
  }

  /** Creates missing parents; false when one of them is not a directory we made. */
  private async parents(path: string[]): Promise<boolean> {
    for (let depth = 1; depth < path.length; depth += 1) {
      const key = path.slice(0, depth).join('/');
      if (this.directories.has(key)) continue;
      if (this.files.has(key)) return false;
      await mkdir(join(this.target, key), { mode: 0o700 });
      this.directories.set(key, 0o755);
      this.summary.directories += 1;
    }
    return true;
  }

  private async directory(path: string[], mode: number, entry: TarEntry): Promise<void> {
    entry.resume();
    const key = path.join('/');
    if (this.files.has(key)) return this.skip(entry, key, 'a file with that name came first');
    if (!(await this.parents(path))) return this.skip(entry, key, 'parent is not a directory');
    if (!this.directories.has(key)) {
      await mkdir(join(this.target, key), { mode: 0o700 });
      this.summary.directories += 1;
    }
    this.directories.set(key, mode);
  }

  private async file(path: string[], header: tar.Header, entry: TarEntry): Promise<void> {
    const key = path.join('/');
    const size = header.size ?? 0;
    if (this.summary.bytes + size > this.limits.maxBytes) {
      throw new CpOutLimitError(
        `the copy is over the ${this.limits.maxBytes}-byte cap (at '${key.slice(0, 200)}')`,
      );
    }
    if (this.directories.has(key) || this.files.has(key)) return this.skip(entry, key, 'duplicate entry');
    if (!(await this.parents(path))) return this.skip(entry, key, 'parent is not a directory');
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const handle = await open(join(this.target, key), flags, 0o600);
    this.files.add(key);
    try {
      for await (const raw of entry) {
        const chunk = raw as Buffer;
        this.summary.bytes += chunk.length;
        if (this.summary.bytes > this.limits.maxBytes) {
          throw new CpOutLimitError(`the copy is over the ${this.limits.maxBytes}-byte cap`);
        }
        await handle.write(chunk);
      }
      await handle.chmod(safeMode(header.mode ?? 0o644));
      if (header.mtime) await handle.utimes(header.mtime, header.mtime);
    } finally {
      await handle.close();
    }
    this.summary.files += 1;
  }

  private async hardlink(pending: PendingLink): Promise<void> {
    const key = pending.path.join('/');
    const source = entryParts(pending.linkname);
    const sourceKey = source.path.join('/');
    if (source.reason || this.outsideTop(source.path)) {
      return this.skipLink(key, 'hardlink target outside the copied tree');
    }
    if (!this.files.has(sourceKey)) return this.skipLink(key, 'hardlink target is not a copied file');
    if (this.files.has(key) || this.directories.has(key)) return this.skipLink(key, 'duplicate entry');
    if (!(await this.parents(pending.path))) return this.skipLink(key, 'parent is not a directory');
    await link(join(this.target, sourceKey), join(this.target, key));
    this.files.add(key);
    this.summary.files += 1;
  }

  /**
   * The symlinks that resolve inside the tree; a link whose target is a skipped link is skipped
   * too (a chain ending outside the tree), until nothing changes.
   */
  private keptSymlinks(): PendingLink[] {
    const kept = new Map<string, { pending: PendingLink; target: string }>();
    const rejected = new Set<string>();
    for (const pending of this.links) {
      if (pending.kind !== 'symlink') continue;
      const key = pending.path.join('/');
      const resolved =
        pending.path.length < 2
          ? { reason: 'the copied path itself is a symlink' }
          : this.resolveSymlink(pending.path, pending.linkname);
      if ('reason' in resolved) {
        rejected.add(key);
        this.skipLink(key, resolved.reason);
      } else kept.set(key, { pending, target: resolved.target });
    }
    for (let changed = true; changed; ) {
      changed = false;
      for (const [key, link] of kept) {
        if (!rejected.has(link.target)) continue;
        kept.delete(key);
        rejected.add(key);
        this.skipLink(key, 'symlink points to a link that leaves the copied tree');
        changed = true;
      }
    }
    return [...kept.values()].map((link) => link.pending);
  }

  private async symlink(pending: PendingLink): Promise<void> {
    const key = pending.path.join('/');
    if (this.files.has(key) || this.directories.has(key)) return this.skipLink(key, 'duplicate entry');
    if (!(await this.parents(pending.path))) return this.skipLink(key, 'parent is not a directory');
    const exists = await lstat(join(this.target, key)).catch(() => undefined);
    if (exists) return this.skipLink(key, 'duplicate entry');
    await symlink(pending.linkname, join(this.target, key));
    this.files.add(key);
    this.summary.symlinks += 1;
  }

  /**
   * A link is kept only if its target, walked from the link's directory, stays inside the copied
   * tree and every directory it passes through is a real directory we extracted (a `..` after
   * another link would resolve differently from what a lexical check sees).
   */
  private resolveSymlink(path: string[], linkname: string): { target: string } | { reason: string } {
    const reason = (text: string) => ({ reason: text });
    if (linkname.length === 0 || linkname.includes('\0'))
      return reason('symlink with an empty or invalid target');
    if (linkname.startsWith('/')) return reason('symlink points outside the copied tree (absolute target)');
    const stack = path.slice(0, -1);
    const steps = linkname.split('/').filter((step) => step !== '' && step !== '.');
    for (const [index, step] of steps.entries()) {
      if (step === '..') {
        if (stack.length <= 1) return reason('symlink points outside the copied tree');
        stack.pop();
        continue;
      }
      stack.push(step);
      const last = index === steps.length - 1;
      if (!last && !this.directories.has(stack.join('/'))) {
        return reason('symlink target passes through something that is not a copied directory');
      }
    }
    if (stack.length === 0) return reason('symlink points outside the copied tree');
    return { target: stack.join('/') };
  }

  private skipLink(path: string, reason: string): void {
    if (this.summary.skipped.length < MAX_SKIPPED) this.summary.skipped.push({ path, reason });
  }
}

/**
 * The mode a copied file or directory gets: setuid/setgid/sticky never survive the copy, nor group
 * or world write (other host users must not be able to change what came out of the box).
 */
export function safeMode(mode: number): number {
  return mode & 0o755;
}

/**
 * Splits a tar name into components; a reason when it is absolute, has `..`, a NUL or a backslash
 * (a separator to Windows path functions, so `a\\..\\..\\x` would climb out there).
 */
export function entryParts(name: string): { path: string[]; reason?: string } {
  if (name.includes('\0')) return { path: [], reason: 'name contains NUL' };
  if (name.includes('\\')) return { path: [], reason: 'name contains a backslash' };
  if (name.startsWith('/')) return { path: [], reason: 'absolute path' };
  const path = name.split('/').filter((part) => part !== '' && part !== '.');
  if (path.includes('..')) return { path: [], reason: "name contains '..'" };
  return { path };
}
