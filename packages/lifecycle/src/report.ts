import { LABEL_INSTALL_SCRIPTS, LABEL_SKIPPED_SCRIPTS, parseInstallScripts } from '@ca-sandbox/build';
import { engine, hasRepoView, LABEL_ID } from '@ca-sandbox/docker';
import { z } from 'zod';
import { cloneFacts } from './clone-facts.js';
import { commandLogPath, MAX_LOG_BYTES, readRecords } from './command-log.js';
import { SandboxNotFoundError } from './errors.js';
import { ChangeCollector, noChanges } from './file-changes.js';
import { listBox, readCloneListing } from './file-listing.js';
import { readGateLog } from './gate-log.js';
import { egressLog, verifySandbox } from './list.js';
import { ListingEntries } from './listing-format.js';
import { boxName } from './names.js';
import { LABEL_INSTANCE, recordFromInspect } from './record.js';

/**
 * The vetting report (issue 29): what the repository's sandbox did, in one structure, for a person
 * deciding whether to trust the repository and for an agent ending a session. Versioned: a field's
 * meaning never changes within a version. Everything in it that the repository chose (egress
 * destinations, names) is data: printers neutralise it (`report` in the CLI prints through the
 * output layer), and JSON carries it escaped.
 */
export const REPORT_VERSION = 1;

const CommandEntrySchema = z.strictObject({
  via: z.enum(['exec', 'shell']),
  command: z.array(z.string()),
  user: z.string(),
  startedAt: z.string(),
  durationMs: z.number(),
  exitCode: z.number().int().nullable(),
  timedOut: z.boolean(),
  outOfMemory: z.boolean(),
  stdoutBytes: z.number().int().nullable(),
  stderrBytes: z.number().int().nullable(),
  /** Set when the command was cut short (interrupted, the engine failed): the error's code. */
  error: z.string().optional(),
});

/** The command log of `id` (command-log.ts), oldest first; a line that does not parse is skipped. */
async function readCommands(
  id: string,
): Promise<{ entries: z.infer<typeof CommandEntrySchema>[]; complete: boolean }> {
  const { lines, complete } = await readRecords(commandLogPath(id), MAX_LOG_BYTES);
  const entries = lines.flatMap((line) => {
    const parsed = CommandEntrySchema.safeParse(line);
    return parsed.success ? [parsed.data] : [];
  });
  return { entries, complete };
}

const ChangedFileSchema = z.strictObject({
  path: z.string(),
  type: z.enum(['file', 'directory', 'symlink', 'other']),
  /** Octal permission bits, setuid/setgid/sticky included ('755', '4755'). */
  mode: z.string(),
  size: z.number(),
  target: z.string().optional(),
  /** For a modified entry: content, mode, type or target. */
  changed: z.array(z.string()).optional(),
  /** Why git or a host tool runs it once copied out (a hook, .git/config, .envrc, .vscode tasks...). */
  runs: z.string().optional(),
  /**
   * A folder added or deleted whole with more than FOLDER_ROWS entries under it: the counts of
   * those this list does not have as rows (`report --all-files` lists them). Entries under it
   * that git or a host tool runs are rows of the list all the same (not counted here), setuid
   * files and new executables are in their own lists. In `modified`: a folder of the clone with
   * more than FOLDER_ROWS entries directly in it modified (the row's `changed` says what changed
   * in them): the counts of those modified entries, not of the folder's others.
   */
  contents: z
    .strictObject({
      files: z.number().int(),
      directories: z.number().int(),
      symlinks: z.number().int(),
      other: z.number().int(),
      bytes: z.number(),
    })
    .optional(),
});

const FileChangesSchema = z.strictObject({
  /**
   * computed: compared with the listing the create took at the clone; no-baseline: the box's
   * files are listed but there is nothing to compare /work/repo with (a box made before this
   * version, or the clone's listing failed); box-not-running: nothing could be listed (a report
   * made before this version: a stopped box's volume is listed now, its tmpfs went with it).
   */
  state: z.enum(['computed', 'no-baseline', 'box-not-running']),
  /** ISO times: the clone's listing, the box's. */
  baselineAt: z.string().optional(),
  listedAt: z.string().optional(),
  /** False when a listing was cut at its bound or find could not read a directory (see problems). */
  complete: z.boolean(),
  problems: z.array(z.string()),
  added: z.array(ChangedFileSchema),
  modified: z.array(ChangedFileSchema),
  deleted: z.array(ChangedFileSchema),
  /** node_modules folders and links into /deps the deps link made at create (not listed one by one). */
  depsLinks: z.number().int(),
  /** Everything under the box's /tmp (also its HOME, so caches too) and /dev/shm. */
  outsideRepo: z.array(ChangedFileSchema),
  /**
   * What the box wrote in its writable view of its image (/.ca-sbx-image: a dependency's file
   * written, rewritten, or removed: `changed: ['removed']`). Absent in a report of a box without one.
   */
  inImage: z.array(ChangedFileSchema).default([]),
  setuid: z.array(ChangedFileSchema),
  newExecutables: z.array(ChangedFileSchema),
});
export type ReportedChanges = z.infer<typeof FileChangesSchema>;

const GateCheckSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  expected: z.string(),
  seen: z.string(),
  pass: z.boolean(),
});

const GateEntrySchema = z.strictObject({
  phase: z.enum(['create', 'start']),
  at: z.string(),
  ok: z.boolean(),
  checks: z.array(GateCheckSchema),
});

const EgressRowSchema = z.strictObject({
  phase: z.string(),
  destination: z.string(),
  allowed: z.boolean(),
  /** The gateway added this domain's credential to these requests (`--credential`; never the value). */
  credential: z.string().optional(),
  count: z.number().int(),
});

export const SandboxReportSchema = z.strictObject({
  version: z.literal(REPORT_VERSION),
  /** ISO time the report was made. */
  generatedAt: z.string(),
  id: z.string(),
  /** The box's state now (running, exited, ...). */
  status: z.string(),
  source: z.strictObject({
    /** Where it came from: a URL without credentials, or a local path. */
    source: z.string(),
    repo: z.string(),
    /** ISO time of the create. */
    createdAt: z.string(),
    /** What the clone's listing says of the checkout, before anything of the repo ran; null without one. */
    cloned: z
      .strictObject({
        /** The commit checked out; null for a plain copy. */
        commit: z.string().nullable(),
        /** The signature kind in the commit's header: present or not, never verified (no key at hand). */
        signature: z.enum(['none', 'pgp', 'ssh', 'x509', 'other']),
        files: z.number().int(),
        directories: z.number().int(),
        symlinks: z.number().int(),
        /** Bytes of the regular files outside .git, and in it. */
        bytes: z.number(),
        gitBytes: z.number(),
        /** Files already in the checkout that git or a host tool would run once copied out. */
        runs: z.array(ChangedFileSchema),
        listedAt: z.string(),
      })
      .nullable(),
  }),
  install: z.strictObject({
    provider: z.string(),
    builder: z.string(),
    image: z.string(),
    imageCacheHit: z.boolean(),
    /** The source that built the deps image (a cache hit is only ever this source). */
    imageSource: z.string(),
    dephash: z.string(),
    depsInstalled: z.boolean(),
    toolchain: z.record(z.string(), z.string()),
    /** What the install did besides its recipe (npm-legacy-peer-deps, ...). */
    installFallbacks: z.array(z.string()),
    /** Bytes of the image the box runs (the base's included); null when it is gone. */
    imageBytes: z.number().nullable(),
    /**
     * The dependencies' code the install ran or may have run. Node: every installed package that
     * declares an install script (preinstall, install, postinstall) or builds natively (node-gyp),
     * as the install left them (a package could rewrite its own package.json: declared, not
     * proven); `ignored`: pnpm did not run it. Python: every package pip built from source
     * ('sdist-build': its setup.py or build backend ran); wheels run nothing. Go and Rust fetch
     * without running any (`note` says so). recorded false: an image built before this version,
     * or the bare toolchain image.
     */
    scripts: z.strictObject({
      recorded: z.boolean(),
      declared: z.array(
        z.strictObject({
          package: z.string(),
          version: z.string(),
          scripts: z.array(z.string()),
          ignored: z.boolean(),
        }),
      ),
      /** Packages with scripts past the label's bound (not listed). */
      more: z.number().int(),
      /** The repo's own lifecycle scripts the install skipped: `package.json path (names)`. */
      skippedOwn: z.array(z.string()),
      /** Why there is nothing to list for this provider (Go, Rust: their fetch runs no package code). */
      note: z.string().optional(),
      /** True when the install printed more evidence lines than were kept: some may be missing. */
      incomplete: z.boolean().optional(),
    }),
  }),
  network: z.strictObject({
    policy: z.string(),
    runtime: z.string(),
    /** What the box itself could reach: nothing, or its allowlist. */
    boxEgress: z.enum(['none', 'allowlist']),
    allow: z.array(z.string()),
    /** Headers the gateway added for the box (`--credential`): domain, header, host source; never a value. */
    credentials: z.array(z.strictObject({ domain: z.string(), header: z.string(), source: z.string() })),
    /** Every egress decision of every phase (clone, install, box), refusals first. */
    decisions: z.array(EgressRowSchema),
    allowed: z.number().int(),
    refused: z.number().int(),
  }),
  isolation: z.strictObject({
    /** The gate re-run when the report was made; `history` has the rows of create and each start. */
    checkedAt: z.string(),
    ok: z.boolean(),
    running: z.boolean(),
    checks: z.array(GateCheckSchema),
    /** The gate as it ran when the box was handed out: at create and at each start, oldest first. */
    history: z.array(GateEntrySchema),
    /** False once the gate log reached its bound: later gates ran but are not listed. */
    historyComplete: z.boolean(),
  }),
  /** Every command run in the box (exec, shell; CLI, MCP, plugin), oldest first. */
  commands: z.strictObject({
    entries: z.array(CommandEntrySchema),
    /** False once the log reached its bound: later commands ran but are not listed. */
    complete: z.boolean(),
  }),
  /** What changed in the box's files since the clone: /work/repo, /tmp, setuid files, new executables. */
  changes: FileChangesSchema,
  /** Set in a report kept at destroy (`destroy --keep-report`): when it was kept, the box then removed. */
  keptAt: z.string().optional(),
  /** What this version does not record yet, so that a reader never takes silence for "nothing". */
  notRecorded: z.array(z.string()),
});
export type SandboxReport = z.infer<typeof SandboxReportSchema>;

