import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lastImageTag } from '@ca-sandbox/build';
import {
  type DepsView,
  dockerInfo,
  engine,
  imageExists,
  RAW_REPO_DIR,
  sandboxNames,
} from '@ca-sandbox/docker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyAll, labeledObjects, makeGitRepo, removeDir, tempDir, uniqueId } from '../test/helpers.js';
import { createSandbox, type PhaseEvent } from './create/index.js';
import { CreateAbortedError } from './errors.js';
import { execInSandbox } from './exec.js';
import type { SandboxRecord } from './record.js';

// The box started beside the clone (create/speculate.ts), against the real engine: kept on a hit,
// removed on a miss (the box gets the new deps), nothing left by an abort during the overlap.

const ready = await imageExists('ca-sbx-base:git').catch(() => false);
const runtimes = (await dockerInfo().catch(() => ({ runtimes: [] as string[] }))).runtimes.includes('runsc')
  ? (['runc', 'runsc'] as const)
  : (['runc'] as const);
const created = new Set<string>();
let work: string;

beforeAll(async () => {
  process.env.CA_SANDBOX_CA_CERTS ??= process.env.NODE_EXTRA_CA_CERTS;
  work = await tempDir('ca-lc-early-');
});
afterAll(async () => {
  await destroyAll(created);
  await removeDir(work);
});

const manifest = (version: string) =>
  JSON.stringify({ name: 'earlybox', version: '1.0.0', dependencies: { 'is-number': version } });

/**
 * A create whose phase events and log lines are kept. `links` unless asked: a box with a repo
 * view (the default) starts only once the checkout is written, not beside the clone.
 */
async function create(
  source: string,
  runtime: 'runc' | 'runsc',
  network: string,
  signal?: AbortSignal,
  depsView: DepsView = 'links',
) {
  const name = uniqueId(created);
  const phases: PhaseEvent[] = [];
  const logs: string[] = [];
  // Phase events and log lines in the order they came.
  const order: string[] = [];
  const record = await createSandbox(
    { source, name, network, runtime, depsView },
    {
      onPhase: (event) => {
        phases.push(event);
        order.push(`${event.phase} ${event.status}`);
      },
      onLog: (line) => {
        logs.push(line);
        order.push(line);
      },
      ...(signal ? { signal } : {}),
    },
  );
  const kept = logs.some((line) => line.startsWith('early box kept:'));
  const removed = logs.some((line) => line.startsWith('early box removed:'));
  return { record, phases, logs, order, kept, removed };
}

async function sh(record: SandboxRecord, script: string): Promise<string> {
  return (await execInSandbox(record.id, ['/bin/sh', '-c', script])).stdout;
}

/**
 * Every container of the sandbox but the never-started one that holds its view volumes: exactly
 * its box (no early box left beside it).
 */
async function containersOf(record: SandboxRecord): Promise<string[]> {
  const found = await engine.container.list({ all: true, labels: [`ca.sandbox.id=${record.id}`] });
  return found.map((item) => item.name).filter((name) => name !== sandboxNames(record.id).hold);
}

