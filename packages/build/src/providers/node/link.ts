import { PassThrough } from 'node:stream';
import {
  BOX_USER,
  DEPS_SRC,
  DOCKER_NAME_PATTERN,
  DockerCommandError,
  DockerEngineError,
  engine,
  REPO_DIR,
  SH_BIN,
} from '@ca-sandbox/docker';
import { z } from 'zod';
import { limitFrom } from '../../_utils.js';
import { ManifestReadError } from '../../errors.js';
import { WRITABLE_PACKAGES } from './layout.js';
import { CHECKED_LOCKFILES } from './lockfiles.js';

export interface LinkResult {
  linked: boolean;
  /** Why nothing was linked: not needed, or the repo has its own node_modules. */
  reason?: string;
  /** node_modules directories made in the volume, repo-relative (`node_modules`, `packages/a/node_modules`). */
  dirs?: string[];
  /** node_modules the repo has itself (or whose folder is not a plain directory): left as they are. */
  kept?: string[];
  /** Entries linked in all. */
  entries?: number;
  /** Packages copied into the volume because they write into their own folder (repo-relative paths). */
  copied?: string[];
  /**
   * What the link made besides `dirs` (yarn's install-state copy, the .yarn folder it made for
   * it), deepest first once reversed: with `dirs`, everything to remove to undo the link.
   */
  made?: string[];
  /**
   * Root lockfiles the install rewrote (yarn berry's install is not immutable): the box has the
   * repo's copy, which no longer matches what was installed, so yarn there may want to install
   * again. The installed copy stays at /deps/src/<name>.
   */
  changedLocks?: string[];
}

