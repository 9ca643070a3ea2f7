// How anything of the repo's is started: the install step (a `docker build` RUN step, build's
// build-argv.ts and dockerfile.ts) and the box, helper and gateway (a create body, run's
// run-args.ts). One home for what both must hold, and for the checks that read it back: the box's
// gate rows (run's isolation.ts) read the started container's inspect, the install's rows read
// what its own step saw of itself from the inside (CONFINEMENT_PROBE), under the same row ids.
//
// What differs by construction: a build step cannot drop capabilities nor make its root read-only
// (the legacy builder has no such flag), so the install runs as the box user under
// `setpriv --no-new-privs` (dockerfile.ts NO_NEW_PRIVS) with the base's setuid bits stripped: it
// has no effective capability and no way to gain one, which its rows check.

import type { UlimitConfig } from './container-create.js';
import { BOX_GID, BOX_UID, BOX_USER } from './contracts.js';

/** The CFS period docker uses by default; a CPU quota is `cpus` times it. */
export const CPU_PERIOD = 100_000;

/** The limits a process of the repo's runs under, beside memory and CPU (which each side sets its way). */
export interface ProcessLimits {
  /** RLIMIT_FSIZE in bytes: no single file past it (docker passes it to setrlimit unchanged). */
  fileSize: number;
  /**
   * RLIMIT_NPROC of the box user: counted per uid across the host, not per container, so only
   * the install sets it (a box has its cgroup's pids limit).
   */
  processes?: number;
}

/**
 * The ulimits of a container of the repo's, ordered by name as the docker CLI orders them (a create
 * body and its `docker run` argv are compared). `core` is 0: where the kernel sends a core dump is
 * the host's core_pattern (systemd-coredump, apport), which would keep on the host's disk what a
 * process held (a gateway's credential), and let a crashing box fill that disk. Both honour 0.
 */
export function processUlimits(limits: ProcessLimits): UlimitConfig[] {
  const same = (Name: string, value: number): UlimitConfig => ({ Name, Soft: value, Hard: value });
  return [
    same('core', 0),
    same('fsize', limits.fileSize),
    ...(limits.processes === undefined ? [] : [same('nproc', limits.processes)]),
  ];
}

/** The `--ulimit` flags of `docker build` and `docker run` for these ulimits. */
export function ulimitFlags(ulimits: readonly UlimitConfig[]): string[] {
  return ulimits.flatMap((limit) => [
    '--ulimit',
    limit.Soft === limit.Hard ? `${limit.Name}=${limit.Soft}` : `${limit.Name}=${limit.Soft}:${limit.Hard}`,
  ]);
}

/** A docker CPU quota (µs per CPU_PERIOD) for `cpus`; the kernel's floor is 1 ms. */
export function cpuQuota(cpus: number): number {
  return Math.max(1000, Math.round(cpus * CPU_PERIOD));
}

/** One checked property, as the box's gate rows print it (run's IsolationCheck without its CIS number). */
export interface ConfinementRow {
  id: string;
  title: string;
  expected: string;
  seen: string;
  pass: boolean;
}

/**
 * The ulimit rows of the box's gate and of the install: no core dumps, and a file size cap (of
 * exactly `fileSize` bytes when it is known: the install's, set by us; a box's is its option).
 */
export function ulimitRows(
  ulimits: readonly { Name: string; Soft: number; Hard: number }[],
  fileSize?: number,
): [noCoreDumps: ConfinementRow, fileSizeLimit: ConfinementRow] {
  // A name given twice is no limit one can read: runc applies them in order, the last one wins.
  const find = (name: string) => {
    const named = ulimits.filter((limit) => limit.Name === name);
    return named.length === 1 ? named[0] : undefined;
  };
  const seen = (limit: { Soft: number; Hard: number } | undefined) =>
    limit ? `${limit.Soft}:${limit.Hard}` : 'not set';
  const core = find('core');
  const fsize = find('fsize');
  return [
    {
      id: 'no-core-dumps',
      title: "a crashing process leaves no core dump on the host's disk",
      expected: 'core 0:0',
      seen: `core ${seen(core)}`,
      pass: core?.Soft === 0 && core.Hard === 0,
    },
    {
      id: 'file-size-limit',
      title: 'no single file grows past the size limit',
      expected: fileSize === undefined ? 'fsize > 0, soft = hard' : `fsize ${fileSize}:${fileSize}`,
      seen: `fsize ${seen(fsize)}`,
      pass:
        fsize !== undefined &&
        fsize.Soft > 0 &&
        fsize.Soft === fsize.Hard &&
        (fileSize === undefined || fsize.Soft === fileSize),
    },
  ];
}

/** What the install step prints of itself first (before any of the repo's code runs). */
export const CONFINEMENT_MARKER = 'ca-sandbox-confinement:';

/**
 * Shell lines that print, as the install step's first output, what its own process sees of
 * itself: its ids, no_new_privs, effective capabilities and seccomp mode (/proc/self/status of
 * the shell: redirections are the shell's own reads) and its core, file size and process limits
 * (/proc/self/limits), fields `;`-joined, whitespace collapsed. Plain sh, no other tool.
 */
