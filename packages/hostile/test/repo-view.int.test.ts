// Issue 28 item 5: a repo whose tools refuse files outside the project (vite's server.fs.allow:
// vitest in web mode loads a setup file named by package by its real path). With setting
// deps.view overlay the box's /work/repo is its repo view (@ca-sandbox/docker repo-view): the
// install's node_modules are real folders of the project, so the repo's own test passes; what the
// box writes into a dependency lands in the sandbox's own volume (never the image, never another
// box), the box cannot write that volume behind the view, the report and cp read it without the
// installed deps, and a view that is not the sandbox's own is refused by the gate at start.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  uniqueName,
} from './_harness.js';

const OVERLAY = { CA_SANDBOX_DEPS_VIEW: 'overlay' };
const DEP = 'node_modules/escape-string-regexp';
let canary: HostCanary;
const scratch: string[] = [];

/** The fixture as a source of its own, new on every run (no earlier image, no early box). */
function freshSource(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ca-repo-view-'));
  scratch.push(dir);
  const source = join(dir, 'vite-fs-allow');
  cpSync(join(FIXTURES, 'vite-fs-allow'), source, { recursive: true });
  return source;
}

beforeEach(async () => {
  canary = await HostCanary.create();
});
afterEach(async () => {
  await canary.assertUntouched();
  await canary.remove();
});
afterAll(async () => {
  await destroyLeftovers();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe('deps.view overlay: the installed deps under the checkout', () => {
  it("runs the repo's vitest (web mode, a setup file by package); writes stay in the sandbox; report and cp read its own files", async () => {
    const source = freshSource();
    const first = await createBox(source, { network: 'clone-then-cut', env: OVERLAY });
    // The views' volumes no container mounts (the overlays name them by path) are held: a
    // `docker volume prune` (every unused named volume, on engine 20.10) or rm cannot take them.
    for (const part of ['rwork', 'upper', 'work']) {
      const removed = await docker(['volume', 'rm', `ca-sbx_${part}-${first.id}`], { allowFailure: true });
      expect(removed.stderr).toMatch(/in use/);
    }
    const test = await execBox(first.id, ['npm', 'test']);
    expect(test.exitCode, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toMatch(/1 passed/);
    // Real folders of the project: what vite resolves stays inside /work/repo, PATH and NODE_PATH too.
    const seen = await execBox(first.id, [
      'sh',
      '-c',
      `readlink -f ${DEP}/index.js; echo "$NODE_PATH"; command -v vitest; git status --porcelain`,
    ]);
    expect(seen.stdout).toBe(
      `/work/repo/${DEP}/index.js\n/work/repo/node_modules\n/work/repo/node_modules/.bin/vitest\n`,
    );

    // A write into a dependency and a removal: the box sees them; its own volume holds them (a
    // copy up, a whiteout), and the box cannot write that volume behind the view.
    const write = await execBox(first.id, [
      'sh',
      '-c',
      `echo written > ${DEP}/written.txt && rm ${DEP}/readme.md && ls ${DEP} && echo --- && stat -c '%n %F' /.ca-sbx-raw/repo/${DEP}/written.txt /.ca-sbx-raw/repo/${DEP}/readme.md; touch /.ca-sbx-raw/repo/planted 2>/dev/null || echo refused`,
    ]);
    const [inBox = '', raw = ''] = write.stdout.split('---\n');
    expect(inBox).toMatch(/written\.txt/);
    expect(inBox).not.toMatch(/readme\.md/);
    expect(raw).toContain(`/.ca-sbx-raw/repo/${DEP}/written.txt regular file`);
    expect(raw).toContain(`/.ca-sbx-raw/repo/${DEP}/readme.md character special file`);
    expect(write.stdout).toMatch(/refused\n$/);

    // The report lists what the box wrote in its deps (a file, a removal), never the installed
    // deps themselves, and nothing of node_modules as added to the repo.
    const report = await cli(['report', first.id, '--json']);
    expect(report.exitCode, report.stderr).toBe(0);
    const { changes } = JSON.parse(report.stdout) as {
      changes: { added: { path: string }[]; inImage: { path: string; changed?: string[] }[] };
    };
    expect(changes.inImage).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: `/work/repo/${DEP}/written.txt` }),
        expect.objectContaining({ path: `/work/repo/${DEP}/readme.md`, changed: ['removed'] }),
      ]),
    );
    expect(changes.inImage.filter((file) => /node_modules\/(vitest|vite)\//.test(file.path))).toEqual([]);
    expect(changes.added.filter((file) => file.path.includes('node_modules'))).toEqual([]);

    // cp: the checkout and the box's writes, no installed dependency; /work (the whole view) refused.
    const out = mkdtempSync(join(tmpdir(), 'ca-repo-view-out-'));
    scratch.push(out);
    const copied = await cli(['cp', `${first.id}:/work/repo`, out]);
    expect(copied.exitCode, copied.stderr).toBe(0);
    expect(readFileSync(join(out, 'repo', DEP, 'written.txt'), 'utf8')).toBe('written\n');
    expect(existsSync(join(out, 'repo', 'package.json'))).toBe(true);
    expect(existsSync(join(out, 'repo', 'node_modules', 'vitest'))).toBe(false);
    const whole = await cli(['cp', `${first.id}:/work`, join(out, 'work')]);
    expect(whole.exitCode).toBe(2);
    expect(whole.stderr).toMatch(/holds \/work\/repo/);
    const installed = await cli(['cp', `${first.id}:/work/repo/node_modules/vitest/package.json`, out]);
    expect(installed.exitCode).toBe(2);
    expect(installed.stderr).toMatch(/installed dependency from the box's image/);

    // Same source, same image (a cache hit): the dependency as installed, the test passes again.
    const second = await createBox(source, { network: 'clone-then-cut', env: OVERLAY });
    expect(second.image).toBe(first.image);
    const fresh = await execBox(second.id, ['sh', '-c', `ls ${DEP} && npm test >/dev/null && echo ok`]);
    expect(fresh.stdout).toMatch(/readme\.md/);
    expect(fresh.stdout).not.toMatch(/written\.txt/);
    expect(fresh.stdout).toMatch(/ok\n$/);

    await destroyBox(first.id);
    await destroyBox(second.id);
    expect(await labeledLeft(first.id)).toEqual([]);
    expect(await labeledLeft(second.id)).toEqual([]);
  }, 400_000);

  it("a repo view whose work volume is not the sandbox's is refused by the gate at start", async () => {
    // The flag, this time (it wins over the setting).
    const box = await createBox(freshSource(), {
      network: 'clone-then-cut',
      extra: ['--deps-view', 'overlay'],
      env: { CA_SANDBOX_DEPS_VIEW: 'links' },
    });
    expect((await cli(['stop', box.id])).exitCode).toBe(0);
    // The work volume is named in the overlay's options only: the sandbox's never-started hold
    // container keeps it in use, stopped box or not; with that container gone (anyone with the
    // docker socket) it can be swapped.
    const work = `ca-sbx_rwork-${box.id}`;
    expect((await docker(['volume', 'rm', work], { allowFailure: true })).stderr).toMatch(/in use/);
    await docker(['rm', `ca-sbx_hold-${box.id}`]);
    await docker(['volume', 'rm', work]);
    await docker([
      'volume',
      'create',
      '--label',
      'ca.sandbox=1',
      '--label',
      `ca.sandbox.id=${box.id}-other`,
      work,
    ]);
    const started = await cli(['start', box.id]);
    expect(started.exitCode).not.toBe(0);
    expect(started.stdout + started.stderr).toMatch(/repo-view/);
    const state = await docker(['container', 'inspect', '-f', '{{.State.Running}}', `ca-sbx-${box.id}`], {
      allowFailure: true,
    });
    expect(state.stdout.trim()).not.toBe('true');
    await destroyBox(box.id);
    await docker(['volume', 'rm', work], { allowFailure: true });
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 400_000);
});

describe("a repo view's lower is never a link", () => {
  it('an install that swaps /deps/src for a link (a dependency bin the toolchain probe runs) fails the build', async () => {
    // A dependency shipped as an archive in the repo, with a bin named `gcc`: the toolchain probe
    // runs it after the install (the deps' bins come first on PATH), and it puts a link to a host
    // folder where /deps/src was (removed, not renamed: overlayfs refuses to rename a folder of a
    // lower layer). The kernel would resolve that lowerdir on the host.
    const dir = mkdtempSync(join(tmpdir(), 'ca-repo-view-swap-'));
    scratch.push(dir);
    const pkg = join(dir, 'pkg', 'package');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'evil-gcc', version: '1.0.0', bin: { gcc: 'gcc.js' } }),
    );
    writeFileSync(
      join(pkg, 'gcc.js'),
      "#!/usr/bin/env node\nconst fs = require('fs');\ntry { fs.rmSync('/deps/src', { recursive: true, force: true }); fs.symlinkSync('/etc', '/deps/src'); } catch {}\nconsole.log('gcc (Debian 12.2.0-14) 12.2.0');\n",
      { mode: 0o755 },
    );
    const source = join(dir, 'swap');
    mkdirSync(join(source, 'vendor'), { recursive: true });
    execFileSync('tar', [
      'czf',
      join(source, 'vendor', 'evil-gcc-1.0.0.tgz'),
      '-C',
      join(dir, 'pkg'),
      'package',
    ]);
    writeFileSync(
      join(source, 'package.json'),
      JSON.stringify({
        name: 'swap',
        version: '1.0.0',
        dependencies: { 'evil-gcc': 'file:vendor/evil-gcc-1.0.0.tgz' },
      }),
    );
    const name = uniqueName('swap');
    const result = await cli([
      'create',
      source,
      '--json',
      '--name',
      name,
      '--network',
      'clone-then-cut',
      '--deps-view',
      'overlay',
    ]);
    expect(result.exitCode, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/\/deps\/src is not a directory of its own after the install/);
    expect(await labeledLeft(name)).toEqual([]);
  }, 400_000);
});

