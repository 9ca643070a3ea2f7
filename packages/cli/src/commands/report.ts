import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { formatSize } from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from '../errors.js';
import { writeJson } from '../json-stream.js';
import type { SandboxReport } from '../lifecycle-api.js';
import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';
import {
  entryCount,
  folderContents,
  installScriptsLine,
  renderReportHtml,
  typeLetter,
  whatHappened,
} from '../report-html.js';

/**
 * `ca-sandbox report <id>`: what the sandbox's repository did, on one page: its source, its
 * install, every egress decision of every phase, the isolation gate (re-run now), and what the
 * report does not record yet. `--json` gives the versioned structure (SandboxReportSchema). Every
 * string the repository chose passes the output layer's neutraliser (out.table, sanitizeName).
 */
/** The report of `id`'s box, or once the box is gone, the last one destroy --keep-report kept. */
export async function reportOrKept(
  id: string,
  options: { allFiles?: boolean } = {},
): Promise<{ report: SandboxReport; keptPath?: string }> {
  const lifecycle = await loadLifecycle();
  try {
    return { report: await lifecycle.sandboxReport(id, options) };
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'SANDBOX_NOT_FOUND') throw error;
    const kept = await lifecycle.lastKeptReport(id);
    if (!kept) throw error;
    return { report: kept.report, keptPath: kept.path };
  }
}

