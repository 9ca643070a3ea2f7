import { posix } from 'node:path';
import { parse, stringify } from 'yaml';
import { unsafePathReason } from '../../manifest-names.js';
import type { ManifestFile } from '../../manifests.js';

/**
 * The repo's own lifecycle scripts, which npm, pnpm and yarn run for the root and for workspace
 * packages during an install. The context holds the manifests only, so a script that needs the
 * source (`install: node-gyp-build` → `binding.gyp not found`) would sink the build: they are
 * taken out of the context copy; the dependencies' scripts still run.
 */
export const OWN_LIFECYCLE_SCRIPTS: readonly string[] = [
  'preinstall',
  'install',
  'postinstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
  'dependencies',
  'pnpm:devPreinstall',
];

/** A key as it may be printed: repo text is hostile, odd names are not echoed. */
function printable(key: string): string {
  return /^[A-Za-z0-9@/:._[\]-]{1,80}$/.test(key) ? key : '(an unprintable key)';
}

/** package.json without the lifecycle scripts above; `removed` names them (empty ⇒ unchanged). */
export function stripOwnScripts(content: Buffer): { content: Buffer; removed: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(content.toString('utf8'));
  } catch {
    return { content, removed: [] };
  }
  const scripts = (json as { scripts?: unknown } | null)?.scripts;
  if (!scripts || typeof scripts !== 'object' || Array.isArray(scripts)) return { content, removed: [] };
  const table = scripts as Record<string, unknown>;
  const removed = OWN_LIFECYCLE_SCRIPTS.filter((name) => Object.hasOwn(table, name));
  if (removed.length === 0) return { content, removed };
  for (const name of removed) delete table[name];
  return { content: Buffer.from(`${JSON.stringify(json, null, 2)}\n`, 'utf8'), removed };
}

// npm/pnpm/yarn-classic settings a repo never chooses for us: where packages come from and with
// which credentials (the registry is the user's choice), TLS trust and proxies, and the paths,
// shells and node options the tools use (they would move the install out of our layout or run
// something of the repo's outside the dependency scripts).
const NPMRC_DENIED = new Set([
  'registry',
  '_auth',
  '_authtoken',
  '_password',
  'username',
  'password',
  'email',
  'always-auth',
  'otp',
  'strict-ssl',
  'ca',
  'ca[]',
  'cafile',
  'cert',
  'key',
  'certfile',
  'keyfile',
  'proxy',
  'http-proxy',
  'https-proxy',
  'noproxy',
  'no-proxy',
  'prefix',
  'global',
  'globalconfig',
  'userconfig',
  'cache',
  'cache-dir',
  'cache-folder',
  'store-dir',
  'modules-dir',
  'virtual-store-dir',
  'global-dir',
  'global-bin-dir',
  'global-folder',
  'pnpm-home',
  'state-dir',
  'lockfile-dir',
  'tmp',
  'script-shell',
  'shell',
  'node-options',
  'onload-script',
  'init-module',
  'git',
  'npm-path',
  'use-node-version',
  'manage-package-manager-versions',
  'yarn-offline-mirror',
  'yarn-path',
  'modules-folder',
  'link-folder',
  'registries',
]);

/**
 * The setting a key names, in one spelling: quotes and yarn classic's `--` flag prefix off, and its
 * per-command scopes too (`--install.modules-folder`, `--*.https-proxy` are `modules-folder` and
 * `https-proxy` for the commands they name); camelCase (pnpm-workspace.yaml: `storeDir`) as
 * kebab-case; lower case.
 */
