import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, LIFECYCLE_BUILT, runBin, sandboxWorkspace } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

// A folder without any manifest used to get the bare Debian image: `python3 main.py` was "command
// not found". The root's source files now choose the toolchain image (new-user trial).
describe.skipIf(!READY)('a root without a manifest gets the toolchain of its source files (bin)', () => {
  const workspace = sandboxWorkspace('ca-sbx-plain-src-');
  const { folder } = workspace;

  afterAll(async () => {
    expect(await workspace.cleanup()).toEqual([]);
  });

  async function create(dir: string, extra: string[] = []) {
    // Without --json: the phase lines on stderr say why the box got its image.
    const made = await workspace.create(dir, extra);
    const id = made.id;
    expect(made.code, made.stderr).toBe(0);
    const list = await runBin(['list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    const record = (JSON.parse(list.stdout) as { id: string }[]).find((row) => row.id === id);
    expect(record).toBeDefined();
    return { id, stderr: made.stderr, stdout: made.stdout, record: record as Record<string, unknown> };
  }

  it('only main.py: the python toolchain, `python3 main.py` prints 1, and create says why', async () => {
    const box = await create(folder('py-only', { 'main.py': 'print(1)\n' }));
    expect(box.stderr).toContain('no manifest; 1 .py file at the root: the python toolchain image');
    expect(box.record).toMatchObject({
      provider: 'python',
      image: 'ca-sbx-base:python',
      depsInstalled: true,
    });
    // Nothing to install: no offline "deps: none" hint that an install would help.
    expect(box.stdout).not.toContain('clone-then-cut installs them');
    const run = await runBin(['exec', box.id, '--', 'python3', 'main.py']);
    expect(run).toMatchObject({ code: 0, stdout: '1\n' });
  }, 300_000);

  it('only index.mjs: node runs it, offline and built with a network (no install, then a cache hit)', async () => {
    const dir = folder('mjs-only', {
      'index.mjs': 'console.log("node " + process.versions.node.split(".")[0]);\n',
    });
    const offline = await create(dir);
    expect(offline.stderr).toContain('no manifest; 1 .mjs file at the root: the node toolchain image');
    expect(offline.record).toMatchObject({ provider: 'node', image: 'ca-sbx-base:node' });
    expect((await runBin(['exec', offline.id, '--', 'node', 'index.mjs'])).stdout).toMatch(/^node \d+\n$/);

    const built = await create(dir, ['--network', 'clone-then-cut']);
    expect(built.record).toMatchObject({ provider: 'node', imageCacheHit: false });
    expect(String(built.record.image)).toMatch(/^ca-sbx:/);
    // The chosen provider is in the dephash: not the key a bare `plain` root of no sources gets.
    expect(built.record.dephash).not.toBe('');
    expect((await runBin(['exec', built.id, '--', 'node', 'index.mjs'])).stdout).toMatch(/^node \d+\n$/);
    const again = await create(dir, ['--network', 'clone-then-cut']);
    expect(again.record).toMatchObject({ provider: 'node', imageCacheHit: true, image: built.record.image });
    expect(again.stderr).toContain('the node toolchain image');
    // The image's cache label names the chosen provider: the box started from the source's last
    // deps image beside the clone is the one the dephash selects, and is kept.
    expect(again.stderr).toContain('started beside the clone');
    expect((await runBin(['exec', again.id, '--', 'node', 'index.mjs'])).stdout).toMatch(/^node \d+\n$/);
  }, 600_000);

  it('a .py file added beside two .mjs files keeps node; two more make it python, a new cache key', async () => {
    const dir = folder('mixed', { 'a.mjs': '', 'b.mjs': '', 'c.py': 'print(2)\n' });
    const first = await create(dir);
    expect(first.record.provider).toBe('node');
    writeFileSync(join(dir, 'd.py'), '');
    writeFileSync(join(dir, 'e.py'), '');
    const second = await create(dir);
    expect(second.stderr).toContain('no manifest; 3 .py files at the root: the python toolchain image');
    expect(second.record.provider).toBe('python');
    expect(second.record.dephash).not.toBe(first.record.dephash);
    expect((await runBin(['exec', second.id, '--', 'python3', 'c.py'])).stdout).toBe('2\n');
  }, 300_000);
});
