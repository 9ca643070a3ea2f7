import { DEPS_SRC } from '@ca-sandbox/docker/contracts';
import { NODE_PREFIX } from './providers/node/layout.js';

/**
 * The dependencies' install scripts, for the vetting report (issue 29). Node: once the install has ended
 * (every process of it killed), the install step walks the installed packages under /deps/src and
 * prints a marker line for each one that declares an install script (preinstall, install,
 * postinstall) or builds natively (a binding.gyp: npm and pnpm run node-gyp for it), and whether
 * pnpm said it ignored its build (pnpm 10 runs only the builds a repo allows). The host keeps them
 * as a label of the deps image, so a cache hit reports them too.
 *
 * What it is: the scripts the installed packages declare, as the install left them. A package's
 * own script ran as the install user and could have rewritten its package.json afterwards; the
 * report says "declared", not "proven".
 */

export const INSTALL_SCRIPT_MARKER = 'ca-sandbox-install-script: ';

/** Label of a deps image: its packages with install scripts (formatInstallScripts). */
export const LABEL_INSTALL_SCRIPTS = 'ca.sandbox.cache.install-scripts';
/** Label of a deps image: the repo's own lifecycle scripts the install skipped (`path (names)`, `; `-joined). */
export const LABEL_SKIPPED_SCRIPTS = 'ca.sandbox.cache.skipped-scripts';

const EVENTS = ['preinstall', 'install', 'postinstall'] as const;
/** At most this many packages are named (a label must stay small); the label says how many more. */
const MAX_LISTED = 200;

export interface InstallScript {
  package: string;
  version: string;
  /** The install events it declares; 'node-gyp' when a binding.gyp builds without one. */
  scripts: string[];
  /** pnpm listed its build as ignored (not run). */
  ignored: boolean;
}

// Runs with the base's own node (never one of the deps' bins on PATH), reads only, prints one
// JSON line per package, in a bounded walk (depth, entries), and never fails the step.
const WALK = `
const fs = require('fs'), path = require('path');
const root = ${JSON.stringify(DEPS_SRC)};
const events = ${JSON.stringify(EVENTS)};
const seen = new Set(); let budget = 400000; let printed = 0;
const ignored = new Set();
try {
  const y = fs.readFileSync(root + '/node_modules/.modules.yaml', 'utf8');
  const m = /^ignoredBuilds:\\n((?:[ \\t]+- .*\\n?)*)/m.exec(y);
  if (m) for (const l of m[1].split('\\n')) { const v = l.replace(/^[ \\t]+- /, '').trim().replace(/^['"]|['"]$/g, ''); if (v) ignored.add(v); }
} catch {}
const pkg = (dir) => {
  let real; try { real = fs.realpathSync(dir); } catch { return; }
  if (seen.has(real)) return; seen.add(real);
  let json; try { json = JSON.parse(fs.readFileSync(real + '/package.json', 'utf8')); } catch { json = undefined; }
  if (json && typeof json.name === 'string') {
    const scripts = json.scripts && typeof json.scripts === 'object' ? json.scripts : {};
    const declared = events.filter((e) => typeof scripts[e] === 'string' && scripts[e].trim());
    if (!declared.includes('install') && !declared.includes('preinstall') && fs.existsSync(real + '/binding.gyp')) declared.push('node-gyp');
    if (declared.length && printed < 2000) {
      printed++;
      console.log(${JSON.stringify(INSTALL_SCRIPT_MARKER)} + JSON.stringify({ p: json.name, v: String(json.version ?? ''), s: declared, i: ignored.has(json.name) || [...ignored].some((x) => x.startsWith(json.name + '@')) }));
    }
  }
  modules(real + '/node_modules', 0);
};
const modules = (dir, depth) => {
  if (depth > 3 || budget <= 0) return;
  let ents; try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of ents) {
    if (--budget <= 0) return;
    if (e.name === '.bin' || e.name === '.cache') continue;
    const p = path.join(dir, e.name);
    if (e.name === '.pnpm') { let s; try { s = fs.readdirSync(p); } catch { continue; } for (const x of s) modules(path.join(p, x, 'node_modules'), depth + 1); continue; }
    if (e.name.startsWith('@')) { modules(p, depth + 1); continue; }
    if (e.isDirectory() || e.isSymbolicLink()) pkg(p);
  }
};
// The root's node_modules and each workspace package's (outside node_modules, a few levels down).
const tree = (dir, depth) => {
  if (depth > 4 || budget <= 0) return;
  let ents; try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of ents) {
    if (!e.isDirectory() || --budget <= 0) continue;
    if (e.name === 'node_modules') modules(path.join(dir, e.name), 0);
    else if (!e.name.startsWith('.')) tree(path.join(dir, e.name), depth + 1);
  }
};
tree(root, 0);
`;

/**
 * Where the Python install's pip writes its report (`pip install --report`, pip >= 22.2): what it
 * resolved and from which archive. In the install step's /tmp, which the step empties at its end.
 */
export const PIP_REPORT = '/tmp/ca-sbx-pip-report.json';