export function settingName(rawKey: string): string {
  return rawKey
    .trim()
    .replace(/^["']|["']$/g, '')
    .replace(/^--(?:(?:\*|[A-Za-z][A-Za-z0-9-]*)\.)?/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase();
}

function npmrcKeyDenied(rawKey: string): boolean {
  const key = settingName(rawKey);
  return key.startsWith('//') || key.endsWith(':registry') || key.includes('_auth') || NPMRC_DENIED.has(key);
}

/**
 * `.npmrc` (ini) and yarn classic's `.yarnrc` (`key value`) from the repo, minus the denied
 * settings above and any value that expands an environment variable (`${NPM_TOKEN}`: the build
 * has no such variable, and an unset one fails pnpm). Sections and odd lines are dropped too.
 */
export function filterRcFile(text: string, style: 'npmrc' | 'yarnrc'): { text: string; dropped: string[] } {
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const match =
      style === 'npmrc' ? /^([^=]+?)\s*=\s*(.*)$/.exec(trimmed) : /^("[^"]+"|\S+)\s+(.*)$/.exec(trimmed);
    const key = match?.[1] ?? '';
    const value = match?.[2] ?? '';
    if (!match || trimmed.startsWith('[') || npmrcKeyDenied(key) || value.includes('${')) {
      dropped.push(printable(key.trim().replace(/^["']|["']$/g, '') || trimmed.slice(0, 40)));
      continue;
    }
    // yarn-path survives in .yarnrc only through the yarnPath check of the recipe (never here).
    kept.push(trimmed);
  }
  return { text: kept.length ? `${kept.join('\n')}\n` : '', dropped };
}

// yarn berry settings dropped from .yarnrc.yml, for the same reasons as NPMRC_DENIED.
const YARNRC_DENIED = new Set([
  'npmRegistryServer',
  'npmAuthToken',
  'npmAuthIdent',
  'npmAlwaysAuth',
  'npmScopes',
  'npmRegistries',
  'npmPublishRegistry',
  'httpProxy',
  'httpsProxy',
  'caFilePath',
  'httpsCaFilePath',
  'httpsCertFilePath',
  'httpsKeyFilePath',
  'enableStrictSsl',
  'unsafeHttpWhitelist',
  'networkSettings',
  'cacheFolder',
  'globalFolder',
  'enableGlobalCache',
  'installStatePath',
  'pnpUnpluggedFolder',
  'virtualFolder',
  'pnpDataPath',
  'injectEnvironmentFiles',
  'nodeLinker',
]);

/**
 * `pnpm-workspace.yaml` from the repo: pnpm 10+ reads its settings there too (`registry`,
 * `storeDir`, `httpsProxy`, ...), so the top-level keys NPMRC_DENIED names (in their camelCase
 * spelling) go, and so does any setting that expands an environment variable; `packages`,
 * catalogs, overrides and the rest stay. Unparsable ⇒ empty (pnpm would refuse it anyway).
 */
export function filterPnpmWorkspace(text: string): { text: string; dropped: string[] } {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100, merge: true });
  } catch {
    return { text: '', dropped: ['(the whole file: not valid YAML)'] };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { text: '', dropped: [] };
  const settings = doc as Record<string, unknown>;
  const dropped: string[] = [];
  try {
    for (const [key, value] of Object.entries(settings)) {
      if (!npmrcKeyDenied(key) && !JSON.stringify(value ?? null).includes('${')) continue;
      dropped.push(printable(key));
      delete settings[key];
    }
    return { text: dropped.length === 0 ? text : stringify(settings), dropped };
  } catch {
    // A self-referencing document (anchors) has no JSON form: nothing of it is used.
    return { text: '', dropped: ['(the whole file: not plain settings)'] };
  }
}

/** A repo-relative path that stays inside the repo and names a file of the context. */
function inContext(value: unknown, dir: string, paths: ReadonlySet<string>): string | undefined {
  if (typeof value !== 'string' || value.length > 1024 || posix.isAbsolute(value)) return undefined;
  const path = posix.normalize(posix.join(dir, value));
  return path.startsWith('../') || !paths.has(path) ? undefined : path;
}

/**
 * `.yarnrc.yml` from the repo, minus YARNRC_DENIED, settings that expand an environment
 * variable, a `yarnPath` that is not a file of the context and plugins not in the context (a
 * plugin `spec` would be another download of the repo's choosing). Unparsable ⇒ empty.
 */
export function filterYarnrcYml(
  text: string,
  dir: string,
  paths: ReadonlySet<string>,
): { text: string; dropped: string[]; yarnPath?: string } {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100, merge: true });
  } catch {
    return { text: '', dropped: ['(the whole file: not valid YAML)'] };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { text: '', dropped: [] };
  try {
    return filterSettings(doc as Record<string, unknown>, dir, paths);
  } catch {
    // A self-referencing document (anchors) has no JSON form: nothing of it is used.
    return { text: '', dropped: ['(the whole file: not plain settings)'] };
  }
}

function filterSettings(
  settings: Record<string, unknown>,
  dir: string,
  paths: ReadonlySet<string>,
): { text: string; dropped: string[]; yarnPath?: string } {
  const dropped: string[] = [];
  let yarnPath: string | undefined;
  for (const [key, value] of Object.entries(settings)) {
    if (YARNRC_DENIED.has(key) || JSON.stringify(value ?? null).includes('${')) {
      dropped.push(printable(key));
      delete settings[key];
    } else if (key === 'yarnPath') {
      yarnPath = inContext(value, dir, paths);
      if (!yarnPath) {
        dropped.push('yarnPath');
        delete settings[key];
      }
    } else if (key === 'plugins' && Array.isArray(value)) {
      const plugins = value.filter((plugin) => {
        const path = typeof plugin === 'string' ? plugin : (plugin as { path?: unknown } | null)?.path;
        return inContext(path, dir, paths) !== undefined;
      });
      if (plugins.length < value.length) dropped.push('plugins (not in the repo)');
      settings[key] = plugins;
    }
  }
  return {
    text: Object.keys(settings).length ? stringify(settings) : '',
    dropped,
    ...(yarnPath ? { yarnPath } : {}),
  };
}

/** True when `path` is taken, or a folder of it is a file, or it is a folder of a file (writeManifests would fail). */
function clashes(path: string, taken: ReadonlySet<string>): boolean {
  const parts = path.split('/');
  for (let i = 1; i <= parts.length; i++) if (taken.has(parts.slice(0, i).join('/'))) return true;
  for (const other of taken) if (other.startsWith(`${path}/`)) return true;
  return false;
}

/**
 * Empty stand-ins for the `bin` files of the repo's own packages (workspace packages): the
 * package managers link a bin only when its file exists, and the source is not in the context.
 * The links resolve to the real files in /work/repo in the box (see node-layout.ts).
 */
export function binPlaceholders(files: readonly ManifestFile[]): ManifestFile[] {
  const paths = new Set(files.map((file) => file.path));
  const out = new Map<string, ManifestFile>();
  for (const file of files) {
    if (posix.basename(file.path) !== 'package.json' || file.content.length > 4 * 1024 * 1024) continue;
    let bin: unknown;
    try {
      bin = (JSON.parse(file.content.toString('utf8')) as { bin?: unknown } | null)?.bin;
    } catch {
      continue;
    }
    const targets =
      typeof bin === 'string' ? [bin] : bin && typeof bin === 'object' ? Object.values(bin) : [];
    const dir = posix.dirname(file.path);
    for (const target of targets.slice(0, 100)) {
      if (typeof target !== 'string' || target.length > 512 || posix.isAbsolute(target)) continue;
      const path = posix.normalize(posix.join(dir, target));
      const inside = dir === '.' ? !path.startsWith('../') : path.startsWith(`${dir}/`);
      if (!inside || path === '.' || unsafePathReason(path) || clashes(path, paths)) continue;
      paths.add(path);
      out.set(path, { path, content: Buffer.alloc(0) });
    }
  }
  return [...out.values()];
}

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies'] as const;

/**
 * Directories (relative to the repo, `.`-free) of the packages that some package.json of the repo
 * depends on by a `file:` directory spec. Tarballs and paths out of the repo are not packages of the
 * context, so they are not listed.
 */
export function localDependencyDirs(files: readonly ManifestFile[]): Set<string> {
  const dirs = new Set<string>();
  for (const file of files) {
    if (posix.basename(file.path) !== 'package.json') continue;
    let json: unknown;
    try {
      json = JSON.parse(file.content.toString('utf8'));
    } catch {
      continue;
    }
    for (const field of DEPENDENCY_FIELDS) {
      const table = (json as Record<string, unknown> | null)?.[field];
      if (!table || typeof table !== 'object' || Array.isArray(table)) continue;
      for (const spec of Object.values(table as Record<string, unknown>)) {
        if (typeof spec !== 'string' || !spec.startsWith('file:')) continue;
        const target = spec.slice('file:'.length);
        if (/\.(tgz|tar\.gz|tar)$/i.test(target)) continue;
        const dir = posix.normalize(posix.join(posix.dirname(file.path), target)).replace(/\/+$/, '');
        if (dir === '.' || dir === '..' || dir.startsWith('../') || posix.isAbsolute(dir)) continue;
        dirs.add(dir);
      }
    }
  }
  return dirs;
}

/**
 * The node part of the context: the repo's own lifecycle scripts out of every package.json,
 * rc files filtered. The dephash is computed over the repo's files as read, not over these.
 */
export function nodeContextFiles(files: readonly ManifestFile[]): {
  files: ManifestFile[];
  notes: string[];
  skippedScripts: string[];
} {
  const paths = new Set(files.map((file) => file.path));
  const dependencyDirs = localDependencyDirs(files);
  const stripped: string[] = [];
  const rcNotes: string[] = [];
  const out = files.map((file) => {
    const base = posix.basename(file.path);
    const dir = posix.dirname(file.path);
    // A package the repo depends on by path (`file:./addon`) is installed as a dependency: its
    // scripts run like any dependency's (a native addon builds); the repo's own packages' do not.
    if (base === 'package.json' && !dependencyDirs.has(dir)) {
      const { content, removed } = stripOwnScripts(file.content);
      if (removed.length) stripped.push(`${file.path} (${removed.join(', ')})`);
      return { path: file.path, content };
    }
    let result: { text: string; dropped: string[] } | undefined;
    if (base === '.npmrc') result = filterRcFile(file.content.toString('utf8'), 'npmrc');
    else if (base === '.yarnrc') result = filterRcFile(file.content.toString('utf8'), 'yarnrc');
    else if (base === 'pnpm-workspace.yaml') result = filterPnpmWorkspace(file.content.toString('utf8'));
    else if (base === '.yarnrc.yml')
      result = filterYarnrcYml(file.content.toString('utf8'), dir === '.' ? '' : dir, paths);
    if (!result) return file;
    if (result.dropped.length)
      rcNotes.push(
        `${file.path}: ignored ${result.dropped.slice(0, 8).join(', ')}${result.dropped.length > 8 ? ', …' : ''} (registry, credentials, TLS, proxy and path settings are never the repo's)`,
      );
    return { path: file.path, content: Buffer.from(result.text, 'utf8') };
  });
  out.push(...binPlaceholders(files));
  const notes = [...rcNotes];
  if (stripped.length)
    notes.push(
      `the repo's own install scripts were skipped (the install sees only the manifests): ${stripped.slice(0, 6).join('; ')}${stripped.length > 6 ? '; …' : ''} — run them in the box if the tests need them`,
    );
  return { files: out, notes, skippedScripts: stripped };
}
