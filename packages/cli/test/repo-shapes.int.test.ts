// Issue 28: real repositories' shapes that a developer's machine accepts, each a fixture of our own
// that failed in the box; the create runs through the bin (clone-then-cut: the install reaches the
// npm registry through the gateway) and the repo's own test command runs in the box.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const FIXTURES = fileURLToPath(new URL('../../build/test/fixtures/', import.meta.url));

const work = mkdtempSync(join(tmpdir(), 'ca-sbx-repo-shapes-'));
const ids: string[] = [];
const images = new Set<string>();

afterAll(() => {
  for (const id of ids) forceRemoveSandbox(id);
  for (const image of images) execFileSync('docker', ['image', 'rm', '--force', image], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
});

/** A copy of the fixture at a path of its own: a fresh source key, so the install really runs. */
function copyOf(fixture: string): string {
  const repo = join(work, `${fixture}-${randomUUID().slice(0, 6)}`);
  cpSync(join(FIXTURES, fixture), repo, { recursive: true });
  return repo;
}

interface Record {
  id: string;
  image: string;
  imageCacheHit: boolean;
  depsInstalled: boolean;
  installFallbacks: string[];
}

async function create(repo: string): Promise<{ record: Record; stderr: string }> {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  ids.push(id);
  const created = await runBin(['create', repo, '--json', '--name', id, '--network', 'clone-then-cut']);
  expect(created.code, created.stderr).toBe(0);
  const record = JSON.parse(created.stdout) as Record;
  images.add(record.image);
  return { record, stderr: created.stderr };
}

async function destroy(id: string): Promise<void> {
  const destroyed = await runBin(['destroy', id]);
  expect(destroyed.code, destroyed.stderr).toBe(0);
  expect(remainingObjects(id)).toEqual([]);
}

describe.skipIf(!READY)('real repository shapes run their own tests in the box', () => {
  it('a lockfile npm 10 refuses (ERESOLVE): installed once more with --legacy-peer-deps, said, and `npm test` passes', async () => {
    // npm-legacy-peer-lock: written by npm 8.5 with --legacy-peer-deps (react-dom 18 beside
    // react 17); `npm ci` of npm 10 (the base image's) stops at ERESOLVE.
    const repo = copyOf('npm-legacy-peer-lock');
    const first = await create(repo);
    expect(first.record).toMatchObject({ depsInstalled: true, installFallbacks: ['npm-legacy-peer-deps'] });
    expect(first.stderr).toMatch(/ERESOLVE.*installed again with --legacy-peer-deps/);
    const test = await runBin(['exec', first.record.id, '--', 'npm', 'test']);
    expect(test.code, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('peer ok react 17.0.2 react-dom 18.2.0');

    // A cache hit of that image says it too (the fallback is a label of the image).
    const second = await create(repo);
    expect(second.record).toMatchObject({
      imageCacheHit: true,
      image: first.record.image,
      installFallbacks: ['npm-legacy-peer-deps'],
    });
    expect(second.stderr).toMatch(/installed again with --legacy-peer-deps/);
    const listed = await runBin(['ls', '--json']);
    const row = (JSON.parse(listed.stdout) as Record[]).find((record) => record.id === second.record.id);
    expect(row?.installFallbacks).toEqual(['npm-legacy-peer-deps']);
    await destroy(first.record.id);
    await destroy(second.record.id);
  }, 600_000);

  it('a bun repo (bun.lock only): npm installs it and every create says so, a cache hit too; `npm test` passes', async () => {
    // Before, the substitution was a log line of the cold build only: a user saw versions drift
    // from the lockfile's and no word of why (a new user's trial, react-hook-form/resolvers).
    const repo = copyOf('bun-lock');
    const said =
      "warning: the repo installs with bun (bun.lock), which does not run here: npm installed its dependencies from package.json's version ranges, not bun.lock's versions, and the box has no bun";
    const first = await create(repo);
    expect(first.record.depsInstalled).toBe(true);
    expect(first.stderr.split('\n')).toContain(said);
    const test = await runBin(['exec', first.record.id, '--', 'npm', 'test']);
    expect(test.code, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^is-number 7\.\d+\.\d+ true$/m);
    const second = await create(repo);
    expect(second.record).toMatchObject({ imageCacheHit: true, image: first.record.image });
    expect(second.stderr.split('\n')).toContain(said);
    await destroy(first.record.id);
    await destroy(second.record.id);
  }, 600_000);

  it("the repo's own prepare (it builds dist/): skipped by the install, said by every create; run in the box, the tests pass", async () => {
    const repo = copyOf('npm-prepare-dist');
    const said =
      "warning: the install did not run the repo's own lifecycle scripts (package.json (prepare)): run them in the box if its tests need what they make";
    const first = await create(repo);
    expect(first.stderr.split('\n')).toContain(said);
    const before = await runBin(['exec', first.record.id, '--', 'npm', 'test']);
    expect(before.code).not.toBe(0);
    const after = await runBin(['exec', first.record.id, '--', 'sh', '-c', 'npm run prepare && npm test']);
    expect(after.code, after.stdout + after.stderr).toBe(0);
    expect(after.stdout).toContain('built by prepare');
    // A cache hit says it too (the image's label).
    const second = await create(repo);
    expect(second.record.imageCacheHit).toBe(true);
    expect(second.stderr.split('\n')).toContain(said);
    await destroy(first.record.id);
    await destroy(second.record.id);
  }, 600_000);

  it('a dependency shipped as an archive in the repo (file:vendor/*.tgz): installed, `npm test` passes', async () => {
    // Before, the context held the manifests only and npm stopped with ENOENT on the archive.
    const repo = copyOf('npm-vendored-tarball');
    const { record } = await create(repo);
    expect(record.depsInstalled).toBe(true);
    const test = await runBin(['exec', record.id, '--', 'npm', 'test']);
    expect(test.code, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('hello box from a vendored tarball');
    // The archive is part of the dephash: another archive under the same name is another image.
    const { writeFileSync } = await import('node:fs');
    const { execFileSync: run } = await import('node:child_process');
    const other = join(work, `pack-${randomUUID().slice(0, 6)}`);
    cpSync(join(FIXTURES, 'npm-vendored-tarball', 'vendor'), other, { recursive: true });
    run('tar', ['-xzf', 'vendored-greeting-1.0.0.tgz'], { cwd: other });
    writeFileSync(join(other, 'package', 'index.js'), "module.exports = () => 'the second archive';\n");
    run('tar', ['-czf', join(repo, 'vendor', 'vendored-greeting-1.0.0.tgz'), 'package'], { cwd: other });
    // The lockfile's integrity names the first archive: written anew, as the repo's developer would.
    rmSync(join(repo, 'package-lock.json'));
    run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { cwd: repo });
    const again = await create(repo);
    expect(again.record.image).not.toBe(record.image);
    const second = await runBin(['exec', again.record.id, '--', 'npm', 'test']);
    expect(second.stdout, second.stderr).toContain('the second archive');
    await destroy(record.id);
    await destroy(again.record.id);
  }, 600_000);

  it('a repo pinning Node 20 (.nvmrc) on a Node 22 base: the box runs Node 20, no mismatch warning', async () => {
    const { record, stderr } = await create(copyOf('node-pinned-runtime'));
    const toolchain = (record as unknown as { toolchain: { node?: string } }).toolchain;
    expect(toolchain.node).toMatch(/^20\./);
    expect(stderr).not.toMatch(/the repo asks for node/);
    const test = await runBin(['exec', record.id, '--', 'npm', 'test']);
    expect(test.code, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toMatch(/node v20\.\d+\.\d+ is-number true/);
    // The runtime is the image's: read-only in the box like every dependency.
    const write = await runBin([
      'exec',
      record.id,
      '--',
      'sh',
      '-c',
      'touch /deps/runtime/bin/node || echo read-only',
    ]);
    expect(write.stdout).toContain('read-only');
    await destroy(record.id);
  }, 600_000);

  it('a native addon of a repo pinning Node 20 compiles against Node 20’s headers and loads in the box', async () => {
    const repo = copyOf('node-addon');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(repo, '.nvmrc'), '20\n');
    const { record } = await create(repo);
    const test = await runBin(['exec', record.id, '--', 'sh', '-c', 'node --version && npm test --silent']);
    expect(test.code, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^v20\.\d+\.\d+\nhello from a native addon\n$/);
    await destroy(record.id);
  }, 600_000);

  it("a workspace package whose bin the repo builds (dist/): the install's stand-in never shows under /work/repo", async () => {
    // The context gets an empty stand-in for packages/tool/dist/cli.js (npm links a bin only when
    // its file exists); it goes when the install is done, so the repo view's lower never has it.
    const repo = join(work, `ws-bin-${randomUUID().slice(0, 6)}`);
    mkdirSync(join(repo, 'packages', 'tool', 'src'), { recursive: true });
    writeFileSync(
      join(repo, 'package.json'),
      JSON.stringify({ name: 'ws-bin', private: true, workspaces: ['packages/*'] }),
    );
    writeFileSync(
      join(repo, 'packages', 'tool', 'package.json'),
      JSON.stringify({ name: 'tool', version: '1.0.0', bin: { tool: 'dist/cli.js' } }),
    );
    writeFileSync(join(repo, 'packages', 'tool', 'src', 'cli.js'), "console.log('built')\n");
    const { record } = await create(repo);
    expect(record.depsInstalled).toBe(true);
    const look = await runBin([
      'exec',
      record.id,
      '--',
      'sh',
      '-c',
      'ls -A packages/tool; test -e packages/tool/dist && echo DIST-SEEN; test -L node_modules/tool && echo linked',
    ]);
    expect(look.code, look.stderr).toBe(0);
    expect(look.stdout).toBe('package.json\nsrc\nlinked\n');
    await destroy(record.id);
  }, 300_000);

  it('a lockfile npm 10 accepts takes no fallback (the record says none)', async () => {
    const { record, stderr } = await create(copyOf('node-esm'));
    expect(record).toMatchObject({ depsInstalled: true, installFallbacks: [] });
    expect(stderr).not.toMatch(/legacy-peer-deps/);
    await destroy(record.id);
  }, 600_000);

  it('an install failing for another reason keeps its failure (no retry)', async () => {
    // A version that does not exist: ETARGET, not ERESOLVE.
    const repo = copyOf('npm-legacy-peer-lock');
    rmSync(join(repo, 'package-lock.json'));
    const manifest = join(repo, 'package.json');
    const { readFileSync, writeFileSync } = await import('node:fs');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace('"react": "17.0.2"', '"react": "17.999.0"'),
    );
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const created = await runBin(['create', repo, '--json', '--name', id, '--network', 'clone-then-cut']);
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(/ETARGET|No matching version/);
    expect(created.stderr).not.toMatch(/installed again with --legacy-peer-deps/);
    expect(remainingObjects(id)).toEqual([]);
  }, 600_000);
});
