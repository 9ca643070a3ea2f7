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
  const find = (name: string) => ulimits.find((limit) => limit.Name === name);
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
  `printf '%s%s\\n' '${CONFINEMENT_MARKER}' "$ca_sbx_c"`,
].join('\n');

/** The fields of a confinement line, by their name in /proc (`Uid:`, `Max file size`...). */
function confinementFields(line: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const part of line.slice(CONFINEMENT_MARKER.length).split(';')) {
    const status = /^(Uid|Gid|NoNewPrivs|CapEff|Seccomp): (.*)$/.exec(part);
    if (status?.[1] && status[2] !== undefined) fields.set(status[1], status[2].split(' '));
    const limit = /^(Max core file size|Max file size|Max processes) (\S+) (\S+)/.exec(part);
    if (limit?.[1] && limit[2] && limit[3]) fields.set(limit[1], [limit[2], limit[3]]);
  }
  return fields;
}

/**
 * The install step's rows, from its confinement line (undefined: it printed none, which fails
 * every row): the same ids as the box's gate where a row applies to a build step.
 */
export function installConfinementRows(line: string | undefined, limits: ProcessLimits): ConfinementRow[] {
  const fields = line?.startsWith(CONFINEMENT_MARKER) ? confinementFields(line) : new Map<string, string[]>();
  const text = (name: string) => fields.get(name)?.join(' ') ?? 'not printed';
  const all = (name: string, value: string) => {
    const values = fields.get(name);
    return values !== undefined && values.length > 0 && values.every((seen) => seen === value);
  };
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
      expected: `uid ${BOX_UID} gid ${BOX_GID} (${BOX_USER}), real, effective, saved and filesystem`,
      seen: `uid ${text('Uid')}; gid ${text('Gid')}`,
      pass: all('Uid', String(BOX_UID)) && all('Gid', String(BOX_GID)),
    },
    {
      id: 'no-new-privileges',
      title: 'the install cannot gain privileges (setuid, file caps)',
      expected: 'NoNewPrivs 1',
      seen: `NoNewPrivs ${text('NoNewPrivs')}`,
      pass: all('NoNewPrivs', '1'),
    },
    {
      id: 'cap-drop-all',
      title: 'the install holds no effective capability',
      expected: 'CapEff 0000000000000000',
      seen: `CapEff ${text('CapEff')}`,
      pass: all('CapEff', '0000000000000000'),
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
