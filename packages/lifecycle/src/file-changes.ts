import { RAW_REPO_DIR, REPO_DIR } from '@ca-sandbox/docker/contracts';
import { autorunReason, GITATTRIBUTES } from './autorun.js';
import { isDepsTarget } from './deps-target.js';
import {
  type EntryType,
  IMAGE_UPPER_START,
  IMAGE_VIEW_PREFIX,
  type ListedEntry,
  type ListedRoot,
  type Listing,
  ListingReader,
} from './listing-format.js';

/**
 * What changed in a box's files (issue 29's "what changed"): a listing of /work/repo taken in the
 * helper right after the checkout (nothing of the repo has run yet) is the baseline; the report
 * lists /work/repo and /tmp in the box and compares (listing-format.ts reads both).
 *
 * A change is seen by the inode's ctime, which a process cannot set (only the kernel's clock
 * does): restoring a file's size and mtime after rewriting it still shows. Directories compare by
 * type and mode only (their times change with every entry added under them).
 */

/** One entry as the report shows it. */
export interface ChangedFile {
  /** Absolute path in the box (UTF-8; bytes that are not become U+FFFD). */
  path: string;
  type: EntryType;
  /** Octal permission bits, e.g. '755', '4755'. */
  mode: string;
  size: number;
  /** A symlink's target. */
  target?: string;
  /** For a modified entry: what differs (content, mode, type, target). */
  changed?: string[];
  /** Why a host tool or git may run it once copied out (autorun.ts, .git/hooks, .git/config). */
  runs?: string;
  /**
   * A folder that stands for everything under it (more than FOLDER_ROWS entries, all added or all
   * deleted with it): what it holds that this list does not have as rows. What matters most inside
   * is listed all the same: an entry git or a host tool runs as a row of this list (and not
   * counted here), setuid files and new executables in their own lists.
   */
  contents?: FolderContents;
}

export interface FolderContents {
  files: number;
  directories: number;
  symlinks: number;
  other: number;
  /** Bytes of the regular files. */
  bytes: number;
}

/**
 * A new (or deleted) folder holding more entries than this is one row with its contents counted:
 * a cache or a build output of 100,000 files is one line to read, and the report stays small.
 * A smaller one is listed entry by entry. `allFiles` lists every entry.
 */
export const FOLDER_ROWS = 100;

export interface CompareOptions {
  /** List every entry, even under a folder of thousands (the report then grows with them). */
  allFiles?: boolean;
  /**
   * The box has a repo view (@ca-sandbox/docker repo-view): what its volume holds under a
   * node_modules folder that the clone did not have there is what the box wrote into its
   * installed deps (a file copied up, a whiteout for one removed), reported with inImage; the
   * folders are there for what they hold.
   */
  repoView?: boolean;
}

/** A symlink target that leaves the folder it is in: absolute, or with a `..` part. */
function pointsOut(target: string): boolean {
  return target.startsWith('/') || target.split('/').includes('..');
}

/**
 * A modified entry that stays a row even in a folded folder (red team): what it is or points at
 * changed (a file become a link or a fifo, a link retargeted), or its mode changed in a way a
 * host tool may trust (anything made writable by others, or a non-file's mode).
 */
function structuralChange(row: ChangedFile): boolean {
  const { changed } = row;
  if (!changed) return false;
  if (changed.includes('type') || changed.includes('target')) return true;
  return (
    changed.includes('mode') && ((Number.parseInt(row.mode, 8) & WORLD_WRITABLE) !== 0 || row.type !== 'file')
  );
}
const WORLD_WRITABLE = 0o002;

/**
 * A row a folded folder lists all the same: what git or a host tool runs, a link out of the folder
 * (absolute, or climbing with ..: it says where it points), a structural change.
 */
function notable(row: ChangedFile): boolean {
  return (
    Boolean(row.runs) || (row.type === 'symlink' && pointsOut(row.target ?? '')) || structuralChange(row)
  );
}

