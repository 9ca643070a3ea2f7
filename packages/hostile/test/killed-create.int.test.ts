// A create killed with SIGKILL (its node process only, as a crash or an OOM kill does) at each
// moment of a cache miss: destroy <id> or prune, run at once, stops and removes everything the
// create started (the install's build step container, the build client, the gateway, networks,
// volume) and exits 0. Before the fix the running build step kept the sandbox's egress network
// ("has active endpoints"), carried none of the sandbox's labels, and its `docker build` client lived on.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The scoped prune of the lifecycle (tests never prune what other people made).
import { pruneWhere } from '../../lifecycle/dist/teardown.js';
import { BIN, cli, labeledLeft, uniqueName } from './_harness.js';

const made = new Set<string>();
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-killed-'));
});
afterAll(async () => {
  for (const id of made) await pruneWhere([`label=ca.sandbox.id=${id}`], {}, [id]);
  await rm(work, { recursive: true, force: true });
});

/**
 * A pnpm repo of its own (a new source: always a cache miss). With `hold`, its `.pnpmfile.cjs`
 * (loaded by pnpm in the install step) sleeps for ten minutes: the install step runs until it is
 * stopped. Without it the install is quick and the create reaches the box.
 */
async function fixture(hold: boolean): Promise<string> {
  const repo = await mkdtemp(join(work, 'killed-'));
  await writeFile(
    join(repo, 'package.json'),
    JSON.stringify({ name: 'killed', version: '1.0.0', private: true, packageManager: 'pnpm@9.15.9' }),
  );
  await writeFile(
    join(repo, '.pnpmfile.cjs'),
    hold
      ? "require('node:child_process').execFileSync('sleep', ['600']);\nmodule.exports = {};\n"
      : 'module.exports = {};\n',
  );
  return repo;
}

