import { REPO_DIR } from '@ca-sandbox/docker/contracts';
import { autorunReason, GITATTRIBUTES } from './autorun.js';

/**
 * What changed in a box's files (issue 29's "what changed"): a listing of /work/repo taken in the
 * helper right after the checkout (nothing of the repo has run yet) is the baseline; the report
 * lists /work/repo and /tmp in the box and compares. Both listings come from GNU find in a
 * container, never from git and never on the host's files, and are parsed here as hostile data.
 *
 * A change is seen by the inode's ctime, which a process cannot set (only the kernel's clock
 * does): restoring a file's size and mtime after rewriting it still shows. Directories compare by
 * type and mode only (their times change with every entry added under them).
 */

/** Where each listing starts: the checkout and the box's own tmpfs. */
export const LISTED_ROOTS = { repo: REPO_DIR, tmp: '/tmp', shm: '/dev/shm' } as const;
export type ListedRoot = keyof typeof LISTED_ROOTS;

/**
 * One record per entry: a header of find's own fields (no byte of it is the repo's), then the
 * path below its start and the symlink's target, each ended by NUL (the one byte no name holds).
 */
const LISTING_FORMAT = '%H %y %m %s %T@ %C@\\0%P\\0%l\\0';

/**
 * The listing's shell script: `$@` are the roots. With `gated`, it waits for `go` on stdin (the
 * checkout written) and lists nothing otherwise. `find` is the system's (PATH fixed by the
 * internal exec); `-xdev` keeps it on the roots' own file systems.
 */
export function listingScript(
  gated: boolean,
  clone: { commit: boolean; attributes: boolean } = { commit: false, attributes: false },
): string {
  return [
    ...(gated ? ['IFS= read -r word || exit 0', '[ "$word" = go ] || exit 0'] : []),
    ...(clone.commit ? COMMIT_RECORD : []),
    ...(clone.attributes ? [ATTRIBUTES_RECORDS] : []),
    // Only the roots there are (a runtime may have no /dev/shm): a missing one is no problem.
    'for r do shift; [ -d "$r" ] && set -- "$@" "$r"; done',
    `exec find "$@" -xdev -printf '${LISTING_FORMAT}'`,
  ].join('\n');
}

/**
 * The clone's commit and the kind of signature its header carries, as a first record
 * `commit <sha|-> <KIND|->` (nothing verified: no key is at hand). git without any config but the
 * clone's own; its output is reduced to hex and capitals before it is printed.
 */
const COMMIT_RECORD = [
  'root=$1',
  // The clone's own .git, a real folder: never a `.git` file pointing elsewhere.
  'g() { [ -d "$root/.git" ] && [ ! -L "$root/.git" ] || return 1; GIT_DIR="$root/.git" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null /usr/bin/git -C "$root" "$@" 2>/dev/null; }',
  'sha=$(g rev-parse --verify -q "HEAD^{commit}" | tr -cd 0-9a-f | head -c 64)',
  `sig=$(g cat-file commit HEAD | sed -n -e '/^$/q' -e 's/^gpgsig[-a-z0-9]* -----BEGIN \\([A-Z0-9 ]*\\)-----$/\\1/p' | head -n 1 | tr -c 'A-Z0-9\\n' _ | head -c 40)`,
  `printf 'commit %s %s\\0\\0\\0' "\${sha:--}" "\${sig:--}"`,
];

/**
 * One record `attributes <path>` per .gitattributes of the checkout that selects a filter, diff or
 * merge driver (autorun.ts's rule): git runs those drivers from the user's own config once the repo
 * is copied out. Read by grep in the helper (each file at most 64 KiB); the path below `$1`.
 */
const ATTRIBUTES_RECORDS = `find "$1" -xdev -name .gitattributes -type f -size -65k -exec /bin/sh -c 'for f do grep -qE "(^|[[:space:]])(filter|diff|merge)=[^[:space:]]" "$f" && printf "attributes\\0%s\\0\\0" "\${f#"$0"/}"; done' "$1" {} + 2>/dev/null || :`;

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface ListedEntry {
  root: ListedRoot;
  type: EntryType;
  /** Permission bits with setuid, setgid and sticky (find's %m). */
  mode: number;
  size: number;
  /** find's %T@ and %C@, compared as text. */
  mtime: string;
  ctime: string;
  /** The path below its root, in latin1 (one char per byte: distinct names stay distinct). */
  key: string;
  /** The symlink's target (latin1), '' for anything else. */
  target: string;
  /** find's header line the fields above were read from (what a baseline keeps of an entry). */
  header: string;
}

