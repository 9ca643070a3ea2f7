import { IMAGE_VIEW_DIR, RAW_REPO_DIR, REPO_DIR } from '@ca-sandbox/docker/contracts';

/**
 * The listings the report's "what changed" compares (file-changes.ts): GNU find's records of a
 * box's files, taken in a container (never from git, never on the host's files), read here as
 * hostile data: the script that prints them, the reader that parses them as they come, and the
 * small form a baseline of 100,000 entries is kept in.
 */

/** Where each listing starts: the checkout and the box's own tmpfs. */
export const LISTED_ROOTS = { repo: REPO_DIR, tmp: '/tmp', shm: '/dev/shm' } as const;
export type ListedRoot = keyof typeof LISTED_ROOTS | 'image';

/**
 * The upper volume of a box's writable view of its image (what the box wrote there: a copy of
 * each file written, a whiteout for each removed), as its lister sees it: mounted where a helper's
 * one volume goes, and listed from `/work/repo/.` so that its records say which listing they are.
 */
export const IMAGE_UPPER_START = `${REPO_DIR}/.`;
/** Where the box sees what the upper volume holds. */
export const IMAGE_VIEW_PREFIX = `${IMAGE_VIEW_DIR}/`;

/**
 * The box's tmpfs as a container that joined its PID namespace reaches them: through the root of
 * the box's PID 1 (docker's init, started by us), in the box's own mounts. The report's lister
 * lists them so while the box is frozen.
 */
export const FROZEN_TMPFS_ROOTS = { tmp: '/proc/1/root/tmp', shm: '/proc/1/root/dev/shm' } as const;

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

/** Past this many folders written in the view, removals by replacement are compared in these only. */
export const MAX_COMPARED_FOLDERS = 2000;

/**
 * The listing of a box's view upper (mounted at /work/repo, read-only): its records (a whiteout is
 * a file removed), then, with `view` (the lister joined the frozen box's PID namespace), one
 * whiteout-like record per name its image has and its view no longer shows in a folder written
 * in the view. `rm -rf dep && mkdir dep` leaves an opaque folder and no whiteout under it, and
 * the lister, not root, cannot read the overlay's opaque mark: the image's folder
 * (/proc/1/root/<path>, the box's read-only root) and the view's (/proc/1/root/.ca-sbx-image/<path>)
 * are compared by name instead. Names are NUL-separated throughout; sort and comm in the C locale
 * (the internal exec's empty environment).
 */
export function imageListingScript(view: boolean): string {
  const listing = `find "$1" -xdev -printf '${LISTING_FORMAT}'`;
  if (!view) return `exec ${listing}`;
  return [
    listing,
    'cd "$1" || exit 0',
    'n=$(find . -xdev -mindepth 1 -type d -printf x | wc -c)',
    `[ "$n" -le ${MAX_COMPARED_FOLDERS} ] || echo "more than ${MAX_COMPARED_FOLDERS} folders written in the deps: files removed by replacing a folder were looked for in the first ${MAX_COMPARED_FOLDERS} only" >&2`,
    // $2 is IMAGE_FOLDER_COMPARE, run once per folder (its path below the upper in $1).
    `find . -xdev -mindepth 1 -type d -print0 | head -z -n ${MAX_COMPARED_FOLDERS} | xargs -0 -r -n 1 sh -c "$2" sh`,
  ].join('\n');
}

