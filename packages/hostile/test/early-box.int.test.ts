import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGE_VIEW_DIR } from '@ca-sandbox/docker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  destroyBox,
  execBox,
  FIXTURES,
  HostCanary,
  labeledLeft,
  RUNTIMES,
  uniqueName,
} from './_harness.js';

// The box of a cached source starts beside the clone, sharing the volume while the helper writes
// the checkout. The repo's install (sleep-shadow) plants a `sleep` first on the box PATH that
// marks the volume and /tmp when it runs: nothing of it may run in a box before create returns,
// early or not, and a changed manifest must give the box the new install, never the guessed one.

/** `ca-sandbox create --verbose` (its log says whether the early box was kept). */
async function create(source: string, runtime: string, network: string, made: Set<string>) {
  const name = uniqueName('hostile-early');
  made.add(name);
  const result = await cli([
    'create',
    source,
    '--name',
    name,
    '--network',
    network,
    '--runtime',
    runtime,
    '--verbose',
  ]);
  expect(result.exitCode, result.stderr).toBe(0);
  return {
    id: name,
    kept: /early box kept:/.test(result.stderr),
    removed: /early box removed:/.test(result.stderr),
  };
}

/** Right after create returned: the planted sleep is there, and it never ran. */
async function assertNothingRan(id: string): Promise<void> {
  expect((await execBox(id, ['/bin/cat', '/deps/node_modules/.bin/sleep'])).stdout).toContain(
    'sleep-shadow-ran',
  );
  const marks = await execBox(id, ['/bin/ls', '-a', '/work/repo', '/tmp']);
  expect(marks.stdout).not.toContain('sleep-shadow-ran');
  const ps = await execBox(id, ['/bin/ps', '-eo', 'args']);
  expect(ps.stdout).toMatch(/^\/bin\/sleep infinity$/m);
}

describe.each(RUNTIMES)('a box started beside the clone, under %s', (runtime) => {
  const made = new Set<string>();
  let canary: HostCanary;
  let source: string;

  beforeAll(async () => {
    canary = await HostCanary.create();
    source = await mkdtemp(join(tmpdir(), `ca-hostile-early-${runtime}-`));
    await cp(join(FIXTURES, 'sleep-shadow'), source, { recursive: true });
  });
  afterAll(async () => {
    for (const id of made) await cli(['destroy', id]);
    await rm(source, { recursive: true, force: true });
    await canary.remove();
  });

  it('a dependency sleep first on the PATH never runs before create returns, cold or from the cache', async () => {
    const cold = await create(source, runtime, 'clone-then-cut', made);
    expect(cold).toMatchObject({ kept: false, removed: false });
    await assertNothingRan(cold.id);
    const cached = await create(source, runtime, 'offline', made);
    // The cached deps image was guessed from the source's last create and kept.
    expect(cached.kept).toBe(true);
    await assertNothingRan(cached.id);
    expect((await execBox(cached.id, ['/bin/cat', '/deps/generation'])).stdout).toBe('1.0.0\n');
    for (const id of [cold.id, cached.id]) {
      await destroyBox(id);
      made.delete(id);
    }
    await canary.assertUntouched();
  }, 600_000);

  it('a changed manifest misses the guess: the box runs the new install, the guessed box is gone', async () => {
    const manifest = JSON.parse(await readFile(join(source, 'package.json'), 'utf8'));
    await writeFile(join(source, 'package.json'), JSON.stringify({ ...manifest, version: '2.0.0' }));
    const changed = await create(source, runtime, 'clone-then-cut', made);
    // The guess (the 1.0.0 image) started and was removed once the dephash named another image.
    expect(changed).toMatchObject({ kept: false, removed: true });
    expect((await execBox(changed.id, ['/bin/cat', '/deps/generation'])).stdout).toBe('2.0.0\n');
    await assertNothingRan(changed.id);
    // The box's writable view of its image and its repo view (runc only), of the new image, and
    // the never-started container that holds their volumes: the guess's went with it.
    const view =
      runtime === 'runc'
        ? [
            ...['view', 'upper', 'work', 'repo', 'rwork'].map(
              (part) => `volume:ca-sbx_${part}-${changed.id}`,
            ),
            `container:ca-sbx_hold-${changed.id}`,
          ]
        : [];
    expect((await labeledLeft(changed.id)).sort()).toEqual(
      [`container:ca-sbx-${changed.id}`, `volume:ca-sbx-${changed.id}`, ...view].sort(),
    );
    if (runtime === 'runc')
      expect((await execBox(changed.id, ['/bin/cat', `${IMAGE_VIEW_DIR}/deps/generation`])).stdout).toBe(
        '2.0.0\n',
      );
    await destroyBox(changed.id);
    made.delete(changed.id);
    expect(await labeledLeft(changed.id)).toEqual([]);
    await canary.assertUntouched();
  }, 600_000);
});
