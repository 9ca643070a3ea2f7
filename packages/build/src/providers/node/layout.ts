import { DEPS_DIR, DEPS_SRC, REPO_DIR, SYSTEM_PATH } from '@ca-sandbox/docker';
import { shellQuote } from '../../_utils.js';

/**
 * The node deps layout of an image: the install runs in /deps/src (the manifests, at the repo's
 * relative paths) and its node_modules stay there, per workspace package too; /deps/node_modules
 * is a link to the root one (NODE_PATH and PATH name it). The box's /work/repo/node_modules are
 * real directories in the volume whose entries link here (see linkDependencies).
 */
export const NODE_MODULES_DIR = `${DEPS_SRC}/node_modules`;
/**
 * Packages that write into their own folder when they run, so a link into the read-only deps
 * fails them: the box gets a copy of each (its files, not its node_modules) in the volume, see
 * linkDependencies. Only what a package itself writes at a path of its own choosing belongs here;
 * a write a setting, an environment variable or a link baked in the image can redirect is
 * redirected instead (vitest: VITEST_TSBUILDINFO). A copy is a second instance of the package: a
 * dependency that imports it gets the baked one, so a package with module state does not belong.
 */
export const WRITABLE_PACKAGES: Readonly<Record<string, string>> = {
  // node-gyp writes the make files of a dependency's gyp targets at the target's path relative to
  // the build dir: for node_api.gyp under /deps that is outside /work/repo/build, in the root.
  'node-addon-api': "node-gyp writes the make files of node-addon-api's gyp targets next to its path",
  // vue-demi-switch (and its postinstall) rewrite its lib/ files to point at vue 2 or 3: a repo's
  // test script runs `vue-demi-switch 3` (TanStack/store). It keeps no state of its own (it
  // re-exports vue), so a dependency that imports the baked one gets the same vue.
  'vue-demi': 'vue-demi-switch rewrites its lib/ files to point at vue 2 or 3',
};
/**
 * `vitest --typecheck` runs tsc with `--tsBuildInfoFile <vitest's dist>/tsconfig.tmp.tsbuildinfo`
 * (a temp dir only under Yarn PnP; no option moves it), read-only in the box. A copy of vitest in
 * the volume would make it two instances whenever a dependency imports `vitest` itself
 * (`@testing-library/jest-dom/vitest`): the baked one's snapshot matchers then replace the
 * runner's and fail ("The snapshot state for … is not found"). So every vitest in the deps gets
 * that file baked as a link to a file on the box's tmpfs (tsc opens it for writing, which follows
 * the link; a dangling one reads as absent): one name per vitest folder, made at install.
 */
export const VITEST_TSBUILDINFO = { file: 'dist/tsconfig.tmp.tsbuildinfo', dir: '/tmp' } as const;
/** The pinned package manager, installed with `npm install --global --prefix`. */
export const PM_PREFIX = `${DEPS_DIR}/pm`;

/**
 * The rewrite of one pnpm bin shim, as JS for the install's walk (RELINK_JS) and its unit test:
 * every element of its `export NODE_PATH=` values and its `# cmd-shim-target=` line (pnpm 11+
 * compares it when it relinks bins) that is `SRC` or under it becomes the same path under `REPO`.
 */
export const SHIM_REWRITE_JS = `
const SHIM_PATHS = /^([ \\t]*export NODE_PATH=|# cmd-shim-target=)(.*)$/gm;
function movedShim(text, SRC, REPO) {
  // Each element of the value, quoted or not: only one that is SRC or under it.
  return text.replace(SHIM_PATHS, (line, head, value) => head + value.split(':').map((part) => {
    const quote = part.startsWith('"') ? '"' : '';
    const rest = part.slice(quote.length);
    const ours = rest === SRC || rest.startsWith(SRC + '/') || rest.startsWith(SRC + '"');
    return ours ? quote + REPO + rest.slice(SRC.length) : part;
  }).join(':'));
}
`;