describe("pnpm's bin shims name the project's node_modules", () => {
  // commitlint (corpus trial): pnpm writes each bin shim with NODE_PATH set to the folders the
  // install ran in, so a module a tool found only through it came from /deps/src, outside the
  // project a repo view shows (a second instance beside /work/repo/node_modules).
  it.each(['overlay', 'links'])(
    'a module found only through the NODE_PATH of a bin shim resolves under /work/repo (deps view %s)',
    async (view) => {
      const box = await createBox(join(FIXTURES, 'pnpm-shim-node-path'), {
        network: 'clone-then-cut',
        env: { CA_SANDBOX_DEPS_VIEW: view },
      });
      // probe.js requires is-number, a dependency of is-odd only: the shim's NODE_PATH finds it.
      const result = await execBox(box.id, [
        'sh',
        '-c',
        'pnpm --silent test && grep -c /deps/src node_modules/.bin/probe; grep -c "export NODE_PATH=\\"/work/repo/" node_modules/.bin/probe',
      ]);
      expect(result.exitCode, result.stderr).toBe(0);
      const [resolved, fromDeps, shimLines] = result.stdout.trim().split('\n');
      // Through the view the dependency is a real folder of the project; through links, the same
      // folder of the image that /work/repo/node_modules leads to (by the image view, if any).
      const dependency = 'node_modules/.pnpm/is-number@6.0.0/node_modules/is-number/index.js';
      if (view === 'overlay') expect(resolved).toBe(`/work/repo/${dependency}`);
      else expect(resolved).toMatch(new RegExp(`^(/\\.ca-sbx-image)?/deps/src/${dependency}$`));
      expect([fromDeps, shimLines]).toEqual(['0', '2']);
      await destroyBox(box.id);
    },
  );
});