/**
 * The rows of one folder added or deleted as a whole, as its entries come (find lists a folder
 * before what it holds, so they come together): held until they pass FOLDER_ROWS, then counted.
 * With `inside` (a folder of the clone whose entries were modified), the folder itself is no row
 * of its own until it stands for the entries it counts.
 */
class FolderGroup {
  /** The entries under the folder, while they are few; null once the folder is summarised. */
  private rows: ChangedFile[] | null = [];
  /** Entries under a summarised folder that are listed all the same (a `runs` reason). */
  private readonly notable: ChangedFile[] = [];
  private readonly contents: FolderContents = { files: 0, directories: 0, symlinks: 0, other: 0, bytes: 0 };
  private readonly prefix: string;

  constructor(
    readonly root: ListedRoot,
    key: string,
    private readonly folder: ChangedFile,
    private readonly limit: number,
    private readonly inside = false,
  ) {
    this.prefix = `${key}/`;
  }

  /** Every `changed` of the entries it counts (a modified folder's row says them all). */
  private readonly changedKinds = new Set<string>();

  holds(root: ListedRoot, key: string): boolean {
    return root === this.root && key.startsWith(this.prefix);
  }

  add(entry: ListedEntry, row: () => ChangedFile, changed?: readonly string[]): void {
    // The row is made only when it may be notable: a folder of 100,000 plain files makes none.
    const maybe =
      runsReason(entry) !== undefined ||
      entry.type === 'symlink' ||
      changed?.some((kind) => kind !== 'content') === true;
    const kept = maybe && notable(row());
    // The folder's row says what changed in the entries it counts, not in the ones it lists.
    if (changed && !kept) for (const kind of changed) this.changedKinds.add(kind);
    const { contents } = this;
    if (entry.type === 'file') {
      contents.files += 1;
      contents.bytes += entry.size;
    } else if (entry.type === 'directory') contents.directories += 1;
    else if (entry.type === 'symlink') contents.symlinks += 1;
    else contents.other += 1;
    if (this.rows && this.rows.length < this.limit) {
      this.rows.push(row());
      return;
    }
    if (this.rows) {
      for (const held of this.rows) if (notable(held)) this.notable.push(held);
      this.rows = null;
    }
    if (kept) this.notable.push(row());
  }

  /**
   * The rows it ends as: the folder and its entries, or the folder with its contents and the
   * notable ones (which its contents then leave out: each entry is counted once).
   */
  close(into: ChangedFile[]): void {
    if (this.rows) {
      if (this.inside) into.push(...this.rows);
      else into.push(this.folder, ...this.rows);
      return;
    }
    const { contents } = this;
    for (const row of this.notable) {
      if (row.type === 'file') {
        contents.files -= 1;
        contents.bytes -= row.size;
      } else if (row.type === 'directory') contents.directories -= 1;
      else if (row.type === 'symlink') contents.symlinks -= 1;
      else contents.other -= 1;
    }
    const changed = this.inside ? { changed: [...this.changedKinds].sort() } : {};
    into.push({ ...this.folder, ...changed, contents }, ...this.notable);
  }
}

export interface FileChanges {
  /** /work/repo against the listing taken at the clone. */
  added: ChangedFile[];
  modified: ChangedFile[];
  deleted: ChangedFile[];
  /** Entries the deps link made at create (node_modules directories and their links into /deps). */
  depsLinks: number;
  /** Everything under the box's /tmp (its HOME: caches too) and /dev/shm, ca-sandbox's own trust bundles left out. */
  outsideRepo: ChangedFile[];
  /**
   * What the box wrote in its writable view of its image, or in its installed deps through its
   * repo view (a dependency's file written or rewritten; `changed: ['removed']` for one removed),
   * by the path the box sees it at. The deps as installed are in the image, which the box never
   * writes.
   */
  inImage: ChangedFile[];
  /** Files with the setuid or setgid bit, in /work/repo or /tmp. */
  setuid: ChangedFile[];
  /** Regular files that are executable and were not at the clone (added, or their x bit set since). */
  newExecutables: ChangedFile[];
}