/**
 * Python's counterpart: pip runs a package's own code at install when it builds it from a source
 * archive or a VCS checkout (its setup.py or build backend); a wheel installs without running any.
 * pip's report names each package's archive: one marker per package that was not a wheel. Run by
 * the base's python (an absolute path: /deps/python/bin is on PATH and the install wrote there),
 * isolated (-I -S: no site, no PYTHONPATH, nothing of /deps imported), bounded, never failing.
 */
const PIP_WALK = `
import json
M = ${JSON.stringify(INSTALL_SCRIPT_MARKER)}
try:
    with open(${JSON.stringify(PIP_REPORT)}, 'rb') as f:
        report = json.loads(f.read(16 << 20))
except Exception:
    print(M + 'incomplete')
    raise SystemExit(0)
items = report.get('install') if isinstance(report, dict) else None
if not isinstance(items, list):
    print(M + 'incomplete')
for item in (items if isinstance(items, list) else [])[:2000]:
    if not isinstance(item, dict):
        continue
    meta = item.get('metadata') if isinstance(item.get('metadata'), dict) else {}
    info = item.get('download_info') if isinstance(item.get('download_info'), dict) else {}
    url = info.get('url') if isinstance(info.get('url'), str) else ''
    if 'archive_info' in info and url.split('#')[0].split('?')[0].lower().endswith('.whl'):
        continue
    print(M + json.dumps({'p': str(meta.get('name', '')), 'v': str(meta.get('version', '')), 's': ['sdist-build'], 'i': False}))
`;

/** The install step's lines (after END_INSTALL_PROCESSES): the walks above, quiet on any failure. */
export const INSTALL_SCRIPTS_SCAN = [
  `[ ! -d ${DEPS_SRC}/node_modules ] || [ ! -x ${NODE_PREFIX}/bin/node ] || ${NODE_PREFIX}/bin/node -e ${shellSingleQuote(WALK)} 2>/dev/null || :`,
  // The image's own python (Debian's, or an official image's in /usr/local), never one on PATH.
  `[ ! -f ${PIP_REPORT} ] || for py in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$py" ] && { "$py" -I -S -c ${shellSingleQuote(PIP_WALK)} 2>/dev/null; break; }; done || :`,
].join('\n');

/** The walk's line when pip's report is there but cannot be read (rewritten, cut): the list may lack some. */
const INCOMPLETE_LINE = `${INSTALL_SCRIPT_MARKER}incomplete`;

function shellSingleQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

const NAME = /^(?:@[a-z0-9][a-z0-9._~-]{0,100}\/)?[a-z0-9._~-][a-z0-9._~-]{0,213}$/i;
const VERSION = /^[0-9A-Za-z.+_-]{0,64}$/;
/**
 * The kinds a marker may name: npm's install events, 'node-gyp' (a binding.gyp built without
 * one), 'sdist-build' (pip built the package from source: its setup.py or build backend ran).
 */
const KNOWN_SCRIPTS = new Set<string>([...EVENTS, 'node-gyp', 'sdist-build']);

/** pip 23's lines when it runs a package's own build (PEP 517 backend, or a legacy setup.py install). */
const PIP_BUILD_LINE =
  /^\s*(?:Building wheel for|Running setup\.py install for) ([A-Za-z0-9._-]{1,214})(?:\s|$)/;

