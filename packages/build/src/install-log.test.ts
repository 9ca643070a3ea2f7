import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  causeLine,
  INSTALL_LOG_MAX_BYTES,
  INSTALL_LOG_TAIL_LINES,
  InstallLog,
  installLogDir,
  meaningfulLines,
} from './install-log.js';

const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-log-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('installLogDir', () => {
  it('follows XDG_STATE_HOME, else ~/.local/state', () => {
    expect(installLogDir({ XDG_STATE_HOME: '/s' }, '/h')).toBe('/s/ca-sandbox/logs');
    expect(installLogDir({}, '/h')).toBe('/h/.local/state/ca-sandbox/logs');
    expect(installLogDir({ XDG_STATE_HOME: 'relative' }, '/h')).toBe('/h/.local/state/ca-sandbox/logs');
  });
});

describe('InstallLog', () => {
  it('keeps the lines in a private file, and discards it on success', async () => {
    const logs = join(dir, 'logs');
    const kept = await InstallLog.open('repo-abc-1', logs);
    kept.write('one');
    kept.write('two');
    await kept.close();
    expect(readFileSync(kept.path, 'utf8')).toBe('one\ntwo\n');
    expect(statSync(kept.path).mode & 0o777).toBe(0o600);
    expect(statSync(logs).mode & 0o777).toBe(0o700);
    const gone = await InstallLog.open('repo-abc-2', logs);
    gone.write('x');
    await gone.discard();
    expect(() => statSync(gone.path)).toThrow();
  });

  it('keeps the first 16 MiB of a flood and its last lines, and says what it left out', async () => {
    const log = await InstallLog.open('repo-flood-1', join(dir, 'logs'));
    const line = 'x'.repeat(1023);
    const total = INSTALL_LOG_MAX_BYTES / 1024 + 2000;
    for (let i = 0; i < total; i++) log.write(i >= total - 3 ? `npm ERR! cause ${i}` : line);
    await log.close();
    const text = readFileSync(log.path, 'utf8');
    const lines = text.trimEnd().split('\n');
    expect(statSync(log.path).size).toBeLessThan(INSTALL_LOG_MAX_BYTES + (INSTALL_LOG_TAIL_LINES + 1) * 1024);
    expect(lines.slice(0, 2)).toEqual([line, line]);
    const note = lines.find((l) => l.startsWith('[ca-sandbox:'));
    expect(note).toBe(
      `[ca-sandbox: the install printed more than this log keeps (16 MiB, then its last ${INSTALL_LOG_TAIL_LINES} lines): 1500 lines (${1997 * 1024 + 3 * 21} bytes with the last ones) left out here]`,
    );
    expect(lines.slice(-3)).toEqual([
      `npm ERR! cause ${total - 3}`,
      `npm ERR! cause ${total - 2}`,
      `npm ERR! cause ${total - 1}`,
    ]);
    expect(lines.length).toBe(INSTALL_LOG_MAX_BYTES / 1024 + 1 + INSTALL_LOG_TAIL_LINES);
  });

  it('a few lines past the cap are all kept, with no note', async () => {
    const log = await InstallLog.open('repo-flood-2', join(dir, 'logs'));
    const line = 'y'.repeat(1023);
    for (let i = 0; i < INSTALL_LOG_MAX_BYTES / 1024; i++) log.write(line);
    log.write('after one');
    log.write('after two');
    await log.close();
    const lines = readFileSync(log.path, 'utf8').trimEnd().split('\n');
    expect(lines.slice(-2)).toEqual(['after one', 'after two']);
    expect(lines.some((l) => l.startsWith('[ca-sandbox:'))).toBe(false);
  });
});