const SPECIAL_BITS = 0o6000;
const EXEC_BITS = 0o111;

/** Paths under /tmp that ca-sandbox writes as root at each start (box-env.ts): not the box's. */
const OWN_TMP = ['.ca-sandbox-trust'];

const ASCII = /^[\x20-\x7e]*$/;

/** Each root's path with its slash: a row's path is this and the entry's key (one string made, not two). */
const ROOT_PREFIX: Record<ListedRoot, string> = {
  repo: `${REPO_DIR}/`,
  tmp: '/tmp/',
  shm: '/dev/shm/',
  image: IMAGE_VIEW_PREFIX,
};

/** overlayfs marks a file the box removed from its image with a whiteout: a 0/0 character device. */
const WHITEOUT_HEADER = `${IMAGE_UPPER_START} c 0 0 `;
/** A whiteout in a repo view's volume, listed by the frozen lister or in the box itself. */
const REPO_WHITEOUTS = [`${REPO_DIR} c 0 0 `, `${RAW_REPO_DIR} c 0 0 `];
const REMOVED = ['removed'] as const;

function display(entry: ListedEntry): string {
  // latin1 of ASCII bytes is already their UTF-8 reading: most names skip the decode.
  const path = ASCII.test(entry.key) ? entry.key : Buffer.from(entry.key, 'latin1').toString('utf8');
  return ROOT_PREFIX[entry.root] + path;
}

/** The octal text of a mode, made once per mode (a listing holds a handful of them). */
const MODE_TEXT = new Map<number, string>();
function modeText(mode: number): string {
  let text = MODE_TEXT.get(mode);
  if (text === undefined) {
    text = mode.toString(8);
    MODE_TEXT.set(mode, text);
  }
  return text;
}

/**
 * One row. Made by one of two literals of a fixed shape (a modified row has `changed` from the
 * start), the rarer fields added after: 100,000 rows are about 100 bytes each, not 150.
 */
export function describe(entry: ListedEntry, changed?: readonly string[]): ChangedFile {
  const file: ChangedFile = changed
    ? {
        path: display(entry),
        type: entry.type,
        mode: modeText(entry.mode),
        size: entry.size,
        changed: changed as string[],
      }
    : { path: display(entry), type: entry.type, mode: modeText(entry.mode), size: entry.size };
  if (entry.type === 'symlink') file.target = Buffer.from(entry.target, 'latin1').toString('utf8');
  const runs = runsReason(entry);
  if (runs) file.runs = runs;
  return file;
}

/** Why git or a host tool would run this entry once the repo is copied out, or undefined. */
export function runsReason(entry: ListedEntry): string | undefined {
  if (entry.root !== 'repo') return undefined;
  // Every name a rule knows (.git, .envrc, tasks.json, .husky...) holds a dot, and case folding
  // never makes one: a path without one needs no look (most of a build output's).
  if (!entry.key.includes('.')) return undefined;
  const path = ASCII.test(entry.key) ? entry.key : Buffer.from(entry.key, 'latin1').toString('utf8');
  const parts = path.split('/');
  const gitAt = parts.indexOf('.git');
  if (gitAt >= 0) {
    const inGit = parts.slice(gitAt + 1);
    // git's own samples (*.sample) are never run.
    if (inGit[0] === 'hooks' && inGit.length > 1 && !inGit.at(-1)?.endsWith('.sample'))
      return 'a git hook: git runs it on commit, checkout or merge';
    if (inGit.length === 1 && inGit[0] === 'config')
      return 'git config: core.fsmonitor, hooksPath, filters and aliases in it run commands';
    return undefined;
  }
  // Its content is not at hand here: by its name (the clone's are checked by content, cloneFacts).
  if (parts.at(-1) === GITATTRIBUTES && entry.type === 'file') return GITATTRIBUTES_REASON;
  return autorunReason(parts, entry.type === 'directory');
}