/** One folder of the upper (imageListingScript's $2): the names its image has and its view lost. */
export const IMAGE_FOLDER_COMPARE = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  'rel=${1#./}',
  'img=/proc/1/root/$rel',
  `shown=/proc/1/root${IMAGE_VIEW_DIR}/$rel`,
  '[ -d "$img" ] && [ ! -L "$img" ] && [ -d "$shown" ] || exit 0',
  'find "$img" -mindepth 1 -maxdepth 1 -printf \'%f\\0\' | sort -z > /tmp/.ca-sbx-image-names',
  'find "$shown" -mindepth 1 -maxdepth 1 -printf \'%f\\0\' | sort -z > /tmp/.ca-sbx-view-names',
  `comm -z -23 /tmp/.ca-sbx-image-names /tmp/.ca-sbx-view-names | xargs -0 -r -n 1 printf '${IMAGE_UPPER_START} c 0 0 0 0\\0%s/%s\\0\\0' "$rel"`,
].join('\n');

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
 * A listing's entries, kept small: their records in one buffer, in the listing's order (a status
 * byte, find's header line, the path, the link target, each NUL-ended), found by a hash of their
 * path. No string nor object is kept per entry: a checkout of 100,000 files holds about 8 MB
 * outside the JS heap and 4 MB of index, and an entry is read back when asked for.
 */
export class ListingEntries {
  private arena: Buffer;
  private used = 0;
  private live = 0;
  /** Hash of root and path → the record's offset (or offsets: two paths may share a hash). */
  private readonly index = new Map<number, number | number[]>();

  /** `capacity`: the bytes the records will take, about the listing's (grown when short). */
  constructor(capacity = 64 * 1024) {
    this.arena = Buffer.allocUnsafe(Math.max(1024, capacity));
  }

  set(entry: ListedEntry): void {
    // latin1: one byte a character (the header is ASCII, the path and target latin1 already).
    this.reserve(entry.header.length + entry.key.length + entry.target.length + 4);
    const at = this.used;
    const { arena } = this;
    arena[at] = ROOT_CODE[entry.root];
    let end = at + 1;
    end += arena.write(entry.header, end, 'latin1');
    arena[end++] = 0;
    end += arena.write(entry.key, end, 'latin1');
    arena[end++] = 0;
    end += arena.write(entry.target, end, 'latin1');
    arena[end++] = 0;
    this.used = end;
    this.live += 1;
    const hash = pathHash(entry.root, entry.key);
    const prior = this.index.get(hash);
    this.index.set(hash, prior === undefined ? at : Array.isArray(prior) ? [...prior, at] : [prior, at]);
  }

  get(root: ListedRoot, key: string): ListedEntry | undefined {
    const at = this.find(root, key);
    return at === undefined ? undefined : this.read(at)?.entry;
  }

  /**
   * Takes the entry at this path out (a comparison consumes its baseline: what is left at the end
   * was deleted): 'same' when `now` has its very header and target (nothing of it changed: no
   * entry is made for it, the common case of a big checkout), else the entry, or undefined.
   */
  take(now: ListedEntry): ListedEntry | 'same' | undefined {
    const at = this.find(now.root, now.key);
    if (at === undefined) return undefined;
    this.arena[at] = TAKEN;
    this.live -= 1;
    // Compared in place first: an entry unchanged makes no string at all.
    const { arena } = this;
    const headerEnd = arena.indexOf(0, at + 1);
    const keyEnd = arena.indexOf(0, headerEnd + 1);
    const targetEnd = arena.indexOf(0, keyEnd + 1);
    if (this.holds(at + 1, headerEnd, now.header) && this.holds(keyEnd + 1, targetEnd, now.target))
      return 'same';
    return this.read(at)?.entry;
  }

  /** Whether the bytes [start, end) are `text`'s latin1 characters. */
  private holds(start: number, end: number, text: string): boolean {
    if (end - start !== text.length) return false;
    for (let i = 0; i < text.length; i += 1) if (this.arena[start + i] !== text.charCodeAt(i)) return false;
    return true;
  }

  get size(): number {
    return this.live;
  }

  /** Every entry not taken, in the listing's order (find's: a folder before what it holds). */
  *values(): IterableIterator<ListedEntry> {
    for (let at = 0; at < this.used; ) {
      const record = this.read(at);
      if (!record) return;
      if (this.arena[at] !== TAKEN) yield record.entry;
      at = record.next;
    }
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.arena.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.used + bytes));
    this.arena.copy(grown, 0, 0, this.used);
    this.arena = grown;
  }

  /** The live record at this path, or undefined. */
  private find(root: ListedRoot, key: string): number | undefined {
    const found = this.index.get(pathHash(root, key));
    if (found === undefined) return undefined;
    for (const at of Array.isArray(found) ? found : [found])
      if (this.arena[at] === ROOT_CODE[root] && this.keyAt(at, key)) return at;
    return undefined;
  }

  /** Whether the record at `at` has this path (compared byte by byte: no string made). */
  private keyAt(at: number, key: string): boolean {
    const start = this.arena.indexOf(0, at + 1) + 1;
    return start !== 0 && this.holds(start, this.arena.indexOf(0, start), key);
  }

  private read(at: number): { entry: ListedEntry; next: number } | undefined {
    const { arena } = this;
    const headerEnd = arena.indexOf(0, at + 1);
    const keyEnd = headerEnd < 0 ? -1 : arena.indexOf(0, headerEnd + 1);
    const targetEnd = keyEnd < 0 ? -1 : arena.indexOf(0, keyEnd + 1);
    if (targetEnd < 0 || targetEnd >= this.used) return undefined;
    const entry = entryOf(
      arena.toString('latin1', at + 1, headerEnd),
      arena.toString('latin1', headerEnd + 1, keyEnd),
      arena.toString('latin1', keyEnd + 1, targetEnd),
    );
    return entry ? { entry, next: targetEnd + 1 } : undefined;
  }
}

/** A record's status byte: taken, or live with its root. */
const TAKEN = 0;
const ROOT_CODE: Record<ListedRoot, number> = { repo: 1, tmp: 2, shm: 3, image: 4 };

/** FNV-1a over the root and the path's (latin1) characters. */
function pathHash(root: ListedRoot, key: string): number {
  let hash = Math.imul(0x811c9dc5 ^ ROOT_CODE[root], 0x01000193);
  for (let i = 0; i < key.length; i += 1) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> 0;
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
  /^(\/work\/repo|\/work\/repo\/\.|\/\.ca-sbx-raw\/repo|\/tmp|\/dev\/shm|\/proc\/1\/root\/tmp|\/proc\/1\/root\/dev\/shm) ([a-zA-Z]) ([0-7]{1,5}) (\d{1,20}) (-?\d{1,20}(?:\.\d{1,12})?) (-?\d{1,20}(?:\.\d{1,12})?)$/;
const ROOT_OF: Record<string, ListedRoot> = {
  [REPO_DIR]: 'repo',
  // A box with a repo view, listed in itself: its own volume (without the installed deps).
  [RAW_REPO_DIR]: 'repo',
  [IMAGE_UPPER_START]: 'image',
  '/tmp': 'tmp',
  '/dev/shm': 'shm',
  [FROZEN_TMPFS_ROOTS.tmp]: 'tmp',
  [FROZEN_TMPFS_ROOTS.shm]: 'shm',
};
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
  const entries = new ListingEntries(bytes.length);
  const read = readListing(bytes, (entry) => entries.set(entry));
  return { entries, ...read };
}

const COMMIT_HEADER = /^commit ([0-9a-f]{40,64}|-) ([A-Z0-9_]{1,40}|-)$/;