async function waitFor(check: () => Promise<boolean>, what: string, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function containersOf(id: string, role: string): Promise<string[]> {
  const listed = await docker([
    'ps',
    '--filter',
    'label=ca.sandbox=1',
    '--filter',
    `label=ca.sandbox.id=${id}`,
    '--filter',
    `label=ca.sandbox.role=${role}`,
    '--format',
    '{{.Names}}',
  ]);
  return listed.stdout.split('\n').filter(Boolean);
}

/** The repo's name in labels (sanitised: lower case). */
function repoPart(repo: string): string {
  return basename(repo).toLowerCase();
}

/** Every container (any state, any label set) of our builds of this repo. */
async function buildContainers(repo: string): Promise<string[]> {
  const listed = await docker([
    'ps',
    '--all',
    '--filter',
    `label=ca.sandbox.build.repo=${repoPart(repo)}`,
    '--format',
    '{{.Names}}',
  ]);
  return listed.stdout.split('\n').filter(Boolean);
}

/** Processes whose arguments name a build directory of process `pid` (its `docker build` client). */
async function buildClients(pid: number): Promise<string[]> {
  const listed = await execa('ps', ['-eo', 'pid=,args='], { reject: false });
  return listed.stdout.split('\n').filter((line) => line.includes(`ca-sbx-build-${pid}-`));
}

interface Create {
  child: ResultPromise;
  output: () => string;
}

function startCreate(repo: string, id: string): Create {
  made.add(id);
  const child = execa(process.execPath, [BIN, 'create', repo, '--name', id, '--network', 'clone-then-cut'], {
    reject: false,
    stdin: 'ignore',
    env: { NO_COLOR: '1' },
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return { child, output: () => output };
}

/** SIGKILL to the node process alone: its docker clients are not told. */
async function kill(create: Create): Promise<number> {
  const pid = create.child.pid as number;
  create.child.kill('SIGKILL');
  await create.child;
  return pid;
}

/** Nothing labeled with the id, no build container of the repo, no build client: now and 2 s on. */
async function expectNothingLeft(id: string, repo: string, pid: number): Promise<void> {
  expect(await labeledLeft(id)).toEqual([]);
  // Its step gone, the build fails and its client exits.
  await waitFor(async () => (await buildClients(pid)).length === 0, 'the build client to exit', 15_000);
  // A docker client of the killed create still in flight makes its object late: none did.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  expect(await labeledLeft(id)).toEqual([]);
  expect(await buildContainers(repo)).toEqual([]);
  expect(await buildClients(pid)).toEqual([]);
}

describe('a create killed during its cache miss is reclaimed at once', () => {
  it('during the install: the install ends with the killed create, ls shows it incomplete, destroy <id> removes it and exits 0', async () => {
    const repo = await fixture(true);
    const id = uniqueName('killed');
    const create = startCreate(repo, id);
    await waitFor(async () => (await containersOf(id, 'build')).length > 0, 'the install step', 240_000);
    // Running while the create lives (the fixture's install never ends by itself).
    const running = async () =>
      (
        await docker([
          'ps',
          '--quiet',
          '--filter',
          `label=ca.sandbox.id=${id}`,
          '--filter',
          'label=ca.sandbox.role=build',
        ])
      ).stdout.trim() !== '';
    expect(await running()).toBe(true);
    const pid = await kill(create);
    // The create's end closed the install's stdin: the step ended itself (a build step ended with
    // its client the same way), well before the time limit.
    await waitFor(async () => !(await running()), 'the install to end with its create', 60_000);

    const listed = await cli(['ls', '--json']);
    expect(listed.exitCode, listed.stderr).toBe(0);
    const row = (JSON.parse(listed.stdout) as { id: string; status: string; repo: string }[]).find(
      (record) => record.id === id,
    );
    expect(row).toMatchObject({ status: 'incomplete', repo: repoPart(repo) });
    // What the teardown must stop: the install container (found by the repo's build label too).
    // It is the engine's, not a client process of ours: nothing of the killed create's runs on.
    const stopped = (
      await docker([
        'ps',
        '--all',
        '--filter',
        `label=ca.sandbox.id=${id}`,
        '--filter',
        'label=ca.sandbox.role=build',
        '--format',
        '{{.Names}}',
      ])
    ).stdout
      .split('\n')
      .filter(Boolean);
    expect(await buildContainers(repo)).toEqual(stopped);
    expect(stopped).not.toEqual([]);
    expect(await buildClients(pid)).toEqual([]);

    const destroyed = await cli(['destroy', id]);
    expect(destroyed.exitCode, destroyed.stdout + destroyed.stderr).toBe(0);
    expect(destroyed.stdout + destroyed.stderr).not.toMatch(/active endpoints|left behind/);
    await expectNothingLeft(id, repo, pid);
    made.delete(id);
  }, 400_000);

  it('during the install: a prune of the id stops it, no failure, nothing left', async () => {
    const repo = await fixture(true);
    const id = uniqueName('killed');
    const create = startCreate(repo, id);
    await waitFor(async () => (await containersOf(id, 'build')).length > 0, 'the install step', 240_000);
    // A second into the step: pnpm runs the held hooks file.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const pid = await kill(create);
    const result = await pruneWhere([`label=ca.sandbox.id=${id}`], {}, [id]);
    expect(result.failures).toEqual([]);
    expect(result.leftovers).toEqual([]);
    expect(result.removed.some((name) => name.startsWith('network:ca-sbx.egress.'))).toBe(true);
    await expectNothingLeft(id, repo, pid);
    made.delete(id);
  }, 400_000);

  it('killed before its first object: destroy <id> waits out the late object, removes it, exits 0', async () => {
    // What a create killed a moment after its start leaves: its mark (create-marker.ts) and a docker
    // request in flight that makes the volume after destroy has listed nothing.
    const state = await mkdtemp(join(work, 'state-'));
    const id = uniqueName('killed');
    made.add(id);
    const exited = execa('true');
    await exited;
    const dir = join(state, 'ca-sandbox', 'sandboxes', id);
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'creating-0123456789abcdef.json'),
      JSON.stringify({ pid: exited.pid, startedAt: '' }),
    );
    const late = new Promise((resolve) => setTimeout(resolve, 700)).then(() =>
      docker([
        'volume',
        'create',
        '--label',
        'ca.sandbox=1',
        '--label',
        `ca.sandbox.id=${id}`,
        `ca-sbx-late-${id}`,
      ]),
    );
    const destroyed = await cli(['destroy', id], { XDG_STATE_HOME: state });
    await late;
    expect(destroyed.exitCode, destroyed.stdout + destroyed.stderr).toBe(0);
    expect(destroyed.stdout + destroyed.stderr).toContain(`removed volume:ca-sbx-late-${id}`);
    expect(await labeledLeft(id)).toEqual([]);
    // The mark went with the sandbox; without one, an unknown id is still "no such sandbox".
    expect(existsSync(dir)).toBe(false);
    const again = await cli(['destroy', id], { XDG_STATE_HOME: state });
    expect(again.exitCode).not.toBe(0);
    expect(again.stderr).toMatch(/no such sandbox/);
    made.delete(id);
  }, 60_000);

  for (const moment of ['clone', 'gateway', 'box'] as const) {
    it(`at the ${moment}: destroy <id> exits 0, nothing left`, async () => {
      const repo = await fixture(moment !== 'box');
      const id = uniqueName('killed');
      const create = startCreate(repo, id);
      const reached = {
        clone: async () => create.output().includes('clone: started'),
        gateway: async () => (await containersOf(id, 'gateway')).length > 0,
        box: async () => create.output().includes('run: started'),
      }[moment];
      await waitFor(reached, `the ${moment}`, 240_000);
      const pid = await kill(create);
      const destroyed = await cli(['destroy', id]);
      expect(destroyed.exitCode, destroyed.stdout + destroyed.stderr).toBe(0);
      expect(destroyed.stdout + destroyed.stderr).not.toMatch(/active endpoints|left behind/);
      await expectNothingLeft(id, repo, pid);
      made.delete(id);
    }, 400_000);
  }
});
