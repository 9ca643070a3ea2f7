// A repo whose tools write into their dependencies' folders (issue 28.1): the box's node_modules
// link into its writable view of its image (@ca-sandbox/docker image-view), so the writes work
// as on a developer's machine, land in the sandbox's own volumes, and never reach the image (a
// second sandbox of the same image sees the dependency as installed) or the host. A view that is
// not the box's own image over its own volumes is refused by the gate at start.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  HostCanary,
  labeledLeft,
  RUNTIMES,
  uniqueName,
} from './_harness.js';

const repo = join(FIXTURES, 'deps-writes');
let canary: HostCanary;

beforeEach(async () => {
  canary = await HostCanary.create();
});
afterEach(async () => {
  await canary.assertUntouched();
  await canary.remove();
});
afterAll(destroyLeftovers);

const DEP = 'node_modules/is-number';

// The links layout (`--deps-view links`, and every gVisor box): node_modules link into the box's
// writable view of its image. The default repo view's writes: repo-view.int.test.ts.
const links = ['--deps-view', 'links'];

describe('writes into a dependency folder', () => {
  const runtime = 'runc';
  it("run the repo's own test in the box; the image and a second box keep the dependency as installed", async () => {
    // A source of its own, new on every run: no earlier image of it, so no box started beside the
    // clone, and the deps link surely comes after the clone's listing (its folders are then new).
    const source = join(mkdtempSync(join(tmpdir(), 'ca-deps-writes-')), 'deps-writes');
    cpSync(repo, source, { recursive: true });
    const first = await createBox(source, { network: 'clone-then-cut', runtime, extra: links });
    const test = await execBox(first.id, ['npm', 'test']);
    expect(test.exitCode, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('deps-writes ok');
    // Where the writes went: the dependency as the box sees it, and the image's own copy.
    const seen = await execBox(first.id, ['sh', '-c', `ls -a ${DEP}; echo ---; ls -a /deps/src/${DEP}`]);
    expect(seen.stdout.split('---')[0]).toMatch(/tsconfig\.tmp\.tsbuildinfo/);
    expect(seen.stdout.split('---')[0]).not.toMatch(/README\.md/);
    expect(seen.stdout.split('---')[1]).toMatch(/README\.md/);
    expect(seen.stdout.split('---')[1]).not.toMatch(/tsbuildinfo/);

    // The report names what the box wrote in its deps, by the path the box saw.
    const report = await cli(['report', first.id, '--json']);
    expect(report.exitCode, report.stderr).toBe(0);
    const { changes } = JSON.parse(report.stdout) as {
      changes: { inImage: { path: string; changed?: string[] }[]; added: { path: string }[] };
    };
    const inDep = `/.ca-sbx-image/deps/src/${DEP}`;
    expect(changes.inImage).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: `${inDep}/index.js` }),
        expect.objectContaining({ path: `${inDep}/tsconfig.tmp.tsbuildinfo` }),
        expect.objectContaining({ path: `${inDep}/.cache/tool/entry` }),
        expect.objectContaining({ path: `${inDep}/README.md`, changed: ['removed'] }),
      ]),
    );
    // The node_modules links are the deps link, not the repo's news: the links, and the .bin and
    // @scope folders the link makes real (a new user saw them as "added" on every npm repo).
    const linked = await execBox(first.id, ['ls', 'node_modules/.bin', 'node_modules/@isaacs']);
    expect(linked.stdout).toMatch(/^semver$/m);
    expect(linked.stdout).toMatch(/^string-locale-compare$/m);
    expect(changes.added.filter((file) => file.path.includes('node_modules'))).toEqual([]);

    // Same source, same image (a cache hit): the dependency is as installed, and the test runs again.
    const second = await createBox(source, { network: 'clone-then-cut', runtime, extra: links });
    expect(second.image).toBe(first.image);
    const fresh = await execBox(second.id, [
      'sh',
      '-c',
      `ls -a ${DEP}; node -e "console.log(typeof require('is-number')(1))"`,
    ]);
    expect(fresh.stdout).toMatch(/README\.md/);
    expect(fresh.stdout).not.toMatch(/tsbuildinfo/);
    expect(fresh.stdout).toMatch(/^boolean$/m);
    expect((await execBox(second.id, ['npm', 'test'])).exitCode).toBe(0);

    // What the writes made goes with the sandbox.
    await destroyBox(first.id);
    await destroyBox(second.id);
    rmSync(join(source, '..'), { recursive: true, force: true });
    expect(await labeledLeft(first.id)).toEqual([]);
    expect(await labeledLeft(second.id)).toEqual([]);
  }, 400_000);
});