const GITATTRIBUTES_REASON =
  'may select git filter, diff or merge drivers (git runs them from your own git config, e.g. git-lfs)';

/**
 * True for what the deps link makes (deps-link.ts): node_modules folders and their links into
 * /deps. The early box links beside the clone's listing, so either listing may hold them: they are
 * counted, never listed. Anything else under node_modules (a real file, a link elsewhere) is.
 */
export function isDepsLink(entry: ListedEntry): boolean {
  if (entry.root !== 'repo' || !entry.key.includes('node_modules')) return false;
  const parts = entry.key.split('/');
  if (!parts.includes('node_modules')) return false;
  // Only a plain absolute target under /deps, or /deps in the box's view of its image.
  if (entry.type === 'symlink') return isDepsTarget(entry.target);
  if (entry.type !== 'directory') return false;
  // The node_modules folder itself, and the `.bin` and `@scope` folders the link makes real in it
  // (so tools can add to them): what is inside them is listed unless it is a link of the kind above.
  const name = parts.at(-1) ?? '';
  return (
    name === 'node_modules' || (parts.at(-2) === 'node_modules' && (name === '.bin' || name.startsWith('@')))
  );
}

/** The few `changed` lists there are, one array each (shared by the rows: never mutated). */
const CHANGED_SETS = new Map<string, string[]>();

function contentChanged(before: ListedEntry, now: ListedEntry): string[] {
  const changed = whatChanged(before, now);
  const name = changed.join(',');
  const shared = CHANGED_SETS.get(name);
  if (shared) return shared;
  CHANGED_SETS.set(name, changed);
  return changed;
}

function whatChanged(before: ListedEntry, now: ListedEntry): string[] {
  const changed: string[] = [];
  if (before.type !== now.type) return ['type'];
  if (before.mode !== now.mode) changed.push('mode');
  if (now.type === 'symlink' && before.target !== now.target) changed.push('target');
  if (
    now.type !== 'directory' &&
    (before.size !== now.size || before.mtime !== now.mtime || before.ctime !== now.ctime)
  ) {
    // A chmod alone changes the ctime too: that is a mode change, not a content one.
    const modeOnly = changed.includes('mode') && before.size === now.size && before.mtime === now.mtime;
    if (!modeOnly && !changed.includes('target')) changed.push('content');
  }
  return changed;
}

/**
 * Compares the box's listing, fed as it comes (`push`), with the clone's: only what changed is
 * kept. `finish` adds what was deleted; `malformed` counts records of the box's listing that could
 * not be read (it was cut).
 */
/** No change at all: the lists a comparison starts from. */
export function noChanges(): FileChanges {
  return {
    added: [],
    modified: [],
    deleted: [],
    depsLinks: 0,
    outsideRepo: [],
    inImage: [],
    setuid: [],
    newExecutables: [],
  };
}

export class ChangeCollector {
  private readonly changes = noChanges();
  private readonly removedInImage = new Set<string>();
  private reader = new ListingReader((entry) => this.see(entry));
  private malformed = 0;
  /** The new folder whose entries are coming (added in /work/repo, or anything in /tmp, /dev/shm). */
  private group: { folder: FolderGroup; into: ChangedFile[] } | undefined;
  private readonly limit: number;
  /**
   * The folders of /work/repo on the way to the entry being compared (find lists a folder before
   * what it holds): the one a modified entry is in gives its folder row.
   */
  private readonly folders: ListedEntry[] = [];
  /**
   * The modified entries of each folder, by the folder's key: a folder with more than
   * FOLDER_ROWS of them (tests that rewrite every file of a fixture tree) is one row with their
   * count, as a new folder is. Only a few rows per folder are ever held.
   */
  private readonly modifiedIn = new Map<string, FolderGroup>();

