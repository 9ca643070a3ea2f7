import { constants } from 'node:fs';
import { chmod, lstat, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

// A box can write anything into `.git` (core.fsmonitor, hooks, core.hooksPath, filters, aliases):
// delivered as is, `git status` in the copy would run the box's commands on the host. These are
// the rules copy-out applies to git directories (which of them: GitMode, git-modes.ts).

/**
 * Characters HFS+ ignores in names (git's is_hfs_dotgit list): on such a file system `.g\u200cit`
 * is `.git`. Removed before comparing, together with case (macOS file systems fold it).
 */
const IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/** A name as git on a case-insensitive, Unicode-ignoring host file system would see it. */
export function foldName(name: string): string {
  return name.replace(IGNORABLE, '').toLowerCase();
}

/** `.git`, in any case, with ignorable characters, or with NTFS's trailing dots and spaces. */
export function isDotGit(name: string): boolean {
  return foldName(name).replace(/[. ]+$/, '') === '.git';
}

/**
 * Whether git would open a directory with these (folded) child names as a repository, the test of
 * git's is_git_directory made loose: HEAD plus objects and refs, or HEAD plus a commondir file
 * (objects and refs then live elsewhere). A bare repository in a subdirectory is enough for
 * `git status` there (or in any directory below it) to read its config.
 */
export function looksLikeGitDir(children: ReadonlySet<string> | undefined): boolean {
  if (!children?.has('head')) return false;
  return children.has('commondir') || (children.has('objects') && children.has('refs'));
}

/** Largest box config read to learn the repository's object and ref formats. */
const MAX_CONFIG_BYTES = 64 * 1024;

/**
 * Rebuilds the git directory at `root` (inside our private staging directory, made by the
 * extractor: no link in it leaves the tree) from an allowlist, in place:
 * kept: HEAD, ORIG_HEAD, index, packed-refs, shallow, refs/, logs/, reftable/, info/exclude, and
 * objects/ as loose objects, packs, alternates-free info;
 * dropped (returned, relative to `root`): config, hooks/, info/attributes, commondir, modules/,
 * worktrees/, rebase and sequencer state, symlinks, anything else, and any directory below that
 * git could open as a repository of its own.
 * Then a config written by us (only the object and ref formats are read from the box's, by an
 * exact match) and no exec bit anywhere.
 */
export async function sanitizeGitDir(root: string, bare: boolean): Promise<string[]> {
  const formats = await repositoryFormats(join(root, 'config'));
  const dropped: string[] = [];
  await sanitizeLevel(root, [], dropped);
  const config = minimalGitConfig({ bare, ...formats });
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(join(root, 'config'), flags, 0o644);
  try {
    await handle.writeFile(config);
  } finally {
    await handle.close();
  }
  return dropped;
}

async function sanitizeLevel(dir: string, parts: string[], dropped: string[]): Promise<void> {
  const entries = await readdir(join(dir, ...parts), { withFileTypes: true });
  const inRefs = parts.length > 0 && ['refs', 'logs', 'reftable'].includes(parts[0] ?? '');
  if (inRefs && looksLikeGitDir(new Set(entries.map((entry) => foldName(entry.name))))) {
    // A ref directory shaped like a repository: git would open it from inside, with its config.
    await rm(join(dir, ...parts), { recursive: true, force: true });
    dropped.push(parts.join('/'));
    return;
  }
  for (const entry of entries) {
    const path = [...parts, entry.name];
    const absolute = join(dir, ...path);
    const isDir = entry.isDirectory();
    if ((!isDir && !entry.isFile()) || !keptInGitDir(path, isDir)) {
      await rm(absolute, { recursive: true, force: true });
      dropped.push(path.join('/'));
    } else if (isDir) {
      await chmod(absolute, 0o755);
      await sanitizeLevel(dir, path, dropped);
    } else {
      await chmod(absolute, (await lstat(absolute)).mode & 0o644);
    }
  }
}

const KEPT_FILES = new Set(['HEAD', 'ORIG_HEAD', 'index', 'packed-refs', 'shallow']);
const HEX2 = /^[0-9a-f]{2}$/;
const LOOSE_OBJECT = /^[0-9a-f]{38,62}$/;
const PACK_FILE = /^(pack-[0-9a-f]{40,64}\.(pack|idx|rev|bitmap|keep|promisor|mtimes)|multi-pack-index)$/;
const GRAPH_FILE = /^(graph-[0-9a-f]{40,64}\.graph|commit-graph-chain)$/;

/** The allowlist of a sanitised git directory; `path` is relative to its root. */
export function keptInGitDir(path: string[], isDir: boolean): boolean {
  const [head, ...rest] = path;
  if (head === undefined) return isDir;
  if (KEPT_FILES.has(head)) return !isDir && rest.length === 0;
  if (head === 'refs' || head === 'logs' || head === 'reftable') return true;
  if (head === 'info')
    return rest.length === 0 ? isDir : rest.length === 1 && rest[0] === 'exclude' && !isDir;
  if (head !== 'objects') return false;
  const [first, second, third] = rest;
  if (first === undefined) return isDir;
  const leaf = (name: string | undefined, pattern: RegExp) =>
    name === undefined ? isDir : !isDir && pattern.test(name) && rest.length === 2;
  if (HEX2.test(first)) return leaf(second, LOOSE_OBJECT);
  if (first === 'pack') return leaf(second, PACK_FILE);
  if (first !== 'info') return false;
  // objects/info: packs and commit graphs; never alternates (object stores elsewhere on the host).
  if (second === undefined) return isDir;
  if (second === 'packs' || second === 'commit-graph') return !isDir && rest.length === 2;
  if (second !== 'commit-graphs') return false;
  return third === undefined ? isDir : !isDir && rest.length === 3 && GRAPH_FILE.test(third);
}

export interface RepositoryFormats {
  objectFormat?: 'sha1' | 'sha256';
  refStorage?: 'files' | 'reftable';
}

/** Reads `[extensions] objectformat / refstorage` from the box's config; only the known values. */
async function repositoryFormats(path: string): Promise<RepositoryFormats> {
  let text: string;
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const buffer = Buffer.alloc(MAX_CONFIG_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_CONFIG_BYTES, 0);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return {};
  }
  return parseRepositoryFormats(text);
}

