import { constants } from 'node:fs';
import { chmod, link, lstat, mkdir, open, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { hasControlCharacter } from '@ca-sandbox/docker/contracts';
import type { GitMode } from '@ca-sandbox/docker/process';
import tar from 'tar-stream';
import { autorunReason, GITATTRIBUTES, gitattributesReason } from './autorun.js';
import { depsLinkFolder } from './deps-target.js';
import { CpOutLimitError, CpOutStreamError } from './errors.js';
import { foldName, isDotGit, looksLikeGitDir, sanitizeGitDir } from './git-guard.js';
import { STAGING_PREFIX } from './staging.js';
import { otherVcsReason } from './vcs-metadata.js';

export interface ExtractLimits {
  /** Bytes of file content written. */
  maxBytes: number;
  /** Entries read from the stream, skipped ones included. */
  maxEntries: number;
}

export interface ExtractPolicy {
  /** What becomes of git directories and `.git` files; see GitMode. Default `withhold`. */
  git?: GitMode;
}

export interface PathNote {
  path: string;
  reason: string;
}

export interface ExtractSummary {
  files: number;
  directories: number;
  symlinks: number;
  bytes: number;
  /** Entries not written, with the reason. */
  skipped: PathNote[];
  /** Entries written that a host tool may run by itself (see autorun.ts). */
  warnings: PathNote[];
}

const MAX_NOTES = 1000;
/** Largest `.gitattributes` read to look for driver attributes. */
const MAX_ATTRIBUTES_BYTES = 1024 * 1024;
const GIT_DIR_WITHHELD = 'git directory withheld: git would run its hooks and config on the host';
const GIT_FILE_WITHHELD = '.git file withheld: git would follow it to a git directory';
const BARE_DIR_WITHHELD =
  'withheld: git would open this directory as a repository (HEAD, objects, refs) and run its config';

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
 * - caps on bytes and entries throw CpOutLimitError (the caller deletes `target`);
 * - names with control characters or bidi controls are skipped (a file name that is a terminal
 *   escape acts when `find` or a shell lists it), and so are links whose target has one;
 * - the metadata of other VCS tools (`.hg`, `.jj`, `_darcs`...) is withheld (vcs-metadata.ts);
 * - nothing git would execute: `.git` files and links are withheld, and so are git directories
 *   (`.git` ones in-stream, and any directory git would open as a repository once the tree is
 *   known), unless `policy.git` is `sanitized`, which rebuilds them (sanitizeGitDir);
 * - entries a host tool may run by itself are listed in `warnings`.
 */
export async function extractTar(
  input: Readable,
  target: string,
  top: string,
  limits: ExtractLimits,
  policy: ExtractPolicy = {},
): Promise<ExtractSummary> {
  const state = new ExtractState(target, top, limits, policy.git ?? 'withhold');
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
  readonly summary: ExtractSummary = {
    files: 0,
    directories: 0,
    symlinks: 0,
    bytes: 0,
    skipped: [],
    warnings: [],
  };
  private readonly directories = new Map<string, number>();
  private readonly files = new Set<string>();
  private readonly links: PendingLink[] = [];
  /** Folded child names of each directory key, links included (for looksLikeGitDir). */
  private readonly children = new Map<string, Set<string>>();
  /** `.git` and other VCS metadata entries withheld in-stream, each reported once. */
  private readonly withheld = new Set<string>();
  /** Git directories withheld or sanitised once the tree is known; nothing may link into them. */
  private gitRoots: string[] = [];

  constructor(
    private readonly target: string,
    private readonly top: string,
    private readonly limits: ExtractLimits,
    private readonly git: GitMode,
  ) {}

  async add(entry: TarEntry): Promise<void> {
    const header = entry.header;
    const parts = entryParts(header.name);
    const reason = parts.reason ?? this.outsideTop(parts.path);
    // A directory's name ends with a slash in the stream; reported as the path it is.
    if (reason) return this.skip(entry, header.name.replace(/\/+$/, ''), reason);
    const path = parts.path;
    if (this.withholdOtherVcsEntry(path) || this.withholdGitEntry(path, header.type === 'directory')) {
      entry.resume();
      return;
    }
    this.noteChild(path);
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
        if (header.devmajor === 0 && header.devminor === 0 && this.removedDependency(header.name)) {
          entry.resume();
          return;
        }
        return this.skip(entry, header.name, 'device');
      case 'block-device':
        return this.skip(entry, header.name, 'device');
      default:
        return this.skip(entry, header.name, `unsupported entry type ${String(header.type)}`);
    }
  }

  /** Whiteouts (a repo view's files of the install the box removed), by folder. */
  private readonly removedDeps = new Map<string, number>();

  /**
   * A character device 0:0 is how a box's repo view records a file of the install layer the box
   * removed (an overlay whiteout in the sandbox's volume; no box can make a device itself: it has
   * no CAP_MKNOD): counted per node_modules folder (else per folder), one note each, not a warning
   * per file. A name with a control character stays a skipped device of its own.
   */
  private removedDependency(name: string): boolean {
    if (hasControlCharacter(name)) return false;
    const parts = name.replace(/\/+$/, '').split('/');
    const at = parts.lastIndexOf('node_modules');
    const folder =
      at >= 0 ? parts.slice(0, at + 1).join('/') : parts.slice(0, -1).join('/') || parts[0] || '';
    this.removedDeps.set(folder, (this.removedDeps.get(folder) ?? 0) + 1);
    return true;
  }

  async finish(): Promise<void> {
    for (const [folder, count] of this.removedDeps)
      this.note(
        this.summary.skipped,
        folder,
        `${count} path(s) of the dependency install removed in the box (overlay whiteouts: a file or a whole folder each), not copied`,
      );
    await this.guardGitDirectories();
    for (const pending of this.links) if (pending.kind === 'hardlink') await this.hardlink(pending);
    for (const pending of this.keptSymlinks()) await this.symlink(pending);
    await this.collectWarnings();
    // Deepest first, so a read-only parent does not block its children's chmod. A sanitised git
    // directory's insides already have their modes.
    const dirs = [...this.directories.entries()]
      .filter(([key]) => !this.underGitRoot(key, false))
      .sort((a, b) => b[0].length - a[0].length);
    for (const [key, mode] of dirs) await chmod(join(this.target, key), safeMode(mode) | 0o700);
  }

  /** In-stream: everything in or under another VCS tool's metadata (see vcs-metadata.ts). */
  private withholdOtherVcsEntry(path: string[]): boolean {
    const at = path.findIndex((part) => otherVcsReason(part) !== undefined);
    if (at < 0) return false;
    const key = path.slice(0, at + 1).join('/');
    if (!this.withheld.has(key)) {
      this.withheld.add(key);
      this.note(this.summary.skipped, key, otherVcsReason(path[at] ?? '') ?? '');
    }
    return true;
  }

  /**
   * In-stream: a `.git` entry that is not a directory is always withheld (a gitdir pointer or a
   * link would lead git elsewhere); under `withhold`, everything in or under a `.git` directory
   * too. Reported once per `.git` entry.
   */
  private withholdGitEntry(path: string[], isDirectory: boolean): boolean {
    const at = path.findIndex(isDotGit);
    if (at < 0) return false;
    const last = at === path.length - 1;
    if (this.git === 'sanitized' && !(last && !isDirectory)) return false;
    const key = path.slice(0, at + 1).join('/');
    if (!this.withheld.has(key)) {
      this.withheld.add(key);
      this.note(this.summary.skipped, key, last && !isDirectory ? GIT_FILE_WITHHELD : GIT_DIR_WITHHELD);
    }
    return true;
  }

  private noteChild(path: string[]): void {
    for (let depth = 1; depth <= path.length; depth += 1) {
      const parent = path.slice(0, depth - 1).join('/');
      let names = this.children.get(parent);
      if (!names) {
        names = new Set();
        this.children.set(parent, names);
      }
      names.add(foldName(path[depth - 1] ?? ''));
    }
  }

  /**
   * Once the whole tree is known: every directory git would open as a repository (and, under
   * `sanitized`, every `.git` directory) is withheld or rebuilt, outermost first.
   */
  private async guardGitDirectories(): Promise<void> {
    const candidates = [...this.directories.keys()]
      .filter((key) => {
        const name = key.slice(key.lastIndexOf('/') + 1);
        return (this.git === 'sanitized' && isDotGit(name)) || looksLikeGitDir(this.children.get(key));
      })
      .sort((a, b) => a.length - b.length);
    for (const key of candidates) {
      if (this.underGitRoot(key, true)) continue;
      this.gitRoots.push(key);
      const absolute = join(this.target, key);
      if (this.git === 'withhold') {
        await rm(absolute, { recursive: true, force: true });
        this.note(this.summary.skipped, key, BARE_DIR_WITHHELD);
      } else {
        const name = key.slice(key.lastIndexOf('/') + 1);
        const dropped = await sanitizeGitDir(absolute, !isDotGit(name));
        for (const path of dropped) {
          const reason =
            path === 'config'
              ? "the box's config withheld; a minimal one written by ca-sandbox"
              : 'not kept in a sanitised git directory';
          this.note(this.summary.skipped, `${key}/${path}`, reason);
        }
      }
      this.forgetUnder(key, this.git === 'withhold');
    }
  }

  /** Drops the bookkeeping of what is under `root` (and `root` itself when it was removed). */
  private forgetUnder(root: string, removed: boolean): void {
    const under = (key: string) => key.startsWith(`${root}/`) || (removed && key === root);
    for (const key of [...this.directories.keys()]) if (under(key)) this.directories.delete(key);
    for (const key of [...this.files]) if (under(key)) this.files.delete(key);
    const kept = this.links.filter((pending) => {
      const key = pending.path.join('/');
      if (!under(key)) return true;
      if (this.git === 'sanitized') this.skipLink(key, 'links are not kept in a sanitised git directory');
      return false;
    });
    this.links.splice(0, this.links.length, ...kept);
  }

  /** Whether `key` is inside (or, with `orSelf`, is) a git root handled by guardGitDirectories. */
  private underGitRoot(key: string, orSelf: boolean): boolean {
    return this.gitRoots.some((root) => key.startsWith(`${root}/`) || (orSelf && key === root));
  }

  private async collectWarnings(): Promise<void> {
    const entries: [string, boolean][] = [
      ...[...this.directories.keys()].map((key): [string, boolean] => [key, true]),
      ...[...this.files].map((key): [string, boolean] => [key, false]),
    ].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    for (const [key, isDirectory] of entries) {
      const path = key.split('/');
      const reason =
        !isDirectory && foldName(path.at(-1) ?? '') === GITATTRIBUTES
          ? await this.attributesReason(key)
          : autorunReason(path, isDirectory);
      if (reason) this.note(this.summary.warnings, key, reason);
    }
  }

  /** A `.gitattributes` is reported when it names drivers; one that is a link, always. */
  private async attributesReason(key: string): Promise<string | undefined> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(join(this.target, key), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch {
      return gitattributesReason('filter=?');
    }
    try {
      const buffer = Buffer.alloc(MAX_ATTRIBUTES_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_ATTRIBUTES_BYTES, 0);
      return gitattributesReason(buffer.subarray(0, bytesRead).toString('utf8'));
    } finally {
      await handle.close();
    }
  }

  private note(list: PathNote[], path: string, reason: string): void {
    if (list.length < MAX_NOTES) list.push({ path: path.slice(0, 4096), reason });
    else if (list.length === MAX_NOTES) list.push({ path: '…', reason: 'more entries (list truncated)' });
  }

  private outsideTop(path: string[]): string | undefined {
    if (path.length === 0) return 'empty name';
    return path[0] === this.top ? undefined : 'outside the copied path';
  }

  private async skip(entry: TarEntry, path: string, reason: string): Promise<void> {
    entry.resume();
    this.note(this.summary.skipped, path, reason);
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
    if (this.underGitRoot(sourceKey, true)) return this.skipLink(key, 'hardlink into a git directory');
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
    // Links into the box's installed deps skipped, by node_modules folder.
    const depsLinks = new Map<string, number>();
    for (const pending of this.links) {
      if (pending.kind !== 'symlink') continue;
      const key = pending.path.join('/');
      const resolved =
        pending.path.length < 2
          ? { reason: 'the copied path itself is a symlink' }
          : this.resolveSymlink(pending.path, pending.linkname);
      if ('reason' in resolved) {
        rejected.add(key);
        // node_modules links into the box's installed deps (hundreds in any Node repo): one note
        // per node_modules folder, not one per link.
        const folder = hasControlCharacter(pending.linkname)
          ? undefined
          : depsLinkFolder(key, pending.linkname);
        if (folder) depsLinks.set(folder, (depsLinks.get(folder) ?? 0) + 1);
        else this.skipLink(key, resolved.reason);
      } else kept.set(key, { pending, target: resolved.target });
    }
    for (const [folder, count] of depsLinks)
      this.skipLink(
        folder,
        `${count} link(s) into the box's installed dependencies, not copied: the deps stay in the box (install them on the host)`,
      );
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
    if (linkname.length === 0 || hasControlCharacter(linkname))
      return reason('symlink with an empty target or one with a control character');
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
    const target = stack.join('/');
    if (this.underGitRoot(target, true)) return reason('symlink into a git directory');
    return { target };
  }

  private skipLink(path: string, reason: string): void {
    this.note(this.summary.skipped, path, reason);
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
  // On the host such a name acts when listed: `find`, a shell's completion or a script's echo
  // prints it raw, and ESC ] 52 writes the clipboard, ESC [ 2 J clears the screen.
  if (hasControlCharacter(name))
    return { path: [], reason: 'name contains a control character or a bidi control' };
  if (name.includes('\\')) return { path: [], reason: 'name contains a backslash' };
  if (name.startsWith('/')) return { path: [], reason: 'absolute path' };
  const path = name.split('/').filter((part) => part !== '' && part !== '.');
  if (path.includes('..')) return { path: [], reason: "name contains '..'" };
  // A later copy-out removes folders of this name beside its target when they look abandoned:
  // the box must not be able to make one on the host (it would be deleted as ours).
  if (path.some((part) => part.startsWith(STAGING_PREFIX)))
    return { path: [], reason: `named like a copy-out staging folder (${STAGING_PREFIX}*)` };
  return { path };
}