// Runs with the base's node (never a `node` bin of a dependency) in a container of the deps
// image with the volume at `root`: for every node_modules of /deps/src (the root's and each
// workspace package's, never one inside another), a real directory at the same place in the
// volume whose entries link to the baked ones; `.bin` and `@scope` folders are real directories
// too, so tools can add to them. Anything the repo has at that path is kept. A copy of yarn berry's
// install state goes in the repo's .yarn so `yarn run` knows the project is installed.
const LINK_JS = `
const fs = require('fs'), path = require('path');
const ROOT = process.argv[1], SRC = process.argv[3];
// Through the box's writable view of its image every package folder takes writes: no copies.
const WRITABLE = SRC === ${JSON.stringify(DEPS_SRC)} ? ${JSON.stringify(Object.keys(WRITABLE_PACKAGES))} : [];
const out = { dirs: [], kept: [], entries: 0, copied: [], made: [] };
// Started ahead (linkDependencies' \`after\`): nothing is read or written until the host says the
// checkout is complete ('go' on stdin); anything else (end of input, a killed exec) links nothing.
if (process.argv[2] === 'wait' && fs.readFileSync(0, 'utf8') !== 'go\\n') {
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}
function isLink(p) { try { return fs.lstatSync(p).isSymbolicLink(); } catch { return false; } }
function exists(p) { try { fs.lstatSync(p); return true; } catch { return false; } }
function plainDir(p) { try { return fs.realpathSync(p) === p && fs.statSync(p).isDirectory(); } catch { return false; } }
function find(dir, rel, acc, depth) {
  if (depth > 32) return;
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const r = rel ? rel + '/' + e.name : e.name;
    if (e.name === 'node_modules') acc.push(r); else find(dir + '/' + e.name, r, acc, depth + 1);
  }
}
function linkAll(from, to) {
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    const src = from + '/' + e.name, dst = to + '/' + e.name;
    if ((e.name === '.bin' || e.name.startsWith('@')) && e.isDirectory()) {
      fs.mkdirSync(dst);
      for (const name of fs.readdirSync(src)) { fs.symlinkSync(src + '/' + name, dst + '/' + name); out.entries++; }
    } else { fs.symlinkSync(src, dst); out.entries++; }
  }
}
// 'check' (a box with a repo view: the install's node_modules are under the checkout already):
// no link, only the lockfile comparison below.
const CHECK_ONLY = process.argv[2] === 'check';
const dirs = [];
if (!CHECK_ONLY) find(SRC, '', dirs, 0);
for (const rel of dirs.sort()) {
  const target = ROOT + '/' + rel;
  if (!plainDir(path.dirname(target)) || exists(target)) { out.kept.push(rel); continue; }
  fs.mkdirSync(target);
  linkAll(SRC + '/' + rel, target);
  out.dirs.push(rel);
}
// A package that writes into its own folder at run time (WRITABLE_PACKAGES) gets a copy of its
// files in the volume at the place it has under /deps/src (its node_modules stays a link). Every
// link of ours on the way there is split into a real directory of links (pnpm's
// .pnpm/<pkg>/node_modules), so its dependencies resolve as before; the repo's entries and .bin
// links to it are pointed at the copy. Links the repo has itself are never split.
function ours(link, target) { try { return fs.readlinkSync(link) === target; } catch { return false; } }
function split(dir) {
  const from = SRC + dir.slice(ROOT.length);
  if (!ours(dir, from)) return;
  fs.unlinkSync(dir);
  fs.mkdirSync(dir);
  for (const name of fs.readdirSync(from)) fs.symlinkSync(from + '/' + name, dir + '/' + name);
}
function materialise(real) {
  const rel = real.slice(SRC.length + 1), dest = ROOT + '/' + rel;
  const parts = rel.split('/');
  let dir = ROOT;
  for (const part of parts.slice(0, -1)) {
    dir += '/' + part;
    if (isLink(dir)) split(dir);
    if (!plainDir(dir)) return undefined;
  }
  if (plainDir(dest)) return dest;
  if (!ours(dest, real)) return undefined;
  fs.unlinkSync(dest);
  fs.cpSync(real, dest, { recursive: true, verbatimSymlinks: true, filter: (p) => p !== real + '/node_modules' });
  if (exists(real + '/node_modules')) fs.symlinkSync(real + '/node_modules', dest + '/node_modules');
  out.copied.push(rel);
  return dest;
}
const copies = [];
for (const rel of out.dirs) {
  for (const name of WRITABLE) {
    const entry = ROOT + '/' + rel + '/' + name;
    if (!isLink(entry)) continue;
    let real;
    try { real = fs.realpathSync(entry); } catch { continue; }
    if (!real.startsWith(SRC + '/') || !fs.statSync(real).isDirectory()) continue;
    const dest = materialise(real);
    if (!dest) continue;
    copies.push([real, dest]);
    if (entry !== dest && isLink(entry)) { fs.unlinkSync(entry); fs.symlinkSync(dest, entry); }
  }
}
for (const rel of copies.length ? out.dirs : []) {
  const bin = ROOT + '/' + rel + '/.bin';
  let names;
  try { names = fs.readdirSync(bin); } catch { continue; }
  for (const name of names) {
    let real;
    try { real = fs.realpathSync(bin + '/' + name); } catch { continue; }
    const hit = copies.find(([from]) => real.startsWith(from + '/'));
    if (!hit) continue;
    fs.unlinkSync(bin + '/' + name);
    fs.symlinkSync(hit[1] + real.slice(hit[0].length), bin + '/' + name);
  }
}
for (const rel of CHECK_ONLY ? [] : ['.yarn/install-state.gz']) {
  const target = ROOT + '/' + rel;
  if (!exists(SRC + '/' + rel) || exists(target)) continue;
  if (!exists(path.dirname(target))) {
    if (!plainDir(ROOT)) continue;
    fs.mkdirSync(path.dirname(target));
    out.made.push(path.dirname(rel));
  }
  // A copy, not a link: yarn rewrites its state when the project changed (a stale lockfile the
  // install rewrote, a manifest edited in the box), and a link into /deps is read-only (EROFS).
  if (plainDir(path.dirname(target))) { fs.copyFileSync(SRC + '/' + rel, target, fs.constants.COPYFILE_EXCL); out.made.push(rel); }
}
// A root lockfile the install rewrote: compared with the checkout's (the repo's file: only a
// regular file of sane size is read, never what a link of it names).
out.changedLocks = [];
function regular(p) { try { const s = fs.lstatSync(p); return s.isFile() && s.size <= 64 * 1024 * 1024; } catch { return false; } }
for (const name of ${JSON.stringify(CHECKED_LOCKFILES)}) {
  if (!regular(SRC + '/' + name) || !regular(ROOT + '/' + name)) continue;
  if (!fs.readFileSync(SRC + '/' + name).equals(fs.readFileSync(ROOT + '/' + name))) out.changedLocks.push(name);
}
process.stdout.write(JSON.stringify(out));
`;

const LinkOutput = z.object({
  dirs: z.array(z.string().max(4096)).max(100_000),
  kept: z.array(z.string().max(4096)).max(100_000),
  entries: z.number().int().min(0),
  copied: z.array(z.string().max(4096)).max(1000),
  made: z.array(z.string().max(4096)).max(16),
  changedLocks: z.array(z.enum(CHECKED_LOCKFILES)).max(CHECKED_LOCKFILES.length).default([]),
});