/**
 * A listing's entries, kept small: one string per entry (find's header line, which holds every
 * field but the path) under its path, and symlink targets apart. A checkout of 100,000 files
 * holds 15 MB this way instead of 36 as ListedEntry objects; an entry is read back when asked for.
 */
export class ListingEntries {
  private readonly headers = new Map<string, string>();
  private readonly targets = new Map<string, string>();

  set(entry: ListedEntry): void {
    const key = mapKey(entry.root, entry.key);
    this.headers.set(key, entry.header);
    if (entry.target) this.targets.set(key, entry.target);
  }

  get(root: ListedRoot, key: string): ListedEntry | undefined {
    const mapped = mapKey(root, key);
    const header = this.headers.get(mapped);
    if (header === undefined) return undefined;
    const entry = entryOf(header, key, '');
    if (entry?.type === 'symlink') entry.target = this.targets.get(mapped) ?? '';
    return entry;
  }

  /**
   * Takes the entry at this path out (a comparison consumes its baseline: what is left at the end
   * was deleted): 'same' when `now` has its very header and target (nothing of it changed: no
   * entry is made for it, the common case of a big checkout), else the entry, or undefined.
   */
  take(now: ListedEntry): ListedEntry | 'same' | undefined {
    const mapped = mapKey(now.root, now.key);
    const header = this.headers.get(mapped);
    if (header === undefined) return undefined;
    this.headers.delete(mapped);
    const target = this.targets.get(mapped) ?? '';
    if (target) this.targets.delete(mapped);
    if (header === now.header && target === now.target) return 'same';
    return entryOf(header, now.key, target);
  }

  get size(): number {
    return this.headers.size;
  }

  /** Every entry, in the listing's order (find's: a folder before what it holds). */
  *values(): IterableIterator<ListedEntry> {
    for (const [mapped, header] of this.headers) {
      const at = mapped.indexOf('\0');
      const entry = entryOf(header, at < 0 ? mapped : mapped.slice(at + 1), this.targets.get(mapped) ?? '');
      if (entry) yield entry;
    }
  }
}

/**
 * The key of a path in ListingEntries: /work/repo's paths as they are (most entries: no string
 * made per entry), the other roots' behind their name and a NUL, which no path holds.
 */
function mapKey(root: ListedRoot, key: string): string {
  return root === 'repo' ? key : `${root}\0${key}`;
}

export interface Listing {
  entries: ListingEntries;
  /** The clone's commit record (listingScript's clone.commit): sha or '' , signature kind or ''. */
  commit?: { sha: string; signature: string };
  /** .gitattributes paths (latin1 keys) that select git drivers (listingScript's clone.attributes). */
  drivers?: string[];
  /** Records that could not be read (one a cut listing ends with, or a field find printed oddly). */
  malformed: number;
}

// Times may be negative or far off (`touch -d @-5`): any that find prints is read, as text.
const HEADER =
  /^(\/work\/repo|\/tmp|\/dev\/shm) ([a-zA-Z]) ([0-7]{1,5}) (\d{1,20}) (-?\d{1,20}(?:\.\d{1,12})?) (-?\d{1,20}(?:\.\d{1,12})?)$/;
const ROOT_OF: Record<string, ListedRoot> = { [REPO_DIR]: 'repo', '/tmp': 'tmp', '/dev/shm': 'shm' };
const TYPES: Record<string, EntryType> = { f: 'file', d: 'directory', l: 'symlink' };

/** An entry from find's header line (HEADER), its path and its target; undefined when it does not parse. */
function entryOf(header: string, key: string, target: string): ListedEntry | undefined {
  const match = HEADER.exec(header);
  if (!match) return undefined;
  return {
    root: ROOT_OF[match[1] ?? ''] ?? 'tmp',
    type: TYPES[match[2] ?? ''] ?? 'other',
    mode: Number.parseInt(match[3] ?? '0', 8),
    size: Number(match[4]),
    mtime: match[5] ?? '',
    ctime: match[6] ?? '',
    key,
    target,
    header,
  };
}

/**
 * Reads find's NUL-separated records (LISTING_FORMAT) as the bytes come, one record at a time
 * (a listing of 100,000 entries is never held whole nor split into 300,000 strings at once), and
 * hands each entry to `onEntry`. The roots themselves are left out.
 */