describe('a lockfile the install rewrote', () => {
  // yarn berry installs a yarn.lock that does not match package.json (not immutable) and rewrites
  // it: the box has the repo's copy, and create says so. A repo view's box knows it from its deps
  // image's label (the build compared the hashes), with no node run in the box; links compare there.
  it.each(['overlay', 'links'])('is said by create, once, whatever the deps view (%s)', async (view) => {
    const name = uniqueName('stale-lock');
    const created = await cli(
      [
        'create',
        join(FIXTURES, 'stale-yarn-lock'),
        '--json',
        '--verbose',
        '--name',
        name,
        '--network',
        'clone-then-cut',
      ],
      { CA_SANDBOX_DEPS_VIEW: view },
    );
    expect(created.exitCode, created.stderr).toBe(0);
    const id = (JSON.parse(created.stdout) as { id: string }).id;
    try {
      expect(created.stderr.match(/^warning: the dependency install changed yarn\.lock /gm)).toHaveLength(1);
      const intoBox = created.stderr.includes(`POST /containers/ca-sbx-${id}/exec`);
      expect(intoBox).toBe(view === 'links');
      // The repo's copy is what the box has; the installed one is beside the deps.
      const locks = await execBox(id, [
        'sh',
        '-c',
        'grep -q "is-number@npm:7.0.0" yarn.lock && echo repo-7; grep -q "is-number@npm:6.0.0" /deps/src/yarn.lock && echo installed-6',
      ]);
      expect(locks.stdout).toBe('repo-7\ninstalled-6\n');
    } finally {
      await destroyBox(id);
    }
  });
});