/** pip's lines that run a package's code before any build line: its metadata, its build requirements. */
const PIP_COLLECTING = /^\s*Collecting ([A-Za-z0-9._-]{1,214})(?:[\s<>=!~;@[(]|$)/;
const PIP_PREPARE_LINE =
  /^\s*(?:Preparing (?:editable )?metadata \(|Getting requirements to build (?:wheel|editable)|Installing build dependencies|Building editable for|Running setup\.py (?:develop|egg_info) for)/;

/** PEP 503's normal form: pip prints the name as the requirement spelled it, its report as the metadata does. */
function pythonName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/**
 * The lines installScriptsFromOutput reads, kept from the whole output as it comes: the build's
 * tail holds only its last lines, and a build that printed enough after pip's line would push it
 * out. Bounded; past the bound the label says the list may be incomplete.
 */
const MAX_EVIDENCE_LINES = 20_000;
export class InstallScriptsLines {
  readonly lines: string[] = [];
  /** Lines past the bound (an install that printed a flood of them): the label says so. */
  dropped = 0;
  /** The walk could not read pip's report. */
  unreadable = false;

  /** Whether the list read from these lines may lack some (the label's `?`). */
  get incomplete(): boolean {
    return this.dropped > 0 || this.unreadable;
  }

  push(line: string): void {
    if (line.trim() === INCOMPLETE_LINE.trim()) {
      this.unreadable = true;
      return;
    }
    if (
      !line.startsWith(INSTALL_SCRIPT_MARKER) &&
      !PIP_BUILD_LINE.test(line) &&
      !PIP_COLLECTING.test(line) &&
      !PIP_PREPARE_LINE.test(line)
    )
      return;
    // The walk's markers come last (after every process of the install is killed): keep room for them.
    const room = line.startsWith(INSTALL_SCRIPT_MARKER) ? 2 * MAX_EVIDENCE_LINES : MAX_EVIDENCE_LINES;
    if (this.lines.length < room) this.lines.push(line);
    else this.dropped += 1;
  }
}

/**
 * The markers of the build's output, validated (a name npm allows, a plain version, known events
 * only), once per package and version. The install's own code can print marker lines too: what it
 * gains is a row that is not true, never text of its choosing in the report beyond a package name.
 */
export function installScriptsFromOutput(lines: readonly string[]): InstallScript[] {
  const found = new Map<string, InstallScript>();
  // pip's own lines for a build from source: the build's code runs after pip wrote its report and
  // could rewrite it, but it cannot take back a line pip already printed. Version from the report.
  const pipBuilt = new Set<string>();
  // A candidate's metadata is prepared (its code runs) before pip writes its report, and a candidate
  // the resolver then drops is in neither the report nor a build line: the last 'Collecting' names it.
  let collecting: string | undefined;
  for (const line of lines) {
    const built = PIP_BUILD_LINE.exec(line);
    if (built?.[1] && NAME.test(built[1])) pipBuilt.add(pythonName(built[1]));
    const collected = PIP_COLLECTING.exec(line);
    if (collected?.[1]) collecting = NAME.test(collected[1]) ? pythonName(collected[1]) : undefined;
    else if (collecting && PIP_PREPARE_LINE.test(line)) pipBuilt.add(collecting);
    if (!line.startsWith(INSTALL_SCRIPT_MARKER)) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line.slice(INSTALL_SCRIPT_MARKER.length));
    } catch {
      continue;
    }
    const entry = parsed as { p?: unknown; v?: unknown; s?: unknown; i?: unknown };
    if (typeof entry.p !== 'string' || !NAME.test(entry.p)) continue;
    if (typeof entry.v !== 'string' || !VERSION.test(entry.v)) continue;
    if (!Array.isArray(entry.s)) continue;
    const scripts = entry.s.filter(
      (name): name is string => typeof name === 'string' && KNOWN_SCRIPTS.has(name),
    );
    if (scripts.length === 0) continue;
    found.set(`${entry.p}@${entry.v}`, {
      package: entry.p,
      version: entry.v,
      scripts,
      // pnpm ignores Node builds only: a Python build ignored is a forged marker.
      ignored: entry.i === true && !scripts.includes('sdist-build'),
    });
  }
  // Only a marker that says the same (built from source, not ignored) stands for pip's own line: a
  // marker the build printed itself must not take it back.
  for (const entry of found.values())
    if (entry.scripts.includes('sdist-build') && !entry.ignored) pipBuilt.delete(pythonName(entry.package));
  for (const name of pipBuilt)
    found.set(name, { package: name, version: '', scripts: ['sdist-build'], ignored: false });
  return [...found.values()].sort((a, b) => (a.package < b.package ? -1 : a.package > b.package ? 1 : 0));
}

/**
 * `name@version:script+script[!]` space-joined (`!`: ignored), at most MAX_LISTED, then `+N`;
 * `?` when the lines they were read from passed InstallScriptsLines' bound (the list may lack some).
 */
export function formatInstallScripts(scripts: readonly InstallScript[], incomplete = false): string {
  const listed = scripts
    .slice(0, MAX_LISTED)
    .map(
      (entry) => `${entry.package}@${entry.version}:${entry.scripts.join('+')}${entry.ignored ? '!' : ''}`,
    );
  if (scripts.length > MAX_LISTED) listed.push(`+${scripts.length - MAX_LISTED}`);
  if (incomplete) listed.push('?');
  return listed.join(' ');
}

/**
 * A label value back (unknown or malformed parts dropped); `more`: packages the label left out;
 * `incomplete`: the install printed more evidence lines than were kept.
 */
export function parseInstallScripts(label: string | undefined): {
  scripts: InstallScript[];
  more: number;
  incomplete: boolean;
} {
  const scripts: InstallScript[] = [];
  let more = 0;
  let incomplete = false;
  for (const part of (label ?? '').split(' ')) {
    if (/^\+\d{1,7}$/.test(part)) {
      more = Number(part.slice(1));
      continue;
    }
    if (part === '?') {
      incomplete = true;
      continue;
    }
    const match = /^((?:@[^@/\s]+\/)?[^@\s]+)@([^:\s]*):([a-z+-]+)(!?)$/.exec(part);
    if (!match) continue;
    const [, name = '', version = '', list = '', bang] = match;
    if (!NAME.test(name) || !VERSION.test(version)) continue;
    const names = list.split('+').filter((script) => KNOWN_SCRIPTS.has(script));
    if (names.length) scripts.push({ package: name, version, scripts: names, ignored: bang === '!' });
  }
  return { scripts, more, incomplete };
}

/** LABEL_SKIPPED_SCRIPTS's value as its entries (`package.json (prepare)`); none: []. */
export function parseSkippedScripts(label: string | undefined): string[] {
  return (label ?? '').split('; ').filter(Boolean);
}