describe.skipIf(!ready).each(runtimes)('the box started beside the clone, under %s', (runtime) => {
  let repo: string;
  let first: SandboxRecord;

  beforeAll(async () => {
    repo = await realpath(
      await makeGitRepo(join(work, `earlybox-${runtime}`), {
        'package.json': manifest('7.0.0'),
        'index.js': "console.log(require('is-number/package.json').version);\n",
      }),
    );
    // Cold: nothing to guess from; the build sets the source's -last tag.
    const cold = await create(repo, runtime, 'clone-then-cut');
    first = cold.record;
    expect(cold).toMatchObject({ kept: false, removed: false });
    expect(first.imageCacheHit).toBe(false);
  }, 300_000);

  it('a cache hit keeps the early box: the same image and labels, the checkout complete, deps linked', async () => {
    const tagged = await engine.image.inspect(
      lastImageTag({ repoName: `earlybox-${runtime}`, source: repo, imageSource: repo }),
    );
    expect(tagged?.Id).toBe((await engine.image.inspect(first.image))?.Id);
    const hit = await create(repo, runtime, 'offline');
    expect(hit.kept).toBe(true);
    expect(hit.record).toMatchObject({ imageCacheHit: true, image: first.image, runtime });
    expect(hit.phases.find((event) => event.phase === 'run' && event.status === 'done')?.detail).toMatch(
      /started beside the clone/,
    );
    // The box started before the checkout was written sees all of it (gVisor too), and the deps.
    expect(await sh(hit.record, 'cat package.json; echo; node index.js')).toBe(
      `${manifest('7.0.0')}\n7.0.0\n`,
    );
    expect(await containersOf(hit.record)).toEqual([sandboxNames(hit.record.id).box]);
  }, 300_000);

  it('a miss removes the early box: the box runs the new deps image and nothing else is left', async () => {
    await writeFile(join(repo, 'package.json'), manifest('6.0.0'));
    const git = await import('node:child_process');
    git.execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qam', 'v6'], {
      cwd: repo,
    });
    // Untracked files to copy in make a clone that outlasts the early box's start (under runsc
    // too, on a loaded machine): its link then runs and has links to undo. With a tiny checkout
    // the dephash can name the new image before the box passed its gate, and nothing is linked.
    await mkdir(join(repo, 'bulk-miss'));
    for (let index = 0; index < 3000; index += 1)
      await writeFile(join(repo, 'bulk-miss', `f${index}.txt`), 'x'.repeat(512));
    const miss = await create(repo, runtime, 'clone-then-cut');
    await rm(join(repo, 'bulk-miss'), { recursive: true });
    const boxStarted = miss.logs.findIndex((line) => line.startsWith('early box: started'));
    expect(boxStarted).toBeGreaterThanOrEqual(0);
    expect(boxStarted).toBeLessThan(miss.logs.findIndex((line) => line.startsWith('dephash ')));
    expect(miss).toMatchObject({ kept: false, removed: true });
    expect(miss.record.image).not.toBe(first.image);
    expect(miss.record.imageCacheHit).toBe(false);
    expect(await sh(miss.record, 'node index.js')).toBe('6.0.0\n');
    expect(await containersOf(miss.record)).toEqual([sandboxNames(miss.record.id).box]);
    // The early box linked node_modules beside the dephash, then removed its links before it
    // went: the new box linked into a checkout without them (nothing 'kept' as the repo's own).
    expect(miss.logs).toContainEqual(expect.stringMatching(/^early box: its node_modules links are removed/));
    expect(miss.logs.filter((line) => line.startsWith('node_modules the repo has itself'))).toEqual([]);
    // offline, no image for these manifests: the bare base; the early box (of the 6.0.0 image,
    // now the -last) is gone.
    await writeFile(join(repo, 'package.json'), manifest('5.0.0'));
    git.execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qam', 'v5'], {
      cwd: repo,
    });
    const bare = await create(repo, runtime, 'offline');
    expect(bare).toMatchObject({ kept: false, removed: true });
    expect(bare.record).toMatchObject({ imageCacheHit: false, depsInstalled: false });
    expect(await containersOf(bare.record)).toEqual([sandboxNames(bare.record.id).box]);
    // The bare base links nothing: the early box's links went with it, none dangles here.
    expect(await sh(bare.record, 'ls -A; test -e node_modules && echo linked || echo none')).toBe(
      '.git\nindex.js\npackage.json\nnone\n',
    );
    for (const record of [miss.record, bare.record]) {
      await import('./teardown.js').then(({ destroySandbox }) => destroySandbox(record.id));
      expect(await labeledObjects(record.id)).toEqual([]);
    }
  }, 600_000);

  it('an abort while the early box runs beside the clone leaves nothing', async () => {
    // Files to copy in (untracked: the tree goes in whole, then the clone): a clone that lasts.
    await mkdir(join(repo, 'bulk'));
    for (let index = 0; index < 3000; index += 1)
      await writeFile(join(repo, 'bulk', `f${index}.txt`), 'x'.repeat(512));
    const controller = new AbortController();
    const name = uniqueId(created);
    const box = sandboxNames(name).box;
    let sawBox = false;
    let cloneDone = false;
    const watch = setInterval(() => {
      void engine.container.find(box).then((found) => {
        if (found && !cloneDone && !controller.signal.aborted) {
          sawBox = true;
          controller.abort();
        }
      });
    }, 15);
    try {
      await expect(
        createSandbox(
          // links: a box with a repo view (the default) starts only once the clone is done.
          { source: repo, name, network: 'offline', runtime, depsView: 'links' },
          {
            signal: controller.signal,
            onPhase: (event) => {
              if (event.phase === 'clone' && event.status === 'done') cloneDone = true;
            },
          },
        ),
      ).rejects.toBeInstanceOf(CreateAbortedError);
    } finally {
      clearInterval(watch);
    }
    expect(sawBox).toBe(true);
    expect(await labeledObjects(name)).toEqual([]);
  }, 300_000);
});