export async function reportCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown> = {},
): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const html = options.html === undefined ? undefined : String(options.html);
  if (html !== undefined && !html.trim()) throw new UsageError('--html needs a file name', 'INVALID_OPTIONS');
  const allFiles = options.allFiles === true;
  const { report, keptPath } = await reportOrKept(id, { allFiles });
  if (keptPath) out.info(`${id} was destroyed: this is the report kept then (${keptPath})`);
  if (html !== undefined) {
    await writeHtml(html, report);
    out.info(`report page written: ${resolve(html)} (open it in a browser; it loads nothing)`);
    if (!out.options.json) return 0;
  }
  if (out.options.json) {
    // Piece by piece: 100,000 changed files are never one string of the whole report.
    await writeJson(out.streams.stdout, report);
    return 0;
  }
  const clean = (text: string) => sanitizeName(text);
  const { source, install, network, isolation } = report;
  out.result(
    `report of ${clean(report.id)} (${report.keptAt ? `kept at destroy, ${clean(report.keptAt)}` : clean(report.status)}), made ${clean(report.generatedAt)}`,
  );
  out.result(
    `source     ${clean(source.source)} (repo ${clean(source.repo)}), created ${clean(source.createdAt)}`,
  );
  const { cloned } = source;
  if (cloned) {
    const commit = cloned.commit
      ? `commit ${clean(cloned.commit)} (${cloned.signature === 'none' ? 'unsigned' : `${cloned.signature} signature, not verified`})`
      : 'a plain copy (no commit)';
    out.result(
      `           ${commit}; ${cloned.files} file(s), ${cloned.directories} folder(s), ${cloned.symlinks} symlink(s); ${formatSize(cloned.bytes)} (+ ${formatSize(cloned.gitBytes)} in .git)`,
    );
    for (const file of cloned.runs)
      out.result(`           at the clone already: ${clean(file.path)}: ${clean(file.runs ?? '')}`);
  } else
    out.result('           the clone was not listed (a box made before this version, or the listing failed)');
  const deps = install.depsInstalled
    ? `${clean(install.image)}${install.imageCacheHit ? ' (cache hit)' : ''}`
    : `none (${clean(install.image)}, the bare toolchain image)`;
  out.result(`install    ${clean(install.provider)} via ${clean(install.builder)}: ${deps}`);
  const tools = Object.entries(install.toolchain).map(([tool, version]) => `${tool} ${version}`);
  if (tools.length) out.result(`tools      ${clean(tools.join(' · '))}`);
  for (const fallback of install.installFallbacks)
    out.result(`           install fallback taken: ${clean(fallback)}`);
  if (install.imageBytes !== null)
    out.result(`           image ${formatSize(install.imageBytes)} (the base's layers included)`);
  out.result(`scripts    ${installScriptsLine(install.scripts)}`);
  for (const skipped of install.scripts.skippedOwn)
    out.result(`           the repo's own, skipped by the install: ${clean(skipped)}`);
  const reach =
    network.boxEgress === 'none'
      ? 'the box itself had no network'
      : `the box could reach ${clean(network.allow.join(', ') || 'its allowlist')}`;
  out.result(
    `network    ${clean(network.policy)} (${clean(network.runtime)}): ${reach}; ${network.allowed} request(s) allowed, ${network.refused} refused through the gateway`,
  );
  // A cache hit ran no install: the requests of the one that built the image were another create's.
  if (install.depsInstalled && install.imageCacheHit)
    out.result(
      "           no install ran for this box (a cache hit): the requests of the install that built its image were that create's, not listed here",
    );
  for (const credential of network.credentials)
    out.result(
      `           the gateway added ${clean(credential.header)} for ${clean(credential.domain)} (from ${clean(credential.source)}): the box never held it`,
    );
  const credentialColumn = network.decisions.some((row) => row.credential);
  if (network.decisions.length)
    out.table(
      ['PHASE', 'DECISION', 'DESTINATION', 'COUNT', ...(credentialColumn ? ['CREDENTIAL'] : [])],
      network.decisions.map((row) => [
        row.phase,
        row.allowed ? 'allowed' : 'REFUSED',
        row.destination,
        String(row.count),
        ...(credentialColumn ? [row.credential ? `added (${row.credential})` : '-'] : []),
      ]),
    );
  const failed = isolation.checks.filter((check) => !check.pass);
  out.result(
    `isolation  ${failed.length === 0 ? `${isolation.checks.length} checks passed` : `${failed.length} of ${isolation.checks.length} checks FAILED`} (re-run now${isolation.running ? '' : ', box stopped'})`,
  );
  for (const check of failed)
    out.result(`  FAILED ${clean(check.id)}: expected ${clean(check.expected)}, seen ${clean(check.seen)}`);
  const starts = isolation.history.filter((gate) => gate.phase === 'start').length;
  const created = isolation.history.find((gate) => gate.phase === 'create');
  const refusedStarts = isolation.history.filter((gate) => gate.phase === 'start' && !gate.ok).length;
  const handedOut = created
    ? `${created.checks.filter((check) => check.pass).length} of ${created.checks.length} passed at create`
    : 'no gate recorded at create (a box made before this version)';
  const restarts = starts
    ? `checked again at ${starts} restart(s), ${refusedStarts} refused`
    : 'never restarted';
  out.result(`           ${handedOut}; ${restarts}`);
  for (const gate of isolation.history.filter((entry) => !entry.ok))
    for (const check of gate.checks.filter((row) => !row.pass))
      out.result(
        `  ${gate.phase} ${clean(gate.at)} FAILED ${clean(check.id)}: expected ${clean(check.expected)}, seen ${clean(check.seen)}`,
      );
  const { entries, complete } = report.commands;
  out.result(
    `commands   ${entries.length} run in the box${complete ? '' : ' (the log reached its bound: later ones are not listed)'}`,
  );
  if (entries.length)
    out.table(
      ['STARTED', 'VIA', 'EXIT', 'DURATION', 'OUTPUT', 'COMMAND'],
      entries.map((entry) => [
        entry.startedAt,
        entry.via,
        entry.timedOut ? 'timeout' : entry.outOfMemory ? 'oom' : String(entry.exitCode ?? '-'),
        `${(entry.durationMs / 1000).toFixed(1)}s`,
        entry.stdoutBytes === null ? '-' : `${entry.stdoutBytes + (entry.stderrBytes ?? 0)} B`,
        entry.command.join(' '),
      ]),
    );
  printChanges(out, report.changes, allFiles);
  out.info(`what this report cannot show: ${report.notRecorded.join('; ')}`);
  return 0;
}

/** At most this many rows of files in the terminal; --json has them all. */
const MAX_FILE_ROWS = 40;

type Changes = SandboxReport['changes'];
type ChangedFile = Changes['added'][number];

/**
 * The files part: counts, then the rows that matter most first (setuid, what git or a host tool
 * runs, new executables), then the rest, bounded.
 */