  /**
   * `baseline` is consumed: each of its entries seen again is taken out of it, so what is left at
   * the end was deleted (and nothing is held twice).
   */
  constructor(
    private readonly baseline: Listing,
    options: CompareOptions = {},
  ) {
    this.limit = options.allFiles ? Number.POSITIVE_INFINITY : FOLDER_ROWS;
    if (options.repoView) {
      this.projects = new Set();
      for (const entry of baseline.entries.values())
        if (entry.root === 'repo' && entry.type === 'file' && /(^|\/)package\.json$/.test(entry.key))
          this.projects.add(entry.key.slice(0, -'package.json'.length).replace(/\/$/, ''));
    }
  }

  /**
   * With a repo view: the folders with a package.json at the clone (where the install made a
   * node_modules). Only under one of their node_modules is a new file the box's write in its
   * installed deps; a node_modules anywhere else is the box's own, added as any folder.
   */
  private readonly projects: Set<string> | undefined;

  /** With a repo view: whether `key` is, or lies in, a node_modules the install made. */
  private inInstalledDeps(key: string): boolean {
    if (!this.projects) return false;
    const parts = key.split('/');
    const at = parts.indexOf('node_modules');
    return at >= 0 && this.projects.has(parts.slice(0, at).join('/'));
  }

  push(chunk: Buffer): void {
    this.reader.push(chunk);
  }

  /** The next listing of the box begins (the box's tmpfs after its volume): a record cut before is counted. */
  nextListing(): void {
    this.malformed += this.reader.end().malformed;
    this.reader = new ListingReader((entry) => this.see(entry));
  }

  finish(): FileChanges & { malformed: number } {
    const malformed = this.malformed + this.reader.end().malformed;
    this.closeGroup();
    const { changes } = this;
    for (const folder of this.modifiedIn.values()) folder.close(changes.modified);
    this.modifiedIn.clear();
    // The clone's entries in its listing's order: a deleted folder comes before what it held.
    let deleted: FolderGroup | undefined;
    for (const entry of this.baseline.entries.values()) {
      if (entry.root !== 'repo' || isDepsLink(entry)) continue;
      if (deleted?.holds(entry.root, entry.key)) {
        deleted.add(entry, () => describe(entry));
        continue;
      }
      deleted?.close(changes.deleted);
      deleted = undefined;
      if (entry.type === 'directory')
        deleted = new FolderGroup('repo', entry.key, describe(entry), this.limit);
      else changes.deleted.push(describe(entry));
    }
    deleted?.close(changes.deleted);
    const byPath = (a: ChangedFile, b: ChangedFile) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    for (const list of [
      changes.added,
      changes.modified,
      changes.deleted,
      changes.outsideRepo,
      changes.inImage,
      changes.setuid,
      changes.newExecutables,
    ])
      list.sort(byPath);
    return { ...changes, malformed };
  }

  /** A new entry: into the folder group it is under, or its own row (a new folder opens a group). */
  private addNew(entry: ListedEntry, into: ChangedFile[], row: () => ChangedFile): void {
    if (this.group) {
      this.group.folder.add(entry, row);
      return;
    }
    if (entry.type === 'directory')
      this.group = { folder: new FolderGroup(entry.root, entry.key, row(), this.limit), into };
    else into.push(row());
  }

  private closeGroup(): void {
    this.group?.folder.close(this.group.into);
    this.group = undefined;
  }