describe.skipIf(!ready)('the box started early with a repo view (deps.view overlay)', () => {
  it('starts once the checkout is written: kept on a hit (its view over the checkout), removed on a miss', async () => {
    const repo = await realpath(
      await makeGitRepo(join(work, 'earlybox-view'), {
        'package.json': manifest('7.0.0'),
        'index.js': "console.log(require('is-number/package.json').version);\n",
      }),
    );
    const cold = await create(repo, 'runc', 'clone-then-cut', undefined, 'overlay');
    expect(cold).toMatchObject({ kept: false, removed: false });
    const viewed = async (record: SandboxRecord) =>
      (await engine.container.find(sandboxNames(record.id).box))?.Mounts.some(
        (mount) => mount.Destination === RAW_REPO_DIR,
      );
    expect(await viewed(cold.record)).toBe(true);

    const hit = await create(repo, 'runc', 'offline', undefined, 'overlay');
    expect(hit.kept).toBe(true);
    expect(await viewed(hit.record)).toBe(true);
    // Never mounted over a volume the clone was still writing: the box starts after the clone.
    const started = hit.order.findIndex((line) => line.startsWith('early box: started'));
    expect(started).toBeGreaterThan(hit.order.indexOf('clone done'));
    expect(hit.order.indexOf('clone done')).toBeGreaterThanOrEqual(0);
    // As on a developer's machine after npm install: node_modules and npm's lockfile untracked.
    expect(await sh(hit.record, 'cat package.json; echo; node index.js; git status --porcelain')).toBe(
      `${manifest('7.0.0')}\n7.0.0\n?? node_modules/\n?? package-lock.json\n`,
    );
    expect(await containersOf(hit.record)).toEqual([sandboxNames(hit.record.id).box]);

    await writeFile(join(repo, 'package.json'), manifest('6.0.0'));
    const git = await import('node:child_process');
    git.execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qam', 'v6'], {
      cwd: repo,
    });
    const miss = await create(repo, 'runc', 'clone-then-cut', undefined, 'overlay');
    expect(miss.kept).toBe(false);
    expect(await viewed(miss.record)).toBe(true);
    expect(await sh(miss.record, 'node index.js; ls node_modules/is-number')).toMatch(/^6\.0\.0\n/);
    expect(await containersOf(miss.record)).toEqual([sandboxNames(miss.record.id).box]);
    for (const record of [cold.record, hit.record, miss.record]) {
      await import('./teardown.js').then(({ destroySandbox }) => destroySandbox(record.id));
      expect(await labeledObjects(record.id)).toEqual([]);
    }
  }, 600_000);
});
