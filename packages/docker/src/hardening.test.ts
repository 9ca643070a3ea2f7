import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  CONFINEMENT_MARKER,
  CONFINEMENT_PROBE,
  confinementGuard,
  installConfinementRows,
  processUlimits,
  ulimitFlags,
  ulimitRows,
} from './hardening.js';

const limits = { fileSize: 1073741824, processes: 4096 };
// What a confined install step prints (the probe's own format, whitespace collapsed).
const confined = `${CONFINEMENT_MARKER};Uid: 1000 1000 1000 1000;Gid: 1000 1000 1000 1000;NoNewPrivs: 1;CapEff: 0000000000000000;Seccomp: 2;Max core file size 0 0 bytes;Max file size 1073741824 1073741824 bytes;Max processes 4096 4096 processes`;

describe('one hardening home', () => {
  it('gives the box and the install the same ulimits, in the docker CLI order', () => {
    expect(processUlimits({ fileSize: 5 })).toEqual([
      { Name: 'core', Soft: 0, Hard: 0 },
      { Name: 'fsize', Soft: 5, Hard: 5 },
    ]);
    expect(ulimitFlags(processUlimits(limits))).toEqual([
      '--ulimit',
      'core=0',
      '--ulimit',
      'fsize=1073741824',
      '--ulimit',
      'nproc=4096',
    ]);
    expect(ulimitRows(processUlimits(limits)).every((row) => row.pass)).toBe(true);
    expect(ulimitRows([{ Name: 'fsize', Soft: 1, Hard: 2 }]).map((row) => row.pass)).toEqual([false, false]);
  });

  it("passes a confined install step's line, row by row", () => {
    const rows = installConfinementRows(confined, limits);
    expect(rows.map((row) => row.id)).toEqual([
      'non-root-user',
      'no-new-privileges',
      'cap-drop-all',
      'seccomp-confined',
      'no-core-dumps',
      'file-size-limit',
      'process-limit',
    ]);
    expect(rows.filter((row) => !row.pass)).toEqual([]);
  });

  it('fails each row the line does not prove, and every row when there is no line', () => {
    const loose = confined
      .replace('Uid: 1000 1000 1000 1000', 'Uid: 1000 0 1000 1000')
      .replace('NoNewPrivs: 1', 'NoNewPrivs: 0')
      .replace('Seccomp: 2', 'Seccomp: 0')
      .replace('CapEff: 0000000000000000', 'CapEff: 00000000a80425fb')
      .replace('Max core file size 0 0', 'Max core file size unlimited unlimited')
      .replace('Max file size 1073741824 1073741824', 'Max file size 1073741824 2147483648')
      .replace('Max processes 4096 4096', 'Max processes 8192 8192');
    expect(installConfinementRows(loose, limits).filter((row) => row.pass)).toEqual([]);
    expect(installConfinementRows(undefined, limits).filter((row) => row.pass)).toEqual([]);
    expect(installConfinementRows('something else', limits).filter((row) => row.pass)).toEqual([]);
    // A field twice, or fewer ids than /proc prints: not the probe's line (red team).
    const twice = confined.replace(';Uid: 1000 1000 1000 1000', ';Uid: 0 0 0 0;Uid: 1000 1000 1000 1000');
    expect(installConfinementRows(twice, limits).find((row) => row.id === 'non-root-user')?.pass).toBe(false);
    const short = confined.replace(';Uid: 1000 1000 1000 1000', ';Uid: 1000');
    expect(installConfinementRows(short, limits).find((row) => row.id === 'non-root-user')?.pass).toBe(false);
    expect(ulimitRows([...processUlimits(limits), { Name: 'core', Soft: -1, Hard: -1 }])[0].pass).toBe(false);
  });

  it('the guard lets a confined step go on and stops any other before the install (exit 97)', () => {
    const guard = (line: string) =>
      spawnSync(
        'sh',
        [
          '-euc',
          `ca_sbx_c='${line.slice(CONFINEMENT_MARKER.length)}'\n${confinementGuard(limits)}\necho installed`,
        ],
        {
          encoding: 'utf8',
        },
      );
    expect(guard(confined)).toMatchObject({ status: 0, stdout: 'installed\n' });
    for (const [from, to] of [
      ['Uid: 1000 1000 1000 1000', 'Uid: 1000 0 1000 1000'],
      ['NoNewPrivs: 1', 'NoNewPrivs: 0'],
      ['CapEff: 0000000000000000', 'CapEff: 0000000000000400'],
      ['Seccomp: 2', 'Seccomp: 0'],
      ['Max core file size 0 0', 'Max core file size 0 unlimited'],
      ['Max file size 1073741824 1073741824', 'Max file size 1073741824 10737418240'],
      ['Max processes 4096 4096', 'Max processes 40960 40960'],
    ] as const) {
      const stopped = guard(confined.replace(from, to));
      expect(stopped.status, to).toBe(97);
      expect(stopped.stdout).toBe('');
      expect(stopped.stderr).toMatch(/the install step is not confined/);
    }
  });

  it('the probe is plain sh that reads its own process (run here with dash)', () => {
    const line = execFileSync('sh', ['-euc', CONFINEMENT_PROBE], { encoding: 'utf8' }).trim();
    expect(line.startsWith(CONFINEMENT_MARKER)).toBe(true);
    const uid = process.getuid?.() ?? -1;
    expect(line).toContain(`;Uid: ${uid} ${uid} ${uid} ${uid};`);
    for (const field of [/;NoNewPrivs: [01](;|$)/, /;CapEff: [0-9a-f]{16}(;|$)/, /;Seccomp: \d(;|$)/])
      expect(line).toMatch(field);
    for (const field of [
      /;Max core file size \S+ \S+ bytes/,
      /;Max file size \S+ \S+ bytes/,
      /;Max processes \S+ \S+ processes/,
    ])
      expect(line).toMatch(field);
    // Parsed back: this test process is no install step (root or not, its limits are the host's).
    expect(
      installConfinementRows(line, limits)
        .map((row) => row.seen)
        .join(' '),
    ).not.toContain('not printed');
  });
});