/** The two format extensions of a git config text, exact known values only, the rest ignored. */
export function parseRepositoryFormats(text: string): RepositoryFormats {
  const formats: RepositoryFormats = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const header = /^\[([A-Za-z0-9.-]+)\]$/.exec(line);
    if (header) {
      section = (header[1] ?? '').toLowerCase();
      continue;
    }
    if (section !== 'extensions') continue;
    const pair = /^([A-Za-z]+)\s*=\s*([A-Za-z0-9]+)$/.exec(line);
    if (!pair) continue;
    const key = (pair[1] ?? '').toLowerCase();
    const value = (pair[2] ?? '').toLowerCase();
    if (key === 'objectformat' && (value === 'sha1' || value === 'sha256')) formats.objectFormat = value;
    if (key === 'refstorage' && (value === 'files' || value === 'reftable')) formats.refStorage = value;
  }
  return formats;
}

/**
 * The whole config of a sanitised git directory: nothing that names a command, a path or a remote.
 * A repository in another object or ref format needs format version 1 and its extension.
 */
export function minimalGitConfig(options: RepositoryFormats & { bare: boolean }): string {
  const extensions: string[] = [];
  if (options.objectFormat === 'sha256') extensions.push('\tobjectformat = sha256');
  if (options.refStorage === 'reftable') extensions.push('\trefstorage = reftable');
  const lines = [
    '# Written by ca-sandbox: the box config was not copied (sanitised copy-out).',
    '[core]',
    `\trepositoryformatversion = ${extensions.length > 0 ? 1 : 0}`,
    '\tfilemode = true',
    `\tbare = ${options.bare}`,
    ...(extensions.length > 0 ? ['[extensions]', ...extensions] : []),
  ];
  return `${lines.join('\n')}\n`;
}
