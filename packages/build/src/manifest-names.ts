import { hasControlCharacter } from '@ca-sandbox/docker/contracts';

/** Exact file names that make up the dependency manifest/lockfile set, at any depth. */
export const MANIFEST_NAMES: readonly string[] = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'pnpm-workspace.yaml',
  'yarn.lock',
  '.yarnrc.yml',
  '.yarnrc',
  '.pnpmfile.cjs',
  '.pnpmfile.mjs',
  'bun.lock',
  'bun.lockb',
  '.npmrc',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile',
  'Pipfile.lock',
  'setup.py',
  'setup.cfg',
  'go.mod',
  'go.sum',
  'go.work',
  'go.work.sum',
  'Cargo.toml',
  'Cargo.lock',
  'rust-toolchain',
  'rust-toolchain.toml',
  'Gemfile',
  'Gemfile.lock',
  '.nvmrc',
  '.node-version',
  '.python-version',
  '.tool-versions',
  'nixpacks.toml',
  'nixpacks.json',
];

/** Shell globs (find -name) for manifests whose names vary. */
export const MANIFEST_GLOBS: readonly string[] = ['requirements*.txt'];

/**
 * Files the package managers read during the install that are not named like a manifest, as
 * find -path patterns (matched on `./<path>`): yarn berry's releases (yarnPath), plugins and
 * patches, and patch files of pnpm (`patchedDependencies`), bun and patch-package, which live
 * in a folder named `patches` by convention.
 */
export const MANIFEST_PATH_GLOBS: readonly string[] = [
  '*/.yarn/releases/*',
  '*/.yarn/plugins/*',
  '*/.yarn/patches/*',
  '*/patches/*.patch',
];

const MANIFEST_PATHS =
  /(^|\/)\.yarn\/(releases|plugins|patches)\/.+$|(^|\/)patches\/(?:[^/]*\/)*[^/]+\.patch$/s;

/** Directories never descended into: not part of the repo's declared dependencies. */
export const PRUNED_DIRS: readonly string[] = ['.git', 'node_modules', 'vendor'];
/** The one of them a Go module's vendored dependencies live in. */
export const VENDOR_DIR = 'vendor';

/**
 * The one file read inside a `vendor` directory: Go's list of the modules a repo vendors. Beside a
 * go.mod it says the repo carries its dependencies (nothing to download; the box builds with
 * -mod=vendor); the rest of the vendor tree is the repo's source, never a manifest.
 */
export const GO_VENDOR_LIST = `${VENDOR_DIR}/modules.txt`;
const GO_VENDOR_LIST_PATH = /(^|\/)vendor\/modules\.txt$/s;

const NAME_SET = new Set(MANIFEST_NAMES);

/** True when a file's base name belongs to the manifest set. */
export function isManifestName(base: string): boolean {
  return NAME_SET.has(base) || /^requirements.*\.txt$/s.test(base);
}

/** True when a repo-relative path belongs to the set: a manifest name, or an install input by path. */
export function isManifestPath(path: string): boolean {
  const base = path.slice(path.lastIndexOf('/') + 1);
  return isManifestName(base) || MANIFEST_PATHS.test(path) || GO_VENDOR_LIST_PATH.test(path);
}

/** True when a path (relative, posix) lies under a pruned directory. */
export function isUnderPrunedDir(path: string): boolean {
  const parts = path.split('/');
  // A Go vendor list sits in its `vendor` directory: only the directories above it count.
  const dirs = parts.slice(0, GO_VENDOR_LIST_PATH.test(path) ? -2 : -1);
  return dirs.some((part) => PRUNED_DIRS.includes(part));
}

const MAX_PATH_CHARS = 1024;
const MAX_DEPTH = 64;

/**
 * Validates a manifest path from the repo (hostile): relative posix, no `.`/`..`/empty segment,
 * no control characters or backslash, bounded length and depth. Returns the reason it is unsafe.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path.length === 0) return 'empty name';
  if (path.length > MAX_PATH_CHARS) return 'name too long';
  if (path.startsWith('/')) return 'absolute name';
  if (hasControlCharacter(path) || path.includes('\\')) return 'control character or backslash in name';
  const parts = path.split('/');
  if (parts.length > MAX_DEPTH) return 'path too deep';
  if (parts.some((part) => part === '' || part === '.' || part === '..')) return 'empty, . or .. segment';
  return undefined;
}