function printChanges(out: Output, changes: Changes, allFiles: boolean): void {
  if (changes.state === 'box-not-running') {
    out.result('files      not listed: the box is not running (start it, then report again)');
    return;
  }
  const repo =
    changes.state === 'computed'
      ? `${entryCount(changes.added)} added, ${entryCount(changes.modified)} modified, ${entryCount(changes.deleted)} deleted in /work/repo since the clone`
      : '/work/repo not compared (no listing of the clone: a box made before this version, or it failed)';
  const more = [
    `${entryCount(changes.outsideRepo)} under /tmp and /dev/shm`,
    ...(changes.inImage.length ? [`${changes.inImage.length} written in the installed deps`] : []),
    `${changes.setuid.length} setuid/setgid`,
    `${changes.newExecutables.length} new executable(s)`,
  ];
  out.result(`files      ${repo}; ${more.join(', ')}${changes.complete ? '' : ' (INCOMPLETE)'}`);
  for (const problem of changes.problems) out.result(`           incomplete: ${sanitizeName(problem)}`);
  type Row = { kind: string; file: ChangedFile; inside: number; bytes: number };
  const each = (kind: string, files: ChangedFile[]): Row[] =>
    files.map((file) => ({ kind, file, inside: 0, bytes: 0 }));
  const rows: Row[] = [
    ...each('SETUID', changes.setuid),
    ...each(
      'RUNS',
      [...changes.added, ...changes.modified].filter((file) => file.runs),
    ),
    ...each('EXECUTABLE', changes.newExecutables),
    // --all-files: each entry its own row, none grouped under its folder.
    ...(allFiles ? each('added', changes.added) : byFolder('added', changes.added)),
    ...each('modified', changes.modified),
    ...each('deleted', changes.deleted),
    ...(allFiles ? each('tmp', changes.outsideRepo) : byFolder('tmp', changes.outsideRepo)),
    ...each('deps', changes.inImage),
  ];
  // Each file once, under the first kind it has above.
  const shown = new Set<string>();
  const unique = rows.filter((row) => !shown.has(row.file.path) && shown.add(row.file.path));
  if (unique.length === 0) return;
  const shownRows = allFiles ? unique.length : MAX_FILE_ROWS;
  out.table(
    ['KIND', 'MODE', 'SIZE', 'PATH', 'DETAIL'],
    unique.slice(0, shownRows).map(({ kind, file, inside, bytes }) => [
      kind,
      // A whiteout (what the box removed of its image or its installed deps) has no mode or size
      // of its own to show: the entry is gone, whether it was a file or a whole folder.
      whiteout(file) ? '' : `${typeLetter(file)}${file.mode}`,
      whiteout(file) ? '' : String(file.size),
      file.path,
      [
        kind === kind.toUpperCase() ? whatHappened(changes, file) : '',
        inside ? `${inside} entries inside (${formatSize(bytes)})` : '',
        fileDetail(file),
      ]
        .filter(Boolean)
        .join('; '),
    ]),
  );
  if (unique.length > shownRows)
    out.result(
      `           … ${unique.length - shownRows} more rows (--all-files prints them all, --json lists every file)`,
    );
}

/**
 * A folder that is new stands for everything under it (one row with a count, not the thousand
 * files of a cache): `files` sorted by path, so a folder comes before what it holds.
 */
function byFolder(kind: string, files: ChangedFile[]) {
  const folders = new Set(files.filter((file) => file.type === 'directory').map((file) => file.path));
  const rows = new Map<string, { kind: string; file: ChangedFile; inside: number; bytes: number }>();
  for (const file of files) {
    const parts = file.path.split('/');
    let top: string | undefined;
    for (let depth = 2; depth < parts.length && top === undefined; depth += 1) {
      const ancestor = parts.slice(0, depth).join('/');
      if (folders.has(ancestor)) top = ancestor;
    }
    const row = top === undefined ? undefined : rows.get(top);
    // A folder the report already summarised counts what it holds (its notable rows show by kind).
    if (row?.file.contents) continue;
    if (row) {
      row.inside += 1;
      row.bytes += file.size;
    } else rows.set(file.path, { kind, file, inside: 0, bytes: 0 });
  }
  return [...rows.values()];
}

/** A row for an overlay whiteout: removed, and listed as neither a file, a folder nor a link. */
function whiteout(file: ChangedFile): boolean {
  return file.changed?.includes('removed') === true && typeLetter(file) === '?';
}

function fileDetail(file: ChangedFile): string {
  return [
    file.changed ? `changed: ${file.changed.join(', ')}` : '',
    file.target !== undefined ? `-> ${file.target}` : '',
    file.runs ?? '',
    file.contents ? folderContents(file) : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/** Writes the page to a new file: an existing one is the user's, never overwritten. */
async function writeHtml(path: string, report: SandboxReport): Promise<void> {
  try {
    await writeFile(path, renderReportHtml(report), { flag: 'wx', mode: 0o644 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST')
      throw new UsageError(
        `--html ${path}: the file exists (it is not overwritten)`,
        'DESTINATION_EXISTS',
        'choose another name or remove it first',
      );
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'EISDIR')
      throw new UsageError(`--html ${path}: cannot write there (${code})`, 'INVALID_DESTINATION');
    throw error;
  }
}