describe.skipIf(!RUNTIMES.includes('runsc'))('under gVisor', () => {
  it('the deps stay read-only, and create says so', async () => {
    const result = await cli([
      'create',
      repo,
      '--json',
      '--name',
      uniqueName('dw'),
      '--runtime',
      'runsc',
      '--network',
      'clone-then-cut',
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const box = JSON.parse(result.stdout) as { id: string };
    expect(result.stderr).toMatch(/dependencies stay read-only in this box \(gVisor/);
    const test = await execBox(box.id, ['npm', 'test']);
    expect(test.exitCode).not.toBe(0);
    expect(test.stdout + test.stderr).toMatch(/EROFS/);
    await destroyBox(box.id);
  }, 400_000);
});

describe('a dependency folder replaced whole', () => {
  it('its lost files are reported removed, though overlayfs leaves no whiteout for them', async () => {
    const box = await createBox(repo, { network: 'clone-then-cut' });
    const dep = `/.ca-sbx-image/deps/src/${DEP}`;
    const swap = await execBox(box.id, [
      'sh',
      '-c',
      `rm -rf ${dep} && mkdir ${dep} && echo 'module.exports = 1' > ${dep}/index.js`,
    ]);
    expect(swap.exitCode, swap.stderr).toBe(0);
    const report = await cli(['report', box.id, '--json']);
    expect(report.exitCode, report.stderr).toBe(0);
    const { changes } = JSON.parse(report.stdout) as {
      changes: { inImage: { path: string; changed?: string[] }[] };
    };
    const removed = changes.inImage
      .filter((file) => file.changed?.includes('removed'))
      .map((file) => file.path);
    expect(removed.sort()).toEqual(['LICENSE', 'README.md', 'package.json'].map((name) => `${dep}/${name}`));
    expect(changes.inImage.map((file) => file.path)).toContain(`${dep}/index.js`);
    // The box runs on after its report.
    expect((await execBox(box.id, ['true'])).exitCode).toBe(0);
    await destroyBox(box.id);
  }, 400_000);
});

describe('destroy --keep-volume', () => {
  it('keeps the source volume only: the view and what the box wrote in it go', async () => {
    const box = await createBox(repo, { network: 'clone-then-cut' });
    const kept = await cli(['destroy', box.id, '--keep-volume', '--json']);
    expect(kept.exitCode, kept.stderr).toBe(0);
    expect(await labeledLeft(box.id)).toEqual([`volume:ca-sbx-${box.id}`]);
    expect((await cli(['destroy', box.id])).exitCode).toBe(0);
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 400_000);
});

describe("the view's root stays the image's after a report and a restart", () => {
  it('the lister mounts the upper read-only without copying its image folder in: the box still cannot plant at the root', async () => {
    const box = await createBox(repo, { network: 'clone-then-cut' });
    const plant = ['sh', '-c', 'touch /.ca-sbx-image/planted 2>&1 || echo refused'];
    expect((await execBox(box.id, plant)).stdout).toMatch(/refused/);
    // The report's second lister mounts the (empty) upper at /work/repo: with the engine's copy
    // of that folder it became the box user's, and the view's root with it after a restart.
    expect((await cli(['report', box.id])).exitCode).toBe(0);
    const owner = await docker([
      'run',
      '--rm',
      '--network',
      'none',
      '-v',
      `ca-sbx_upper-${box.id}:/u:ro`,
      'ca-sbx-base:debian',
      'stat',
      '-c',
      '%u',
      '/u',
    ]);
    expect(owner.stdout.trim()).toBe('0');
    expect((await cli(['stop', box.id])).exitCode).toBe(0);
    expect((await cli(['start', box.id])).exitCode).toBe(0);
    expect((await execBox(box.id, plant)).stdout).toMatch(/refused/);
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 400_000);
});

describe("a view that is not the box's own image over its own volumes", () => {
  it("is refused by the gate at start: upper and work volumes that are not the sandbox's", async () => {
    const box = await createBox(repo, { network: 'clone-then-cut' });
    expect((await cli(['stop', box.id])).exitCode).toBe(0);
    // The overlay's upper and work are named in its options only: the sandbox's never-started
    // hold container keeps them in use; with it gone (anyone with the docker socket), put volumes
    // of the same names but of no sandbox (or of another) in their place.
    await docker(['rm', `ca-sbx_hold-${box.id}`]);
    for (const part of ['upper', 'work']) {
      const name = `ca-sbx_${part}-${box.id}`;
      await docker(['volume', 'rm', name]);
      await docker([
        'volume',
        'create',
        '--label',
        'ca.sandbox=1',
        '--label',
        `ca.sandbox.id=${box.id}-other`,
        name,
      ]);
    }
    const started = await cli(['start', box.id]);
    expect(started.exitCode).not.toBe(0);
    expect(started.stdout + started.stderr).toMatch(/image-view/);
    const state = await docker(['container', 'inspect', '-f', '{{.State.Running}}', `ca-sbx-${box.id}`], {
      allowFailure: true,
    });
    expect(state.stdout.trim()).not.toBe('true');
    await destroyBox(box.id);
    for (const part of ['upper', 'work'])
      await docker(['volume', 'rm', `ca-sbx_${part}-${box.id}`], { allowFailure: true });
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 400_000);
});
