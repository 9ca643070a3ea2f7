// Issue 13.6: SIGINT/SIGTERM during a create exit 130/143, after the create removed what it made.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BIN,
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  LOCAL_IMAGES_ENV,
  remainingObjects,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

/** Starts a create, sends `signal` once stderr shows `when`, and resolves with the exit code and stderr. */
function interruptCreate(
  args: string[],
  when: RegExp,
  signal: NodeJS.Signals,
  delayMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; sentAfter: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'create', ...args], {
      env: { ...process.env, ...LOCAL_IMAGES_ENV, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let sentAfter = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (!sentAfter && when.test(stderr)) {
        sentAfter = stderr;
        setTimeout(() => child.kill(signal), delayMs);
      }
    });
    child.stdout.resume();
    child.on('error', reject);
    child.on('close', (code, killedBy) => resolve({ code, signal: killedBy, stderr, sentAfter }));
  });
}

/** Host processes whose command line carries `marker` (container processes are host processes too). */
function processesWith(marker: string): string[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(marker));
}

describe.skipIf(!READY)('create interrupted by a signal (real engine)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-signal-'));
  const ids: string[] = [];
  afterAll(() => {
    for (const id of ids) forceRemoveSandbox(id);
    rmSync(work, { recursive: true, force: true });
  });

  it('SIGINT during the dependency build: exit 130, nothing of the sandbox left', async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const repo = join(work, 'slow-install');
    execFileSync('mkdir', ['-p', repo]);
    // A unique name (a new dephash: a real build, never a cache hit) and an install that takes its
    // time: the repo's own lifecycle scripts are skipped, its .pnpmfile.cjs runs inside pnpm.
    writeFileSync(
      join(repo, 'package.json'),
      JSON.stringify({ name: id, version: '1.0.0', packageManager: 'pnpm@9.15.9' }),
    );
    writeFileSync(
      join(repo, '.pnpmfile.cjs'),
      [
        `console.log(${JSON.stringify(`slow-install-${id}`)});`,
        `require('node:child_process').execSync(${JSON.stringify(`sleep 300 # ${id}`)});`,
        'module.exports = {};',
        '',
      ].join('\n'),
    );
    const result = await interruptCreate(
      [repo, '--name', id, '--network', 'clone-then-cut', '--verbose'],
      new RegExp(`^ {2}\\| slow-install-${id}$`, 'm'),
      'SIGINT',
      500,
    );
    expect(result.sentAfter).toMatch(/^build: started/m);
    expect(result.sentAfter).not.toMatch(/^build: done/m);
    expect(result.signal).toBeNull();
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(
      /^error: sandbox creation was interrupted; everything it created so far was removed$/m,
    );
    expect(remainingObjects(id)).toEqual([]);
    // The install's sleep ran in a build container: no process of it is left (the host sees them all).
    expect(processesWith(id)).toEqual([]);
  }, 240_000);

  it('SIGTERM during the clone: exit 143, nothing of the sandbox left', async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const repo = join(work, 'plain');
    execFileSync('mkdir', ['-p', repo]);
    writeFileSync(join(repo, 'README.md'), 'signal fixture\n');
    const result = await interruptCreate([repo, '--name', id], /^clone: started/m, 'SIGTERM', 0);
    expect(result.sentAfter).not.toMatch(/^clone: done/m);
    expect(result.signal).toBeNull();
    expect(result.code).toBe(143);
    // The killed clone or checkout measure is not reported as a git failure of the helper.
    expect(result.stderr).not.toMatch(/failed in the helper/);
    expect(remainingObjects(id)).toEqual([]);
  }, 120_000);
});