// Workspace links the package managers made point into /deps/src/<package> (or /deps/src, the
// workspace root), which has the manifest only: each symlink under /deps/src whose target lies in the manifests tree (not in a
// node_modules) is rewritten to the same path under /work/repo, where the source is in the box
// (dangling in the build, resolved in the box). Links into node_modules stay relative and valid.
// The same walk gives every real vitest folder its tsbuildinfo link (VITEST_TSBUILDINFO), and
// moves the install's own paths in pnpm's bin shims (node_modules/.bin/* are shell scripts that
// export NODE_PATH="/deps/src/node_modules/.pnpm/…"; SHIM_REWRITE_JS) to the same paths under
// /work/repo: a module a tool finds only through NODE_PATH is then the project's instance, as
// everything else it loads (a repo view's dependencies are real folders under /work/repo; with
// links, /work/repo/node_modules/.pnpm leads to the same /deps/src folder as before).
const RELINK_JS = `
const fs = require('fs'), path = require('path'), crypto = require('crypto');
const SRC = ${JSON.stringify(DEPS_SRC)}, REPO = ${JSON.stringify(REPO_DIR)};
const TSBUILDINFO = ${JSON.stringify(VITEST_TSBUILDINFO)};
let rewritten = 0, shims = 0;
${SHIM_REWRITE_JS}
function shimNodePath(file) {
  let text;
  try {
    if (fs.statSync(file).size > 65536) return;
    text = fs.readFileSync(file, 'latin1');
  } catch { return; }
  if (!text.startsWith('#!/bin/sh')) return;
  const moved = movedShim(text, SRC, REPO);
  if (moved === text) return;
  // A shim the install made read-only keeps its paths: the walk goes on.
  try { fs.writeFileSync(file, moved, 'latin1'); shims++; } catch {}
}
function vitestBuildInfo(dir) {
  const file = path.join(dir, TSBUILDINFO.file);
  try { if (!fs.lstatSync(path.dirname(file)).isDirectory()) return; } catch { return; }
  try { if (fs.lstatSync(file).isDirectory()) return; fs.unlinkSync(file); } catch {}
  const id = crypto.createHash('sha256').update(dir).digest('hex').slice(0, 16);
  fs.symlinkSync(TSBUILDINFO.dir + '/vitest-' + id + '.tsbuildinfo', file);
}
function walk(dir, depth) {
  if (depth > 64) return;
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'vitest' && path.basename(dir) === 'node_modules') vitestBuildInfo(full);
      walk(full, depth + 1);
      continue;
    }
    if (entry.isFile()) {
      if (path.basename(dir) === '.bin' && path.basename(path.dirname(dir)) === 'node_modules') shimNodePath(full);
      continue;
    }
    if (!entry.isSymbolicLink()) continue;
    const target = path.resolve(dir, fs.readlinkSync(full));
    // The workspace root itself too (a member whose dependency on the root package is workspace:*).
    if (target !== SRC && !target.startsWith(SRC + '/')) continue;
    const rel = target === SRC ? '' : target.slice(SRC.length + 1);
    if (rel.split('/').includes('node_modules')) continue;
    fs.unlinkSync(full);
    fs.symlinkSync(rel ? REPO + '/' + rel : REPO, full);
    rewritten++;
  }
}
walk(SRC, 0);
if (rewritten) console.log('ca-sandbox: ' + rewritten + ' workspace link(s) now point into ' + REPO);
if (shims) console.log('ca-sandbox: NODE_PATH of ' + shims + ' bin shim(s) now names ' + REPO);
`;

/**
 * Where node and its headers live in the official node images (and the seeded stand-in): node-gyp
 * is pointed there (`npm_config_nodedir`), so a native addon builds in the box offline.
 */
export const NODE_PREFIX = '/usr/local';
/** Our own commands for the box, read-only in the image: the corepack launcher. */
export const BOX_TOOLS_BIN = `${DEPS_DIR}/.ca-sbx/bin`;
/**
 * A writable bin directory on the box's tmpfs (HOME is /tmp), on PATH after the deps' bins and
 * before node's: `corepack enable` puts its shims here, not next to node in the read-only root.
 */
export const USER_BIN = '/tmp/.local/bin';

// `corepack enable`/`disable` write their shims next to `which corepack`, which is node's
// read-only install dir in the box; without --install-directory the launcher names USER_BIN.
// The real corepack is the base's, found on the system PATH (never a dependency's).
const COREPACK_LAUNCHER = `#!/bin/sh
real=$(PATH=${SYSTEM_PATH} command -v corepack) || { echo 'corepack: not in this image' >&2; exit 127; }
case "\${1:-}" in
  enable|disable)
    for arg in "$@"; do
      case "$arg" in --install-directory|--install-directory=*|-h|--help) exec "$real" "$@" ;; esac
    done
    command=$1; shift
    mkdir -p ${USER_BIN} && exec "$real" "$command" --install-directory ${USER_BIN} "$@" ;;
esac
exec "$real" "$@"
`;

/** The install step's last lines for node: workspace links into /work/repo, /deps/node_modules. */
export const NODE_FINISH: readonly string[] = [
  // The base's node, not a `node` bin a dependency put on PATH.
  `PATH=/usr/local/bin:/usr/bin:/bin node -e ${shellQuote(RELINK_JS.trim())}`,
  `mkdir -p ${NODE_MODULES_DIR} && ln -sfn src/node_modules /deps/node_modules`,
  `if PATH=${SYSTEM_PATH} command -v corepack >/dev/null; then mkdir -p ${BOX_TOOLS_BIN} && printf '%s' ${shellQuote(COREPACK_LAUNCHER)} > ${BOX_TOOLS_BIN}/corepack && chmod 755 ${BOX_TOOLS_BIN}/corepack; fi`,
];
