import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { changedLocksFromOutput, LOCKFILE_MARKER, parseChangedLocks } from './lockfiles.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const file = (path: string, text: string) => ({ path, content: Buffer.from(text) });

describe('changedLocksFromOutput', () => {
  const files = [file('package.json', '{}'), file('yarn.lock', 'repo'), file('pnpm-lock.yaml', 'same')];

  it("names the repo's lockfiles whose installed bytes differ, in a fixed order", () => {
    const lines = [
      `${LOCKFILE_MARKER}-`,
      `${LOCKFILE_MARKER}yarn.lock ${sha('installed')}`,
      `  ${LOCKFILE_MARKER}pnpm-lock.yaml ${sha('same')}`,
    ];
    expect(changedLocksFromOutput(lines, files)).toEqual(['yarn.lock']);
  });

  it('reads only the lines after the last begin line (ours, printed after the install is gone)', () => {
    const forged = [`${LOCKFILE_MARKER}-`, `${LOCKFILE_MARKER}pnpm-lock.yaml ${sha('forged')}`];
    const ours = [`${LOCKFILE_MARKER}-`, `${LOCKFILE_MARKER}yarn.lock ${sha('repo')}`];
    expect(changedLocksFromOutput([...forged, ...ours], files)).toEqual([]);
    expect(changedLocksFromOutput(forged, files)).toEqual(['pnpm-lock.yaml']);
    // No begin line at all (not a node install of ours): not recorded.
    expect(changedLocksFromOutput([`${LOCKFILE_MARKER}yarn.lock ${sha('x')}`], files)).toBeUndefined();
  });

  it('a lockfile the repo lacks (the install made it), unknown names and malformed lines count for nothing', () => {
    const lines = [
      `${LOCKFILE_MARKER}-`,
      `${LOCKFILE_MARKER}package-lock.json ${sha('made')}`,
      `${LOCKFILE_MARKER}../../etc/passwd ${sha('x')}`,
      `${LOCKFILE_MARKER}yarn.lock not-a-hash`,
      `${LOCKFILE_MARKER}yarn.lock ${sha('x')} trailing`,
      `echo ${LOCKFILE_MARKER}yarn.lock ${sha('x')}`,
    ];
    expect(changedLocksFromOutput(lines, files)).toEqual([]);
  });
});

describe('parseChangedLocks', () => {
  it('absent is "not recorded"; empty is none; unknown names are dropped', () => {
    expect(parseChangedLocks(undefined)).toBeUndefined();
    expect(parseChangedLocks('')).toEqual([]);
    expect(parseChangedLocks('pnpm-lock.yaml,evil,yarn.lock')).toEqual(['yarn.lock', 'pnpm-lock.yaml']);
  });
});
