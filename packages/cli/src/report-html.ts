import { formatSize } from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import type { SandboxReport } from './lifecycle-api.js';

/**
 * The vetting report as one self-contained HTML page (`report --html <file>`): no script, no
 * request of any kind (the Content-Security-Policy allows nothing but the inline style), and every
 * string escaped twice over: controls and bidi marks made visible as in the terminal
 * (sanitizeName), then the HTML specials. Everything in a report that the repository chose (file
 * names, destinations, commands) is hostile.
 */

/** Past this many rows a table is cut (the JSON has every row); the page stays openable. */
const MAX_ROWS = 5000;

const CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'";

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d2330; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid #d7dbe3; padding-bottom: .25rem; }
.meta { color: #5b6475; } table { border-collapse: collapse; width: 100%; margin: .5rem 0; font-size: 13px; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #eceef3; vertical-align: top; }
th { background: #f5f6f9; } td.path, td.cmd { font-family: ui-monospace, monospace; word-break: break-all; }
.bad { color: #b3261e; font-weight: 600; } .ok { color: #1b7f3b; font-weight: 600; } .warn { color: #9a6700; font-weight: 600; }
.summary { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
.summary dt { font-weight: 600; } .summary dd { margin: 0; } .note { color: #5b6475; font-size: 12px; }
`;

/** Escapes box-chosen text for HTML: controls and bidi marks visible first, then the specials. */
export function escapeHtml(value: unknown): string {
  return sanitizeName(String(value)).replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char,
  );
}

type Cell = string | { html: string };

/** A table; each cell is escaped unless it is markup of ours ({ html }). */
function table(headers: string[], rows: Cell[][], classes: (string | undefined)[] = []): string {
  const shown = rows.slice(0, MAX_ROWS);
  const cell = (value: Cell, index: number) => {
    const cls = classes[index] ? ` class="${classes[index]}"` : '';
    return `<td${cls}>${typeof value === 'string' ? escapeHtml(value) : value.html}</td>`;
  };
  const cut =
    rows.length > MAX_ROWS
      ? `<p class="note">${rows.length - MAX_ROWS} more rows: report --json lists every one.</p>`
      : '';
  return `<table><thead><tr>${headers.map((header) => `<th>${escapeHtml(header)}</th>`).join('')}</tr></thead><tbody>${shown
    .map((row) => `<tr>${row.map(cell).join('')}</tr>`)
    .join('')}</tbody></table>${cut}`;
}

const mark = (text: string, cls: 'bad' | 'ok' | 'warn'): Cell => ({
  html: `<span class="${cls}">${escapeHtml(text)}</span>`,
});

type ChangedFile = SandboxReport['changes']['added'][number];

/**
 * Every changed file once, under the first kind it has (setuid, what git or a host tool runs, new
 * executables, then added, modified, deleted, /tmp), with what happened to it.
 */
function fileRows(changes: SandboxReport['changes']): Cell[][] {
  const kinds: [string, ChangedFile[], ('bad' | 'warn')?][] = [
    ['SETUID', changes.setuid, 'bad'],
    ['RUNS', [...changes.added, ...changes.modified].filter((file) => file.runs), 'warn'],
    ['EXECUTABLE', changes.newExecutables, 'warn'],
    ['added', changes.added],
    ['modified', changes.modified],
    ['deleted', changes.deleted],
    ['tmp', changes.outsideRepo],
    ['deps', changes.inImage],
  ];
  const shown = new Set<string>();
  const rows: Cell[][] = [];
  for (const [kind, files, cls] of kinds)
    for (const file of files) {
      if (shown.has(file.path)) continue;
      shown.add(file.path);
      const happened = cls ? whatHappened(changes, file) : '';
      rows.push([
        cls ? mark(kind, cls) : kind,
        `${typeLetter(file)}${file.mode}`,
        String(file.size),
        file.path,
        [
          happened,
          file.changed ? `changed: ${file.changed.join(', ')}` : '',
          file.target !== undefined ? `-> ${file.target}` : '',
          file.runs ?? '',
          file.contents ? folderContents(file) : '',
        ]
          .filter(Boolean)
          .join('; '),
      ]);
    }
  return rows;
}

type Contents = NonNullable<ChangedFile['contents']>;

/** `ls -l`'s first letter for a row: `d`, `l`, `-`, or `?` for anything else (a fifo, a device, a whiteout). */
export function typeLetter(file: { type: string }): string {
  if (file.type === 'directory') return 'd';
  if (file.type === 'symlink') return 'l';
  return file.type === 'file' ? '-' : '?';
}

/**
 * What a folder row stands for: a new or deleted folder of many entries, or (a row of `modified`,
 * with `changed`) a folder of the clone with many entries modified, not listed one by one.
 */
export function folderContents(folder: { contents?: Contents; changed?: string[] }): string {
  const contents = folder.contents ?? { files: 0, directories: 0, symlinks: 0, other: 0, bytes: 0 };
  const parts = [
    `${contents.files} file(s)`,
    ...(contents.directories ? [`${contents.directories} folder(s)`] : []),
    ...(contents.symlinks ? [`${contents.symlinks} symlink(s)`] : []),
    ...(contents.other ? [`${contents.other} other`] : []),
  ];
  if (folder.changed)
    return `${parts.join(', ')} in it modified, not listed, ${formatSize(contents.bytes)} now (--all-files lists them)`;
  return `holds ${parts.join(', ')} not listed, ${formatSize(contents.bytes)} (--all-files lists them)`;
}

/**
 * Entries a list stands for: its rows and what its folder rows hold. A folded row of `modified`
 * (with `changed`) stands for the entries it counts, not for itself.
 */
export function entryCount(files: readonly ChangedFile[]): number {
  let count = files.length;
  for (const { contents, changed } of files)
    if (contents)
      count += contents.files + contents.directories + contents.symlinks + contents.other - (changed ? 1 : 0);
  return count;
}

/** For a row listed by what it is (SETUID, RUNS, EXECUTABLE): what happened to it. */
export function whatHappened(changes: SandboxReport['changes'], file: ChangedFile): string {
  const under = (folder: ChangedFile) =>
    folder.path === file.path || (folder.contents !== undefined && file.path.startsWith(`${folder.path}/`));
  if (changes.added.some(under)) return 'added';
  if (changes.modified.some((other) => other.path === file.path)) return 'modified';
  if (file.path.startsWith('/tmp/') || file.path.startsWith('/dev/shm/')) return 'outside the repo';
  // Written in the box's view of its image (its deps): never in the clone.
  if ((changes.inImage ?? []).some((other) => other.path === file.path)) return 'written in the deps';
  return 'at the clone already';
}

/** The whole page. */
export function renderReportHtml(report: SandboxReport): string {
  const { source, install, network, isolation, commands, changes } = report;
  const failed = isolation.checks.filter((check) => !check.pass);
  const cloned = source.cloned;
  const summary: [string, Cell][] = [
    ['Sandbox', `${report.id} (${report.keptAt ? `kept at destroy, ${report.keptAt}` : report.status})`],
    ['Source', `${source.source} (repo ${source.repo}), created ${source.createdAt}`],
    [
      'Commit',
      cloned
        ? cloned.commit
          ? `${cloned.commit} (${cloned.signature === 'none' ? 'unsigned' : `${cloned.signature} signature, not verified`}); ${cloned.files} files, ${formatSize(cloned.bytes)} (+ ${formatSize(cloned.gitBytes)} in .git)`
          : `a plain copy: ${cloned.files} files, ${formatSize(cloned.bytes)}`
        : 'not listed at the clone',
    ],
    [
      'Install',
      `${install.provider} via ${install.builder}: ${install.depsInstalled ? install.image : `none (${install.image})`}${install.installFallbacks.length ? `; fallbacks: ${install.installFallbacks.join(', ')}` : ''}`,
    ],
    ['Install scripts', installScriptsLine(install.scripts)],
    ...(install.scripts.skippedOwn.length
      ? ([['Skipped', `the repo's own: ${install.scripts.skippedOwn.join('; ')}`]] as [string, Cell][])
      : []),
    [
      'Network',
      network.refused
        ? mark(`${network.policy}: ${network.refused} request(s) REFUSED, ${network.allowed} allowed`, 'bad')
        : `${network.policy}: ${network.allowed} request(s) allowed, none refused`,
    ],
    [
      'Isolation',
      failed.length
        ? mark(`${failed.length} of ${isolation.checks.length} checks FAILED`, 'bad')
        : mark(`${isolation.checks.length} checks passed (re-run now)`, 'ok'),
    ],
    [
      'Commands',
      `${commands.entries.length} run in the box${commands.complete ? '' : ' (log full: later ones not listed)'}`,
    ],
    [
      'Files',
      changes.state === 'box-not-running'
        ? mark('not listed: the box was not running', 'warn')
        : `${changes.state === 'computed' ? `${entryCount(changes.added)} added, ${entryCount(changes.modified)} modified, ${entryCount(changes.deleted)} deleted` : '/work/repo not compared (no listing of the clone)'}; ${entryCount(changes.outsideRepo)} under /tmp and /dev/shm; ${changes.inImage.length ? `${changes.inImage.length} written in the installed deps; ` : ''}${changes.setuid.length} setuid/setgid; ${changes.newExecutables.length} new executables`,
    ],
    ...(changes.complete || changes.state === 'box-not-running'
      ? []
      : ([
          [
            'Incomplete',
            mark(
              `the file lists are incomplete: ${changes.problems.join('; ') || (changes.state === 'no-baseline' ? 'no listing of the clone to compare with' : 'see the JSON report')}`,
              'bad',
            ),
          ],
        ] as [string, Cell][])),
  ];
  const fileTable = table(['KIND', 'MODE', 'SIZE', 'PATH', 'DETAIL'], fileRows(changes), [
    undefined,
    undefined,
    undefined,
    'path',
  ]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ca-sandbox report: ${escapeHtml(report.id)}</title>
<style>${STYLE}</style></head><body>
<h1>What ${escapeHtml(source.repo)} did in its sandbox</h1>
<p class="meta">ca-sandbox vetting report v${report.version}, made ${escapeHtml(report.generatedAt)}. Every name, path, destination and command below is the repository's own text, shown escaped.</p>
<dl class="summary">${summary.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${typeof value === 'string' ? escapeHtml(value) : value.html}</dd>`).join('')}</dl>
<h2>Network: every egress decision</h2>
${
  network.decisions.length
    ? table(
        ['PHASE', 'DECISION', 'DESTINATION', 'COUNT', 'CREDENTIAL'],
        network.decisions.map((row) => [
          row.phase,
          row.allowed ? 'allowed' : mark('REFUSED', 'bad'),
          row.destination,
          String(row.count),
          row.credential ? `added (${row.credential})` : '',
        ]),
        [undefined, undefined, 'path'],
      )
    : `<p>No request went through the egress gateway${network.boxEgress === 'none' ? '; the box itself had no network.' : '.'}</p>`
}
<h2>Files changed since the clone</h2>
${changes.state === 'box-not-running' ? '<p>The box was not running: its files were not listed.</p>' : fileTable}
${cloned?.runs.length ? `<p>At the clone already, a host tool or git would run: ${cloned.runs.map((file) => `<code>${escapeHtml(file.path)}</code> (${escapeHtml(file.runs ?? '')})`).join(', ')}</p>` : ''}
<h2>Commands run in the box</h2>
${
  commands.entries.length
    ? table(
        ['STARTED', 'VIA', 'USER', 'EXIT', 'DURATION', 'OUTPUT', 'COMMAND'],
        commands.entries.map((entry) => [
          entry.startedAt,
          entry.via,
          entry.user,
          entry.timedOut
            ? mark('timeout', 'warn')
            : entry.outOfMemory
              ? mark('oom', 'warn')
              : String(entry.exitCode ?? entry.error ?? '-'),
          `${(entry.durationMs / 1000).toFixed(1)} s`,
          entry.stdoutBytes === null ? '-' : `${entry.stdoutBytes + (entry.stderrBytes ?? 0)} B`,
          entry.command.join(' '),
        ]),
        [undefined, undefined, undefined, undefined, undefined, undefined, 'cmd'],
      )
    : '<p>None.</p>'
}
<h2>Isolation gate</h2>
${table(
  ['CHECK', 'RESULT', 'EXPECTED', 'SEEN'],
  isolation.checks.map((check) => [
    check.title,
    check.pass ? mark('pass', 'ok') : mark('FAILED', 'bad'),
    check.expected,
    check.seen,
  ]),
)}
<p class="note">When it was handed out: ${isolation.history.map((gate) => escapeHtml(`${gate.phase} ${gate.at}: ${gate.ok ? 'passed' : 'REFUSED'}`)).join('; ') || 'no gate recorded'}.</p>
<h2>What this report cannot show</h2>
<ul>${report.notRecorded.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>
</body></html>
`;
}

/** How a kind of install-time code reads where its marker name does not say it (build's install-scripts.ts). */
const SCRIPT_KINDS: Record<string, string> = { 'sdist-build': 'built from source: its build code ran' };

/** The dependencies' install scripts in one line: which packages declare which, pnpm's ignored ones marked. */
export function installScriptsLine(scripts: SandboxReport['install']['scripts']): string {
  if (!scripts.recorded)
    return 'install scripts not recorded (no install, or an image built before this version)';
  if (scripts.declared.length === 0 && scripts.incomplete)
    return 'none found, INCOMPLETE: the install printed more lines than were kept';
  if (scripts.declared.length === 0)
    return scripts.note ? sanitizeName(scripts.note) : 'no installed package declares an install script';
  const shown = scripts.declared
    .slice(0, 12)
    .map(
      (entry) =>
        `${sanitizeName(entry.package)}${entry.version ? `@${sanitizeName(entry.version)}` : ''} (${entry.scripts.map((kind) => SCRIPT_KINDS[kind] ?? kind).join(', ')}${entry.ignored ? ': ignored by pnpm' : ''})`,
    );
  const rest = scripts.declared.length - shown.length + scripts.more;
  const incomplete = scripts.incomplete
    ? ' (INCOMPLETE: the install printed more lines than were kept, some may be missing)'
    : '';
  return `${scripts.declared.length + scripts.more} installed package(s) declare install scripts: ${shown.join(', ')}${rest > 0 ? `, and ${rest} more (--json)` : ''}${incomplete}`;
}