export class ListingReader {
  private pending: Buffer = Buffer.alloc(0);
  private first = true;
  private stopped = false;
  private malformed = 0;
  private commit: Listing['commit'];
  private readonly drivers: string[] = [];

  constructor(private readonly onEntry: (entry: ListedEntry) => void) {}

  push(chunk: Buffer): this {
    if (this.stopped) return this;
    const bytes = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    for (;;) {
      // A record is three NUL-ended fields: wait for all three.
      const a = bytes.indexOf(0, at);
      const b = a < 0 ? -1 : bytes.indexOf(0, a + 1);
      const c = b < 0 ? -1 : bytes.indexOf(0, b + 1);
      if (c < 0) break;
      const header = bytes.toString('latin1', at, a);
      const key = bytes.toString('latin1', a + 1, b);
      const target = bytes.toString('latin1', b + 1, c);
      at = c + 1;
      if (!this.record(header, key, target)) {
        this.stopped = true;
        break;
      }
    }
    this.pending = this.stopped ? Buffer.alloc(0) : Buffer.from(bytes.subarray(at));
    return this;
  }

  /** The end of the bytes: a record left unfinished was cut. */
  end(): Pick<Listing, 'malformed' | 'commit' | 'drivers'> {
    if (this.pending.length) this.malformed += 1;
    this.pending = Buffer.alloc(0);
    return {
      malformed: this.malformed,
      ...(this.commit ? { commit: this.commit } : {}),
      ...(this.drivers.length ? { drivers: [...this.drivers] } : {}),
    };
  }

  /** false: the record does not parse, and nothing after it can be trusted. */
  private record(header: string, key: string, target: string): boolean {
    if (header === 'attributes') {
      if (this.drivers.length < 1000) this.drivers.push(key);
      return true;
    }
    if (this.first) {
      this.first = false;
      const commit = COMMIT_HEADER.exec(header);
      if (commit) {
        const [, sha = '-', signature = '-'] = commit;
        this.commit = { sha: sha === '-' ? '' : sha, signature: signature === '-' ? '' : signature };
        return true;
      }
    }
    const entry = entryOf(header, key, target);
    if (!entry) {
      // NUL ends every field and no name holds one, so the records stay aligned: this one is
      // counted (the report says the listing is incomplete) and the next ones are read.
      this.malformed += 1;
      return true;
    }
    if (key !== '') this.onEntry(entry);
    return true;
  }
}

/** Reads a whole listing's bytes (see ListingReader). */
export function readListing(
  bytes: Buffer,
  onEntry: (entry: ListedEntry) => void,
): Pick<Listing, 'malformed' | 'commit' | 'drivers'> {
  return new ListingReader(onEntry).push(bytes).end();
}

/** The whole listing, kept small (the clone's, which the box's is compared with). */
export function parseListing(bytes: Buffer): Listing {
  const entries = new ListingEntries();
  const read = readListing(bytes, (entry) => entries.set(entry));
  return { entries, ...read };
}

const COMMIT_HEADER = /^commit ([0-9a-f]{40,64}|-) ([A-Z0-9_]{1,40}|-)$/;

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
}

/** A symlink target that leaves the folder it is in: absolute, or with a `..` part. */
function pointsOut(target: string): boolean {
  return target.startsWith('/') || target.split('/').includes('..');
}