const NOT_RECORDED = [
  'whether a declared install script really ran (the install could rewrite what its packages declare)',
];

/** Providers whose install fetches without running any package code: what the report says of them. */
const FETCH_RUNS_NO_CODE: Record<string, string> = {
  go: 'go mod download runs no code of the modules: cgo and go generate run only when code in the box builds',
  rust: 'cargo fetch runs no code of the crates: build scripts and proc macros run only when code in the box builds',
};

/** The report of sandbox `id` (its box in any state). SandboxNotFoundError when there is no box. */
export async function sandboxReport(
  id: string,
  options: { now?: Date; allFiles?: boolean } = {},
): Promise<SandboxReport> {
  const now = options.now ?? new Date();
  const inspect = await engine.container.find(boxName(id));
  if (!inspect || inspect.Config.Labels[LABEL_ID] !== id) throw new SandboxNotFoundError(id);
  const record = recordFromInspect(inspect);
  const [decisions, gate, logged, changes, gates, image] = await Promise.all([
    egressLog(id),
    verifySandbox(id),
    readCommands(id),
    fileChanges(
      id,
      inspect.Config.Labels[LABEL_INSTANCE] ?? '',
      { ...inspect.State, runtime: inspect.HostConfig.Runtime ?? 'runc', repoView: hasRepoView(inspect) },
      options.allFiles === true,
    ),
    readGateLog(id),
    // The image the box runs, by id: its tag may name a newer build by now.
    engine.image.inspect(inspect.Image ?? record.image).catch(() => undefined),
  ]);
  // A log left by an earlier sandbox of the same name (its box removed by hand, never destroyed)
  // holds commands older than this box: they are not this box's.
  const boxCreated = Date.parse(inspect.Created ?? '');
  const thisBox = (at: string) => Number.isNaN(boxCreated) || Date.parse(at) >= boxCreated - 1000;
  const commands = { ...logged, entries: logged.entries.filter((entry) => thisBox(entry.startedAt)) };
  const history = gates.lines.flatMap((line) => {
    const parsed = GateEntrySchema.safeParse(line);
    return parsed.success && thisBox(parsed.data.at) ? [parsed.data] : [];
  });
  // The known fields alone: a row written by another version may carry more.
  const refusalsFirst = decisions
    .map(({ phase, destination, allowed, count, credential }) => ({
      phase,
      destination,
      allowed,
      count,
      ...(credential ? { credential } : {}),
    }))
    .sort((a, b) => Number(a.allowed) - Number(b.allowed));
  const count = (allowed: boolean) =>
    decisions.filter((row) => row.allowed === allowed).reduce((sum, row) => sum + row.count, 0);
  // Built to the schema's type, not parsed through it: a zod parse copies every one of 100,000
  // changed files again (the tests parse what the CLI and MCP give with the schema).
  const report: SandboxReport = {
    version: REPORT_VERSION,
    generatedAt: now.toISOString(),
    id,
    status: record.status,
    source: { source: record.source, repo: record.repo, createdAt: record.createdAt, cloned: changes.cloned },
    install: {
      provider: record.provider,
      builder: record.builder,
      image: record.image,
      imageCacheHit: record.imageCacheHit,
      imageSource: record.imageSource,
      dephash: record.dephash,
      depsInstalled: record.depsInstalled,
      toolchain: record.toolchain,
      installFallbacks: record.installFallbacks,
      imageBytes: image?.Size ?? null,
      scripts: installScripts(image?.Config.Labels, record.provider),
    },
    network: {
      policy: record.network,
      runtime: record.runtime,
      boxEgress: record.network === 'allowlist' ? 'allowlist' : 'none',
      allow: record.allow,
      credentials: record.credentials,
      decisions: refusalsFirst,
      allowed: count(true),
      refused: count(false),
    },
    isolation: {
      checkedAt: now.toISOString(),
      ok: gate.ok,
      running: gate.running,
      checks: gate.checks.map((check) => ({
        id: check.id,
        title: check.title,
        expected: check.expected,
        seen: check.seen,
        pass: check.pass,
      })),
      history,
      historyComplete: gates.complete,
    },
    commands,
    changes: changes.changes,
    notRecorded: NOT_RECORDED,
  };
  return report;
}

