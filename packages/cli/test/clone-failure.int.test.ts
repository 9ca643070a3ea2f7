// Clones that fail say why. A URL clone that the gateway cannot carry: git only sees "CONNECT tunnel failed,
// response 503"; the gateway's log knows it could not connect (or resolve, or was told to refuse).
// The URL is this machine's address on docker's default bridge, on a closed port: named in the URL,
// it is allowed (naming an address is a decision), and no traffic leaves this machine.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

/** The `--json` error object: the last line of stderr. */
function lastJsonError(stderr: string): { code: string; message: string; hint?: string } {
  return JSON.parse(stderr.trim().split('\n').at(-1) ?? '{}').error;
}

/**
 * This machine's own address on docker's default bridge, read off the bridge interface itself:
 * the engine's IPAM Gateway field is left out on some machines (a fresh Debian dockerd here).
 */
function bridgeHostAddress(): string {
  const bridge = execFileSync('docker', [
    'network',
    'inspect',
    'bridge',
    '--format',
    '{{index .Options "com.docker.network.bridge.name"}}',
  ])
    .toString()
    .trim();
  const links = JSON.parse(execFileSync('ip', ['-4', '-j', 'addr', 'show', 'dev', bridge]).toString()) as {
    addr_info?: { local?: string }[];
  }[];
  return links[0]?.addr_info?.[0]?.local ?? '';
}

describe.skipIf(!READY)('a URL clone the gateway cannot carry, through the bin (real engine)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  afterAll(() => forceRemoveSandbox(id));

  it("exits 1 with git's error and the gateway's side of it, and leaves nothing", async () => {
    const host = bridgeHostAddress();
    expect(host).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const result = await runBin(['create', `https://${host}:9/x.git`, '--name', id, '--json']);
    expect(result.code).toBe(1);
    const error = lastJsonError(result.stderr);
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.message).toMatch(/CONNECT tunnel failed/);
    expect(error.message).toContain(`(egress gateway: ${host}:9: the gateway could not connect to it)`);
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);

  it('a loopback URL is refused before anything runs: in the clone container it would name the container', async () => {
    for (const url of [
      'https://127.0.0.1:9/x.git',
      'http://localhost:3000/x.git',
      'git@[::1]:x.git',
      // docker's /etc/hosts names ::1 so in every container, the gateway's included.
      'https://ip6-localhost/x.git',
      'http://ip6-loopback:3128/x.git',
    ]) {
      const result = await runBin(['create', url, '--name', id]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        /^error: invalid source: the repo's host \S+ is a loopback address: the clone runs in a container/,
      );
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(remainingObjects(id)).toEqual([]);
  });
});

describe.skipIf(!READY)('--ref with an abbreviated commit, through the bin (real engine)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const dir = mkdtempSync(join(tmpdir(), 'ca-short-ref-'));
  afterAll(() => {
    forceRemoveSandbox(id);
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 1 saying a commit is named by its full sha, with the command that gives it, and leaves nothing', async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd: dir });
    git('init', '-q', '-b', 'main');
    writeFileSync(join(dir, 'f'), 'v1\n');
    git('add', 'f');
    git('commit', '-qm', '1');
    const short = git('rev-parse', '--short=8', 'HEAD').toString().trim();
    const result = await runBin(['create', dir, '--name', id, '--ref', short, '--json']);
    expect(result.code).toBe(1);
    const error = lastJsonError(result.stderr);
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.message).toContain(
      `(--ref ${short} looks like an abbreviated commit: a commit is named by its full sha)`,
    );
    expect(error.hint).toBe(
      `give the full sha: \`git rev-parse ${short}\` in a clone of the repository prints it (40 hex digits, 64 in a sha256 repository)`,
    );
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);
});

describe.skipIf(!READY)('a local partial clone (git clone --filter), through the bin (real engine)', () => {
  const ids: string[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const id of ids) {
      await runBin(['destroy', id]).catch(() => undefined);
      forceRemoveSandbox(id);
      expect(remainingObjects(id)).toEqual([]);
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A history whose first blob the partial clone leaves out (blob:none keeps only HEAD's). */
  function partialClone(): { partial: string; first: string } {
    const source = mkdtempSync(join(tmpdir(), 'ca-partial-src-'));
    const partial = join(mkdtempSync(join(tmpdir(), 'ca-partial-')), 'repo');
    dirs.push(source, join(partial, '..'));
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd });
    git(source, 'init', '-q', '-b', 'main');
    writeFileSync(join(source, 'f'), 'v1\n');
    git(source, 'add', 'f');
    git(source, 'commit', '-qm', '1');
    const first = git(source, 'rev-parse', 'HEAD').toString().trim();
    writeFileSync(join(source, 'f'), 'v2\n');
    git(source, 'commit', '-qam', '2');
    git(source, 'config', 'uploadpack.allowFilter', 'true');
    git(tmpdir(), 'clone', '-q', '--filter=blob:none', `file://${source}`, partial);
    return { partial, first };
  }

  it('gets a shallow clone of its last commit, and create says why (the history is not all there)', async () => {
    const { partial } = partialClone();
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const result = await runBin(['create', partial, '--name', id]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      'warning: the repository is a partial clone (it has a .promisor pack: cloned with --filter, or copied from such a clone) whose history the helper cannot fetch offline: the box got a shallow clone, its last commit only',
    );
    // (The bare image of a root without manifests has no git: the shallow file tells.)
    const inBox = await runBin([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      'cat f && test -s .git/shallow && echo shallow',
    ]);
    expect(inBox).toMatchObject({ code: 0, stdout: 'v2\nshallow\n' });
  }, 180_000);

  it('an abbreviated commit from a partial clone: the error is the abbreviation, not the missing objects', async () => {
    const { partial, first } = partialClone();
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    const result = await runBin(['create', partial, '--name', id, '--ref', first.slice(0, 8), '--json']);
    expect(result.code).toBe(1);
    const error = lastJsonError(result.stderr);
    expect(error.message).toContain('looks like an abbreviated commit');
    expect(error.message).not.toContain('partial clone');
    expect(error.hint).toMatch(/^give the full sha: `git rev-parse /);
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);

  it('a commit ref deeper than the last one: exits 1 saying it is a partial clone (not only git\'s "pack-objects died"), and leaves nothing', async () => {
    const { partial, first } = partialClone();
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    const result = await runBin(['create', partial, '--name', id, '--ref', first, '--json']);
    expect(result.code).toBe(1);
    const error = lastJsonError(result.stderr);
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.message).toMatch(/the repository is a partial clone, with a .promisor pack/);
    expect(error.hint).toMatch(/create from its URL instead/);
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);
});
