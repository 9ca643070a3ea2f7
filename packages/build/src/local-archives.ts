import { posix } from 'node:path';
import { unsafePathReason } from './manifest-names.js';

/**
 * Package archives of the repo that its node manifests install by path: `"dep":
 * "file:vendor/dep-1.0.0.tgz"` in a package.json, and the same reference as package-lock.json,
 * npm-shrinkwrap.json, pnpm-lock.yaml and yarn.lock write it. The install reads the archive, so it
 * belongs in the build context (and in the dephash) beside the manifests; a folder named by
 * `file:`/`link:` needs no more than its package.json, which is a manifest already.
 */
const NODE_MANIFESTS = new Set([
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'yarn.lock',
]);

// `file:` then a relative path ending in an archive extension, ended by what ends a value in JSON,
// YAML or yarn.lock (quote, blank, comma, colon of a key, `#` of a hash) or the line.
const ARCHIVE_REF = /file:((?:\.{1,2}\/)*[^\s"',#:]+?\.(?:tgz|tar\.gz|tar))(?=["'\s,#:]|$)/gm;

/** At most this many archives are read (each costs an argv entry of the read). */
export const MAX_LOCAL_ARCHIVES = 256;

/**
 * The repo-relative paths of the archives the node manifests among `files` name, sorted, each
 * inside the repo and safe as a context path (hostile text: `..` out of the repo, absolute paths,
 * odd names are dropped), at most MAX_LOCAL_ARCHIVES.
 */
export function localArchivePaths(files: readonly { path: string; content: Buffer }[]): string[] {
  const found = new Set<string>();
  for (const file of files) {
    if (!NODE_MANIFESTS.has(posix.basename(file.path))) continue;
    const dir = posix.dirname(file.path);
    for (const match of file.content.toString('utf8').matchAll(ARCHIVE_REF)) {
      const ref = match[1] ?? '';
      if (ref.startsWith('/')) continue;
      const path = posix.normalize(posix.join(dir, ref));
      if (path === '..' || path.startsWith('../') || unsafePathReason(path) !== undefined) continue;
      // The repo's git data and installed packages are never install inputs of the repo's own.
      if (path.split('/').some((part) => part === '.git' || part === 'node_modules')) continue;
      found.add(path);
      if (found.size >= MAX_LOCAL_ARCHIVES) return [...found].sort();
    }
  }
  return [...found].sort();
}
