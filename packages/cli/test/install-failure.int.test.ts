import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { staleBuildDirectories } from '@ca-sandbox/build';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
// The install step reaches npm through this machine's TLS proxy: name its CA as a user would.
const caEnv: Record<string, string> = {};
const ca = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
if (ca) caEnv.CA_SANDBOX_CA_CERTS = ca;

describe.skipIf(!READY)('a repo whose dependency install fails, through the bin (real engine)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-cli-fail-'));
  const repo = join(work, 'repo');
  const state = join(work, 'state');
  const ids: string[] = [];

  afterAll(() => {
    for (const id of ids) forceRemoveSandbox(id);
    rmSync(work, { recursive: true, force: true });
  });

  mkdirSync(repo, { recursive: true });
  writeFileSync(
    join(repo, 'package.json'),
    JSON.stringify({ name: 'fails', dependencies: { 'ca-sbx-no-such-package-9d2e': '1.0.0' } }),
  );

  it('exits 1 with the cause in the message, the npm lines, the kept log, and nothing left', async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    // A context directory the create left is one whose process (the bin's) is gone; a test running
    // beside this one has live contexts of its own, so counting them all would race with it.
    const contexts = () => readdirSync(tmpdir()).filter((name) => name.startsWith('ca-sbx-build-')).length;
    const before = contexts();
    const staleBefore = new Set(await staleBuildDirectories());
    const result = await runBin(['create', repo, '--name', id, '--network', 'clone-then-cut', '--json'], {
      ...caEnv,
      XDG_STATE_HOME: state,
    });
    expect(result.code).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error as {
      code: string;
      message: string;
      details: string[];
      logFile: string;
    };
    expect(error.code).toBe('IMAGE_BUILD_FAILED');
    expect(error.message).toMatch(
      /^dependency install failed .*: npm error 404 Not Found .*ca-sbx-no-such-package-9d2e/,
    );
    expect(error.message).not.toMatch(/returned a non-zero code/);
    expect(error.details.length).toBeGreaterThan(0);
    expect(error.logFile.startsWith(join(state, 'ca-sandbox', 'logs'))).toBe(true);
    expect(readFileSync(error.logFile, 'utf8')).toContain('ca-sbx-no-such-package-9d2e');
    expect(remainingObjects(id)).toEqual([]);
    // This bin's own build context is gone (a create killed by another test file leaves one of
    // its own process's: counting those would race with it).
    expect(result.pid).toBeGreaterThan(0);
    const own = `ca-sbx-build-${result.pid}-`;
    expect(
      (await staleBuildDirectories()).filter((dir) => !staleBefore.has(dir) && basename(dir).startsWith(own)),
    ).toEqual([]);
    // And the count as before, when no other process is building (all contexts left are stale).
    const stale = await staleBuildDirectories();
    if (stale.length === contexts()) expect(contexts()).toBeLessThanOrEqual(before);
  });

  it('says the same in text mode without --verbose: cause, npm lines, log path', async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const result = await runBin(['create', repo, '--name', id, '--network', 'clone-then-cut'], {
      ...caEnv,
      XDG_STATE_HOME: state,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: dependency install failed .*npm error 404/m);
    // npm's own lines under it (which of them come last varies with npm's output order).
    expect(result.stderr).toMatch(/^ {2}npm error (code E404|404 Not Found - GET )/m);
    const hint = result.stderr.match(/^hint: full install log: (\S+)$/m)?.[1] ?? '';
    expect(existsSync(hint)).toBe(true);
    expect(remainingObjects(id)).toEqual([]);
  });
});