/**
 * What changed in the files of `id`'s box since its clone (file-changes.ts; the box must run), and
 * what the clone's listing says of the source.
 */
async function fileChanges(
  id: string,
  instance: string,
  state: { Running: boolean; Paused: boolean; runtime: string; repoView: boolean },
  allFiles: boolean,
): Promise<{ changes: ReportedChanges; cloned: SandboxReport['source']['cloned'] }> {
  const none = noChanges();
  const baseline = await readCloneListing(id, instance);
  const before = baseline?.listing;
  const cloned = baseline && before ? { ...cloneFacts(before), listedAt: baseline.meta.takenAt } : null;
  // The box's listing is compared as it comes: only what changed is ever held.
  const collector = new ChangeCollector(before ?? { entries: new ListingEntries(), malformed: 0 }, {
    allFiles,
    repoView: state.repoView,
  });
  const now = await listBox(id, collector, {
    running: state.Running,
    paused: state.Paused,
    runtime: state.runtime,
  }).catch((error: unknown) => {
    // A stopped box whose volume cannot be listed (its lister cannot start): said, not thrown.
    if (state.Running) throw error;
    return undefined;
  });
  if (!now) return { changes: { state: 'box-not-running', complete: false, problems: [], ...none }, cloned };
  const { malformed, ...compared } = collector.finish();
  const listedAt = new Date().toISOString();
  const unread = malformed + (before?.malformed ?? 0);
  const problems = [
    ...now.problems,
    ...(unread
      ? [
          `${unread} record(s) of the listings could not be read (a listing cut at its bound, or a field find printed that this version does not read)`,
        ]
      : []),
  ];
  if (!baseline || !before) {
    // The box's own view still says what is setuid and what sits in /tmp.
    const changes: ReportedChanges = {
      state: 'no-baseline',
      listedAt,
      complete: false,
      problems,
      ...none,
      outsideRepo: compared.outsideRepo,
      inImage: compared.inImage,
      setuid: compared.setuid,
    };
    return { changes, cloned };
  }
  const changes: ReportedChanges = {
    state: 'computed',
    baselineAt: baseline.meta.takenAt,
    listedAt,
    complete: now.complete && baseline.meta.complete && before.malformed === 0 && malformed === 0,
    problems,
    ...compared,
  };
  return { changes, cloned };
}

/** What the deps image's labels say of the install's scripts (build's install-scripts.ts). */
function installScripts(
  labels: Record<string, string> | undefined,
  provider: string,
): SandboxReport['install']['scripts'] {
  const label = labels?.[LABEL_INSTALL_SCRIPTS];
  const skippedOwn = (labels?.[LABEL_SKIPPED_SCRIPTS] ?? '').split('; ').filter(Boolean);
  const note = FETCH_RUNS_NO_CODE[provider];
  const noted = note ? { note } : {};
  if (label === undefined) return { recorded: false, declared: [], more: 0, skippedOwn, ...noted };
  const { scripts, more, incomplete } = parseInstallScripts(label);
  return {
    recorded: true,
    declared: scripts,
    more,
    skippedOwn,
    ...noted,
    ...(incomplete ? { incomplete } : {}),
  };
}