/**
 * The rows of one folder added or deleted as a whole, as its entries come (find lists a folder
 * before what it holds, so they come together): held until they pass FOLDER_ROWS, then counted.
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
  ) {
    this.prefix = `${key}/`;
  }

  holds(root: ListedRoot, key: string): boolean {
    return root === this.root && key.startsWith(this.prefix);
  }

  add(entry: ListedEntry, row: () => ChangedFile): void {
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
      for (const held of this.rows)
        if (held.runs || (held.type === 'symlink' && pointsOut(held.target ?? ''))) this.notable.push(held);
      this.rows = null;
    }
    // A link out of the folder (absolute, or climbing with ..) says where it points: listed too.
    if (runsReason(entry) || (entry.type === 'symlink' && pointsOut(entry.target))) this.notable.push(row());
  }

  /**
   * The rows it ends as: the folder and its entries, or the folder with its contents and the
   * notable ones (which its contents then leave out: each entry is counted once).
   */
  close(into: ChangedFile[]): void {
    if (this.rows) {
      into.push(this.folder, ...this.rows);
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
    into.push({ ...this.folder, contents }, ...this.notable);
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
const ROOT_PREFIX: Record<ListedRoot, string> = { repo: `${REPO_DIR}/`, tmp: '/tmp/', shm: '/dev/shm/' };

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
function describe(entry: ListedEntry, changed?: readonly string[]): ChangedFile {
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
function runsReason(entry: ListedEntry): string | undefined {
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
function isDepsLink(entry: ListedEntry): boolean {
  if (entry.root !== 'repo' || !entry.key.includes('node_modules')) return false;
  const parts = entry.key.split('/');
  if (!parts.includes('node_modules')) return false;
  // Only a plain absolute target under /deps: `/deps/../work/repo/.git/hooks` is not a deps link.
  if (entry.type === 'symlink')
    return (
      entry.target.startsWith('/deps/') &&
      !entry.target.split('/').some((part) => part === '..' || part === '.')
    );
  return entry.type === 'directory' && parts.at(-1) === 'node_modules';
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
    setuid: [],
    newExecutables: [],
  };
}

export class ChangeCollector {
  private readonly changes = noChanges();
  private reader = new ListingReader((entry) => this.see(entry));
  private malformed = 0;
  /** The new folder whose entries are coming (added in /work/repo, or anything in /tmp, /dev/shm). */
  private group: { folder: FolderGroup; into: ChangedFile[] } | undefined;
  private readonly limit: number;

  /**
   * `baseline` is consumed: each of its entries seen again is taken out of it, so what is left at
   * the end was deleted (and nothing is held twice).
   */
  constructor(
    private readonly baseline: Listing,
    options: CompareOptions = {},
  ) {
    this.limit = options.allFiles ? Number.POSITIVE_INFINITY : FOLDER_ROWS;
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
    if (entry.root !== 'repo') {
      if (entry.root === 'tmp' && OWN_TMP.some((own) => entry.key === own || entry.key.startsWith(`${own}/`)))
        return;
      if (executable) changes.newExecutables.push(once());
      this.addNew(entry, changes.outsideRepo, once);
      return;
    }
    const before = this.baseline.entries.take(entry);
    if (before === 'same') return;
    if (isDepsLink(entry) && (!before || isDepsLink(before))) {
      if (!before) changes.depsLinks += 1;
      return;
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
    changes.modified.push(once(changed));
    if (executable && (before.type !== 'file' || (before.mode & EXEC_BITS) === 0))
      changes.newExecutables.push(once());
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

/** What the clone's listing says of the source as cloned. */
export interface CloneFacts {
  /** The commit checked out; null for a plain copy (no git). */
  commit: string | null;
  /** The kind of signature in the commit's header (never verified: no key is at hand). */
  signature: 'none' | 'pgp' | 'ssh' | 'x509' | 'other';
  /** Entries outside .git. */
  files: number;
  directories: number;
  symlinks: number;
  /** Bytes of the regular files outside .git, and inside it. */
  bytes: number;
  gitBytes: number;
  /** Entries already there at the clone that git or a host tool would run once copied out. */
  runs: ChangedFile[];
}

const SIGNATURE_KINDS: Record<string, CloneFacts['signature']> = {
  PGP_SIGNATURE: 'pgp',
  SSH_SIGNATURE: 'ssh',
  SIGNED_MESSAGE: 'x509',
};

export function cloneFacts(listing: Listing): CloneFacts {
  const drivers = new Set(listing.drivers ?? []);
  const facts: CloneFacts = {
    commit: listing.commit?.sha || null,
    signature: listing.commit?.signature ? (SIGNATURE_KINDS[listing.commit.signature] ?? 'other') : 'none',
    files: 0,
    directories: 0,
    symlinks: 0,
    bytes: 0,
    gitBytes: 0,
    runs: [],
  };
  for (const entry of listing.entries.values()) {
    // The clone made .git itself (copy-out withholds it): its size is said, its files not counted.
    if (entry.key === '.git' || entry.key.startsWith('.git/')) {
      if (entry.type === 'file') facts.gitBytes += entry.size;
      continue;
    }
    if (entry.type === 'directory') facts.directories += 1;
    else if (entry.type === 'symlink') facts.symlinks += 1;
    else if (entry.type === 'file') {
      facts.files += 1;
      facts.bytes += entry.size;
    }
    // A .gitattributes counts when its content selects a driver (the helper read it).
    const attributes = entry.key.split('/').at(-1) === GITATTRIBUTES;
    if (attributes ? drivers.has(entry.key) : runsReason(entry)) facts.runs.push(describe(entry));
  }
  facts.runs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return facts;
}
