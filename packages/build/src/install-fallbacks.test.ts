import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  INSTALL_FALLBACK_MARKER,
  installFallbacksFromOutput,
  npmInstallWithPeerFallback,
  parseInstallFallbacks,
} from './install-fallbacks.js';

// The snippet runs under a real sh (as in the install step: `set -eu`, in a subshell) with a fake
// npm first on PATH that answers as npm 10 does. /tmp files of the snippet are its own names.
const bin = mkdtempSync(join(tmpdir(), 'ca-sbx-fallback-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

function fakeNpm(body: string): void {
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\necho "npm $*" >> ${join(bin, 'calls')}\n${body}\n`);
  chmodSync(join(bin, 'npm'), 0o755);
  rmSync(join(bin, 'calls'), { force: true });
}

function runSnippet(): { status: number | null; stdout: string; calls: string[] } {
  const script = ['set -eu', '(', ...npmInstallWithPeerFallback('npm ci --no-audit'), ')', 'echo after'].join(
    '\n',
  );
  const result = spawnSync('sh', ['-c', script], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
  });
  let calls: string[] = [];
  try {
    calls = execFileSync('cat', [join(bin, 'calls')], { encoding: 'utf8' })
      .trim()
      .split('\n');
  } catch {}
  return { status: result.status, stdout: result.stdout, calls };
}

describe('npmInstallWithPeerFallback', () => {
  it('retries once with --legacy-peer-deps after ERESOLVE, says so, and goes on', () => {
    fakeNpm(
      'case "$*" in *--legacy-peer-deps*) echo installed; exit 0;; esac\necho "npm error code ERESOLVE" >&2\nexit 1',
    );
    const run = runSnippet();
    expect(run.status).toBe(0);
    expect(run.calls).toEqual(['npm ci --no-audit', 'npm ci --no-audit --legacy-peer-deps']);
    expect(run.stdout.split('\n')).toEqual([
      'npm error code ERESOLVE',
      `${INSTALL_FALLBACK_MARKER}npm-legacy-peer-deps`,
      'installed',
      'after',
      '',
    ]);
    expect(installFallbacksFromOutput(run.stdout.split('\n'))).toEqual(['npm-legacy-peer-deps']);
  });

  it('keeps any other failure and its exit code: no retry', () => {
    fakeNpm('echo "npm error code ETARGET" >&2\nexit 7');
    const run = runSnippet();
    expect(run.status).toBe(7);
    expect(run.calls).toEqual(['npm ci --no-audit']);
    expect(run.stdout).not.toContain('after');
    expect(run.stdout).not.toContain(INSTALL_FALLBACK_MARKER);
  });

  it('a retry that fails too fails the install', () => {
    fakeNpm('echo "npm error code ERESOLVE" >&2\nexit 1');
    const run = runSnippet();
    expect(run.status).toBe(1);
    expect(run.calls).toHaveLength(2);
    expect(run.stdout).not.toContain('after');
  });

  it('a passing install runs once and says nothing', () => {
    fakeNpm('echo added 6 packages');
    const run = runSnippet();
    expect(run.status).toBe(0);
    expect(run.calls).toEqual(['npm ci --no-audit']);
    expect(run.stdout).toBe('added 6 packages\nafter\n');
  });
});

describe('reading the fallbacks back', () => {
  it('knows its own names only, once each', () => {
    expect(
      installFallbacksFromOutput([
        `${INSTALL_FALLBACK_MARKER}npm-legacy-peer-deps`,
        `${INSTALL_FALLBACK_MARKER}npm-legacy-peer-deps`,
        `${INSTALL_FALLBACK_MARKER}\u001b]52;c;x\u0007`,
        `  ${INSTALL_FALLBACK_MARKER}npm-legacy-peer-deps-not`,
      ]),
    ).toEqual(['npm-legacy-peer-deps']);
    expect(parseInstallFallbacks('npm-legacy-peer-deps,rm -rf')).toEqual(['npm-legacy-peer-deps']);
    expect(parseInstallFallbacks(undefined)).toEqual([]);
    expect(parseInstallFallbacks('')).toEqual([]);
  });
});