export const CONFINEMENT_PROBE = [
  "ca_sbx_c=''",
  'while IFS= read -r ca_sbx_l; do case "$ca_sbx_l" in Uid:*|Gid:*|NoNewPrivs:*|CapEff:*|Seccomp:*) ca_sbx_c="$ca_sbx_c;$(echo $ca_sbx_l)";; esac; done < /proc/self/status',
  'while IFS= read -r ca_sbx_l; do case "$ca_sbx_l" in "Max core file size"*|"Max file size"*|"Max processes"*) ca_sbx_c="$ca_sbx_c;$(echo $ca_sbx_l)";; esac; done < /proc/self/limits',
  // The marker in two pieces: the step's header (`Step N/M : RUN [...]`, which holds this script)
  // never holds it whole, should a long header be passed on in pieces (run-build's line cap).
  `printf '%s%s%s\\n' '${CONFINEMENT_MARKER.slice(0, 11)}' '${CONFINEMENT_MARKER.slice(11)}' "$ca_sbx_c"`,
].join('\n');

/**
 * The fields of a confinement line, by their name in /proc (`Uid`, `Max file size`...). A field
 * printed twice is kept as neither: /proc prints each once, so a second one is not the probe's.
 */
function confinementFields(line: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  const twice = new Set<string>();
  const keep = (name: string, values: string[]) => {
    if (fields.has(name)) twice.add(name);
    fields.set(name, values);
  };
  for (const part of line.slice(CONFINEMENT_MARKER.length).split(';')) {
    const status = /^(Uid|Gid|NoNewPrivs|CapEff|Seccomp): (.*)$/.exec(part);
    if (status?.[1] && status[2] !== undefined) keep(status[1], status[2].split(' '));
    const limit = /^(Max core file size|Max file size|Max processes) (\S+) (\S+) \S+$/.exec(part);
    if (limit?.[1] && limit[2] && limit[3]) keep(limit[1], [limit[2], limit[3]]);
  }
  for (const name of twice) fields.delete(name);
  return fields;
}

/** What a confined step prints of each field, in /proc's own words (the guard's and the rows' one rule). */
function confinedValues(limits: ProcessLimits): Record<string, string> {
  const ids = (id: number) => `${id} ${id} ${id} ${id}`;
  return {
    Uid: ids(BOX_UID),
    Gid: ids(BOX_GID),
    NoNewPrivs: '1',
    CapEff: '0000000000000000',
    Seccomp: '2',
    'Max core file size': '0 0',
    'Max file size': `${limits.fileSize} ${limits.fileSize}`,
    ...(limits.processes === undefined ? {} : { 'Max processes': `${limits.processes} ${limits.processes}` }),
  };
}

/**
 * Shell lines that end the install step before any of the repo's code runs unless its own line
 * (CONFINEMENT_PROBE, run just before) shows every value a confined step has: the host's check
 * of the same line (installConfinementRows) then names what was missing. Detection after the
 * fact would let the repo's install run unconfined first.
 */
export function confinementGuard(limits: ProcessLimits): string {
  return Object.entries(confinedValues(limits))
    .map(([name, value]) => {
      const piece = /^Max /.test(name) ? `;${name} ${value} ` : `;${name}: ${value};`;
      return `case "$ca_sbx_c;" in *'${piece}'*) ;; *) echo 'ca-sandbox: the install step is not confined (${name}): stopped before the install' >&2; exit 97;; esac`;
    })
    .join('\n');
}

/**
 * The install step's rows, from its confinement line (undefined: it printed none, which fails
 * every row): the same ids as the box's gate where a row applies to a build step.
 */
export function installConfinementRows(line: string | undefined, limits: ProcessLimits): ConfinementRow[] {
  const fields = line?.startsWith(CONFINEMENT_MARKER) ? confinementFields(line) : new Map<string, string[]>();
  const want = confinedValues(limits);
  const text = (name: string) => fields.get(name)?.join(' ') ?? 'not printed';
  const is = (name: string) => fields.has(name) && text(name) === want[name];
  const limit = (name: string, Name: string) => {
    const [soft, hard] = fields.get(name) ?? [];
    const number = (value: string | undefined) =>
      value === undefined || !/^\d+$/.test(value) ? Number.NaN : Number(value);
    return { Name, Soft: number(soft), Hard: number(hard) };
  };
  const ulimits = [limit('Max core file size', 'core'), limit('Max file size', 'fsize')];
  const processes = limit('Max processes', 'nproc');
  return [
    {
      id: 'non-root-user',
      title: 'the install runs as the unprivileged sandbox user',
      expected: `uid ${want.Uid}; gid ${want.Gid} (${BOX_USER}: real, effective, saved, filesystem)`,
      seen: `uid ${text('Uid')}; gid ${text('Gid')}`,
      pass: is('Uid') && is('Gid'),
    },
    {
      id: 'no-new-privileges',
      title: 'the install cannot gain privileges (setuid, file caps)',
      expected: 'NoNewPrivs 1',
      seen: `NoNewPrivs ${text('NoNewPrivs')}`,
      pass: is('NoNewPrivs'),
    },
    {
      id: 'cap-drop-all',
      title: 'the install holds no effective capability',
      expected: `CapEff ${want.CapEff}`,
      seen: `CapEff ${text('CapEff')}`,
      pass: is('CapEff'),
    },
    {
      id: 'seccomp-confined',
      title: "the install's system calls are filtered (seccomp)",
      expected: 'Seccomp 2 (filter)',
      seen: `Seccomp ${text('Seccomp')}`,
      pass: is('Seccomp'),
    },
    ...ulimitRows(ulimits, limits.fileSize),
    {
      id: 'process-limit',
      title: "the install's processes are limited (per uid)",
      expected: `nproc ${limits.processes ?? '> 0'}`,
      seen: `nproc ${Number.isNaN(processes.Soft) ? 'not printed' : `${processes.Soft}:${processes.Hard}`}`,
      pass:
        processes.Soft === processes.Hard &&
        (limits.processes === undefined ? processes.Soft > 0 : processes.Soft === limits.processes),
    },
  ];
}