describe('meaningfulLines', () => {
  const frame = (step: string[]) => [
    'Step 1/9 : FROM ca-sbx-base:node',
    ' ---> 0123456789ab',
    'Step 8/9 : RUN ["/bin/sh","-c","set -eu\\nnpm ci"]',
    ' ---> Running in 0123456789ab',
    ...step,
    "The command '/bin/sh -c set -eu",
    'npm ci --no-audit',
    'find /tmp -mindepth 1 -maxdepth 1 -user "$(id -u)" -exec rm -rf {} + 2>/dev/null || true\' returned a non-zero code: 1',
  ];

  it('picks npm, gyp, pnpm, pip and go causes of the failing step, never docker framing', () => {
    expect(
      meaningfulLines(
        frame([
          'added 3 packages',
          'npm error code E404',
          'npm error 404 Not Found - GET https://registry.npmjs.org/nope-xyz - Not found',
        ]),
      ),
    ).toEqual([
      'npm error code E404',
      'npm error 404 Not Found - GET https://registry.npmjs.org/nope-xyz - Not found',
    ]);
    expect(
      meaningfulLines(frame(['gyp info spawn make', 'gyp ERR! build error', 'make: *** [x] Error 1'])),
    ).toEqual(['gyp ERR! build error']);
    expect(
      meaningfulLines(frame([' ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with "frozen-lockfile"'])),
    ).toHaveLength(1);
    // A cause ending in ':' brings the lines it introduces (antfu/pnpm-workspace-utils, corpus trial).
    expect(
      meaningfulLines(
        frame([
          'Progress: resolved 1, reused 0, downloaded 0, added 0',
          '[ERR_PNPM_TRUST_DOWNGRADE] 1 lockfile entries failed verification:',
          '@typescript/native-preview-darwin-x64@7.0.0-dev.1: Missing time for version',
          '',
        ]),
      ),
    ).toEqual([
      '[ERR_PNPM_TRUST_DOWNGRADE] 1 lockfile entries failed verification:',
      '@typescript/native-preview-darwin-x64@7.0.0-dev.1: Missing time for version',
    ]);
    // Cut by whole groups from the last: never the entry without the cause that introduces it.
    expect(
      meaningfulLines(
        frame(['npm error code E1', '[ERR_PNPM_X] failed:', 'entry one', 'entry two', 'npm error code E2']),
        3,
      ),
    ).toEqual(['npm error code E2']);
    expect(
      meaningfulLines(frame(['[ERR_PNPM_X] failed:', 'entry one', 'entry two', 'entry three']), 2),
    ).toEqual(['[ERR_PNPM_X] failed:', 'entry one']);
    expect(
      meaningfulLines(
        frame([
          'Looking in indexes: http://mirror/simple',
          'ERROR: Could not find a version that satisfies the requirement nope==9 (from versions: none)',
          'ERROR: No matching distribution found for nope==9',
        ]),
      ),
    ).toEqual([
      'ERROR: Could not find a version that satisfies the requirement nope==9 (from versions: none)',
      'ERROR: No matching distribution found for nope==9',
    ]);
    expect(
      meaningfulLines(
        frame(['go: example.com/x@v1.0.0: reading http://p/example.com/x/@v/v1.0.0.info: 404 Not Found']),
      ),
    ).toHaveLength(1);
  });

  it('falls back to the last lines of the step, bounded in count and width', () => {
    const step = Array.from({ length: 20 }, (_, i) => `line ${i} ${'x'.repeat(i === 19 ? 500 : 1)}`);
    const picked = meaningfulLines(frame(step), 8, 100);
    expect(picked).toHaveLength(8);
    expect(picked[0]).toMatch(/^line 12 /);
    expect(picked[7]?.length).toBe(101);
  });
});

describe('causeLine', () => {
  it('quotes the most specific line, with the one it introduces when it ends in a colon', () => {
    expect(causeLine(['npm error code E404', 'npm error 404 Not Found - GET x'])).toBe(
      'npm error 404 Not Found - GET x',
    );
    expect(
      causeLine([
        '[ERR_PNPM_TRUST_DOWNGRADE] 1 lockfile entries failed verification:',
        '  pkg@1.0.0: Missing time for version',
      ]),
    ).toBe(
      '[ERR_PNPM_TRUST_DOWNGRADE] 1 lockfile entries failed verification: pkg@1.0.0: Missing time for version',
    );
    expect(causeLine(['something went wrong:'])).toBe('something went wrong:');
    expect(causeLine([`npm error ${'a'.repeat(290)}:`, 'b'.repeat(290)])).toHaveLength(301);
    expect(causeLine([])).toBeUndefined();
  });
});