export interface LinkOptions {
  /** Where the checkout is in the container (default /work/repo). */
  root?: string;
  /**
   * Where the box reaches the installed manifests tree the links point into: DEPS_SRC (default,
   * read-only), or the same tree in the box's writable view of its image (depsSourceIn).
   */
  depsSrc?: string;
  /**
   * The link's time limit (default 120 s); with `after`, counted from the moment `after` settles:
   * the wait for the checkout is bounded by the clone's own limits (it always settles `after`).
   */
  timeoutMs?: number;
  /**
   * Start the link now, link when this settles true: the exec and node start beside the work
   * that writes the checkout (each costs about 100 ms), and nothing is read or written before the
   * checkout is complete. False (or a rejection) ends the exec with nothing linked.
   */
  after?: Promise<boolean>;
  /**
   * Link nothing, only compare the root lockfiles (a box with a repo view, whose node_modules are
   * under the checkout already; `root` is then where the box has its own volume, RAW_REPO_DIR).
   */
  checkOnly?: boolean;
}

/**
 * Makes /work/repo/node_modules (and each workspace package's) real, writable directories in the
 * volume whose entries link to the deps baked at /deps/src: vite's node_modules/.vite,
 * tsbuildinfo files and tool caches land in the volume, the deps stay in the image. Runs in a
 * RUNNING container of the deps image with the volume at `root` (the box, before anything of the
 * repo runs in it: the helper has no /deps), as its user, with the base's node and no
 * NODE_OPTIONS. A node_modules the repo has itself is never replaced.
 */
export async function linkDependencies(
  containerId: string,
  prepared: { linkNodeModules: boolean },
  options: LinkOptions = {},
): Promise<LinkResult> {
  if (!prepared.linkNodeModules) return { linked: false, reason: 'not needed' };
  const root = options.root ?? REPO_DIR;
  const depsSrc = options.depsSrc ?? DEPS_SRC;
  const plainPath = /^\/[A-Za-z0-9._/-]*$/;
  if (!DOCKER_NAME_PATTERN.test(containerId) || !plainPath.test(root) || !plainPath.test(depsSrc)) {
    throw new ManifestReadError('invalid container reference or root for linkDependencies');
  }
  // The link's node starts now and waits on its stdin for the host's word (see LinkOptions.after).
  const gate = options.after ? new PassThrough() : undefined;
  const budget = options.timeoutMs ?? 120_000;
  const deadline = new AbortController();
  const limit = limitFrom(options.after, budget, () => deadline.abort());
  options.after?.then(
    (go) => gate?.end(go ? 'go\n' : ''),
    () => gate?.end(''),
  );
  let linked: Awaited<ReturnType<typeof engine.exec.internal>>;
  try {
    // env -i and the system PATH (an internal exec): the image's node, no NODE_OPTIONS or NODE_PATH.
    linked = await engine.exec.internal(
      containerId,
      [
        SH_BIN,
        '-c',
        'exec node -e "$1" "$2" "$3" "$4"',
        'sh',
        LINK_JS,
        root,
        options.checkOnly ? 'check' : gate ? 'wait' : 'now',
        depsSrc,
      ],
      { user: BOX_USER, signal: deadline.signal, ...(gate ? { input: gate } : {}) },
    );
  } catch (error) {
    if (limit.expired)
      throw new DockerEngineError('exec', 0, `linking node_modules did not finish within ${budget} ms`);
    throw error;
  } finally {
    limit.clear();
  }
  if (linked.exitCode !== 0) throw new DockerCommandError(['exec'], linked.exitCode, linked.stderr);
  const { stdout } = linked;
  const parsed = LinkOutput.safeParse(safeJson(stdout.slice(0, 8 * 1024 * 1024)));
  if (!parsed.success) throw new ManifestReadError('linking node_modules in the box gave no readable result');
  const { dirs, kept, entries, copied, made, changedLocks } = parsed.data;
  if (options.checkOnly)
    return { linked: false, reason: 'node_modules are under the checkout (repo view)', changedLocks };
  if (options.after && !(await options.after.catch(() => false)))
    return { linked: false, reason: 'the checkout was not written', dirs, kept, entries, made };
  if (dirs.length === 0)
    return {
      linked: false,
      reason: kept.length ? 'the repo has its own node_modules' : 'no node_modules in the image',
      dirs,
      kept,
      entries,
      made,
    };
  return { linked: true, dirs, kept, entries, copied, made, changedLocks };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
