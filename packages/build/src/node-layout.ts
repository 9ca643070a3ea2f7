import { DEPS_DIR, DEPS_SRC, REPO_DIR } from '@ca-sandbox/docker';
import { shellQuote } from './_utils.js';

/**
 * The node deps layout of an image: the install runs in /deps/src (the manifests, at the repo's
 * relative paths) and its node_modules stay there, per workspace package too; /deps/node_modules
 * is a link to the root one (NODE_PATH and PATH name it). The box's /work/repo/node_modules are
 * real directories in the volume whose entries link here (see linkDependencies).
 */
export const NODE_MODULES_DIR = `${DEPS_SRC}/node_modules`;
/** The pinned package manager, installed with `npm install --global --prefix`. */
export const PM_PREFIX = `${DEPS_DIR}/pm`;

// Workspace links the package managers made point into /deps/src/<package>, which has the
// manifest only: each symlink under /deps/src whose target lies in the manifests tree (not in a
// node_modules) is rewritten to the same path under /work/repo, where the source is in the box
// (dangling in the build, resolved in the box). Links into node_modules stay relative and valid.
const RELINK_JS = `
const fs = require('fs'), path = require('path');
const SRC = ${JSON.stringify(DEPS_SRC)}, REPO = ${JSON.stringify(REPO_DIR)};
let rewritten = 0;
function walk(dir, depth) {
  if (depth > 64) return;
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) { walk(full, depth + 1); continue; }
    if (!entry.isSymbolicLink()) continue;
    const target = path.resolve(dir, fs.readlinkSync(full));
    if (!target.startsWith(SRC + '/')) continue;
    const rel = target.slice(SRC.length + 1);
    if (rel.split('/').includes('node_modules')) continue;
    fs.unlinkSync(full);
    fs.symlinkSync(REPO + '/' + rel, full);
    rewritten++;
  }
}
walk(SRC, 0);
if (rewritten) console.log('ca-sandbox: ' + rewritten + ' workspace link(s) now point into ' + REPO);
`;

/** The install step's last lines for node: workspace links into /work/repo, /deps/node_modules. */
export const NODE_FINISH: readonly string[] = [
  // The base's node, not a `node` bin a dependency put on PATH.
  `PATH=/usr/local/bin:/usr/bin:/bin node -e ${shellQuote(RELINK_JS.trim())}`,
  `mkdir -p ${NODE_MODULES_DIR} && ln -sfn src/node_modules /deps/node_modules`,
];