  private see(entry: ListedEntry): void {
    const { changes } = this;
    // One described object per entry, shared by the lists it is in.
    let described: ChangedFile | undefined;
    const once = (changed?: readonly string[]) => {
      described ??= describe(entry, changed);
      return described;
    };
    const executable = entry.type === 'file' && (entry.mode & EXEC_BITS) !== 0;
    if ((entry.mode & SPECIAL_BITS) !== 0) changes.setuid.push(once());
    if (this.group && !this.group.folder.holds(entry.root, entry.key)) this.closeGroup();
    if (entry.root === 'image') {
      // Folders are there for what they hold (overlayfs copies each parent up): files are the news.
      if (entry.type === 'directory') return;
      if (entry.header.startsWith(WHITEOUT_HEADER)) {
        // A whiteout, or a name the image has and the view lost (the folder compare): once each.
        if (this.removedInImage.has(entry.key)) return;
        this.removedInImage.add(entry.key);
        changes.inImage.push(describe(entry, REMOVED));
        return;
      }
      if (executable) changes.newExecutables.push(once());
      changes.inImage.push(once());
      return;
    }
    if (entry.root !== 'repo') {
      if (entry.root === 'tmp' && OWN_TMP.some((own) => entry.key === own || entry.key.startsWith(`${own}/`)))
        return;
      if (executable) changes.newExecutables.push(once());
      this.addNew(entry, changes.outsideRepo, once);
      return;
    }
    const before = this.baseline.entries.take(entry);
    this.enter(entry);
    if (before === 'same') return;
    if (this.projects && REPO_WHITEOUTS.some((header) => entry.header.startsWith(header))) {
      // A whiteout of the repo view: a file of the install layer the box removed. One the clone
      // had (a manifest the install rewrote) is deleted; one only the install had, removed there.
      if (before) changes.deleted.push(describe(before));
      else changes.inImage.push(describe(entry, REMOVED));
      return;
    }
    if (!before && this.inInstalledDeps(entry.key)) {
      // Written into the installed deps through the repo view: files are the news, once each.
      if (entry.type === 'directory') return;
      if (executable) changes.newExecutables.push(once());
      changes.inImage.push(once());
      return;
    }
    if (isDepsLink(entry) && (!before || isDepsLink(before))) {
      if (!before) {
        changes.depsLinks += 1;
        return;
      }
      // One of the link's folders that was there already: what the box added to it is not news, a
      // structural change of it is (`chmod 777 node_modules/.bin`). A link of it pointed elsewhere
      // in the deps is still the link's (an early box links beside the clone's listing).
      if (entry.type === 'symlink') return;
      const changed = contentChanged(before, entry);
      if (changed.length === 0 || !structuralChange(describe(entry, changed))) return;
    }
    if (!before) {
      if (executable) changes.newExecutables.push(once());
      this.addNew(entry, changes.added, once);
      return;
    }
    const changed = contentChanged(before, entry);
    if (changed.length === 0) return;
    // A setuid entry already described: the change is said on the same object.
    if (described) described.changed = changed;
    this.modifiedFolder(entry).add(entry, () => once(changed), changed);
    if (executable && (before.type !== 'file' || (before.mode & EXEC_BITS) === 0))
      changes.newExecutables.push(once());
  }

  /** Keeps `folders` the path down to `entry` (a folder of /work/repo is pushed when it comes). */
  private enter(entry: ListedEntry): void {
    const { folders } = this;
    while (folders.length > 0 && !entry.key.startsWith(`${folders.at(-1)?.key}/`)) folders.pop();
    if (entry.type === 'directory') folders.push(entry);
  }

  /** The group of the folder `entry` is in (the checkout's root holds its own rows only). */
  private modifiedFolder(entry: ListedEntry): FolderGroup {
    const slash = entry.key.lastIndexOf('/');
    const key = slash < 0 ? '' : entry.key.slice(0, slash);
    let group = this.modifiedIn.get(key);
    if (!group) {
      const folder = this.folders.findLast((held) => held.key === key);
      // The root, or a folder the listing did not give first: its entries stay rows.
      const limit = folder ? this.limit : Number.POSITIVE_INFINITY;
      const row: ChangedFile = folder
        ? describe(folder)
        : { path: REPO_DIR, type: 'directory', mode: '', size: 0 };
      group = new FolderGroup('repo', key, row, limit, true);
      this.modifiedIn.set(key, group);
    }
    return group;
  }
}

/** Compares a whole listing's bytes with the clone's (see ChangeCollector). */
export function compareListings(
  baseline: Listing,
  now: Buffer,
  options: CompareOptions = {},
): FileChanges & { malformed: number } {
  const collector = new ChangeCollector(baseline, options);
  collector.push(now);
  return collector.finish();
}
