import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The scoped prune of the lifecycle (tests never prune what other people made).
import { pruneWhere } from '../../lifecycle/dist/teardown.js';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  labeledLeft,
  uniqueName,
} from './_harness.js';

/** The built library's entry, for the create that a child process drives (and is killed in). */
const LIFECYCLE_ENTRY = fileURLToPath(new URL('../../lifecycle/dist/index.js', import.meta.url));

interface ListedSandbox {
  id: string;
  status: string;
  container: string;
  volume: string;
}

const strangers = new Set<string>();
const killed = new Set<string>();
let work: string;
let source: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-half-'));
  source = join(work, 'repo');
  await mkdir(source);
  await writeFile(join(source, 'README.md'), 'plain\n');
});
afterAll(async () => {
  await destroyLeftovers();
  for (const name of strangers) await docker(['rm', '--force', '--', name], { allowFailure: true });
  for (const id of killed) await pruneWhere([`label=ca.sandbox.id=${id}`], {}, [id]);
  await rm(work, { recursive: true, force: true });
});

async function listed(id: string): Promise<ListedSandbox | undefined> {
  const result = await cli(['ls', '--json']);
  expect(result.exitCode, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as ListedSandbox[]).find((record) => record.id === id);
}

async function waitFor(check: () => Promise<boolean>, what: string, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('a create killed with SIGKILL in the middle of its clone', () => {
  let tarpit: StartedTestContainer;
  let url: string;

  beforeAll(async () => {
    // A git port that accepts and never answers: the clone hangs until its driver is gone.
    const hold = [
      'import socket, sys',
      's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
      "s.bind(('0.0.0.0', 9418)); s.listen(64); print('holding', flush=True)",
      'held = []',
      'while True: held.append(s.accept()[0])',
    ].join('\n');
    tarpit = await new GenericContainer('ca-sbx-base:python')
      .withUser('1000:1000')
      .withLabels({ 'ca.hostile.test': 'tarpit' })
      .withCommand(['python3', '-c', hold])
      .withWaitStrategy(Wait.forLogMessage(/holding/))
      .start();
    url = `git://${tarpit.getIpAddress('bridge')}/r.git`;
  });
  afterAll(async () => {
    await tarpit?.stop();
  });

  // The create runs in a child process of the built library, not the bin: the bin clones URLs only
  // through the egress gateway, which refuses every address of this machine and its docker networks,
  // so a tarpit of ours is reachable only with the helper on its bridge (`cloneNetwork`). What is
  // under test (ls of half-made ids, the helper's heartbeat, prune's rounds) is the same code.
  it('shows in ls as creating then incomplete, its helper stops by itself, one scoped prune leaves nothing', async () => {
    const id = uniqueName('killed');
    killed.add(id);
    const driver = [
      `import { createSandbox } from ${JSON.stringify(LIFECYCLE_ENTRY)};`,
      `await createSandbox({ source: ${JSON.stringify(url)}, name: ${JSON.stringify(id)}, cloneNetwork: 'bridge' },`,
      "  { onPhase: (event) => process.stderr.write(event.phase + ': ' + event.status + '\\n') });",
    ].join('\n');
    const child = execa(process.execPath, ['--input-type=module', '-e', driver], {
      reject: false,
      stdin: 'ignore',
      env: { NO_COLOR: '1' },
    });
    let progress = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      progress += chunk.toString('utf8');
    });
    await waitFor(async () => progress.includes('clone: start'), 'the clone to start', 120_000);
    await waitFor(
      async () => (await labeledLeft(id)).some((name) => name.startsWith('container:')),
      'the helper',
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    child.kill('SIGKILL');
    await child;

    const creating = await listed(id);
    expect(creating).toMatchObject({ id, status: 'creating', volume: `ca-sbx-${id}` });
    expect(creating?.container).toMatch(/helper/);
    const human = await cli(['ls']);
    expect(human.stdout).toMatch(new RegExp(`${id}\\s+creating`));

    // Its driver is gone: the helper stops by itself (heartbeat, 90 s), the clone in it with it.
    await waitFor(async () => (await listed(id))?.status === 'incomplete', 'the helper to stop', 150_000);

    const result = await pruneWhere([`label=ca.sandbox.id=${id}`], {}, [id]);
    expect(result.failures).toEqual([]);
    expect(result.leftovers).toEqual([]);
    expect(await labeledLeft(id)).toEqual([]);
    expect(await listed(id)).toBeUndefined();
    killed.delete(id);
  });
});

describe('names and roles', () => {
  it('a sandbox named <x>-helper and a sandbox <x> coexist (a helper name is never a box name)', async () => {
    const base = uniqueName('pair');
    const helperNamed = `${base}-helper`;
    const one = await cli(['create', source, '--json', '--name', helperNamed]);
    expect(one.exitCode, one.stderr).toBe(0);
    const two = await cli(['create', source, '--json', '--name', base]);
    try {
      expect(two.exitCode, two.stderr).toBe(0);
      expect((await cli(['exec', helperNamed, '--', 'cat', 'README.md'])).exitCode).toBe(0);
      expect((await cli(['exec', base, '--', 'cat', 'README.md'])).exitCode).toBe(0);
    } finally {
      await cli(['destroy', helperNamed, base]);
    }
    expect(await labeledLeft(helperNamed)).toEqual([]);
    expect(await labeledLeft(base)).toEqual([]);
  });

  it('exec and cp refuse a container that carries a box name but is not a box', async () => {
    // What a sandbox called `<x>-helper` pointed at under the old names: the helper of `<x>`.
    const x = uniqueName('role');
    const name = `ca-sbx-${x}-helper`;
    strangers.add(name);
    await docker([
      'run',
      '-d',
      '--name',
      name,
      '--label',
      'ca.sandbox=1',
      '--label',
      `ca.sandbox.id=${x}`,
      '--label',
      'ca.sandbox.role=helper',
      '--network',
      'none',
      'ca-sbx-base:git',
      'sleep',
      '600',
    ]);
    const target = `${x}-helper`;
    const exec = await cli(['exec', target, '--json', '--', 'touch', '/tmp/reached']);
    // exec's own failures exit 125 (never a code the command could have returned).
    expect(exec.exitCode, exec.stderr).toBe(125);
    expect(JSON.parse(exec.stderr).error.code).toBe('NOT_A_BOX');
    const cp = await cli(['cp', `${target}:/etc/hostname`, join(work, 'copied'), '--json']);
    expect(cp.exitCode, cp.stderr).toBe(2);
    expect(JSON.parse(cp.stderr).error.code).toBe('NOT_A_BOX');
    const reached = await docker(['exec', name, 'test', '-e', '/tmp/reached'], { allowFailure: true });
    expect(reached.exitCode).toBe(1);
    // And an ordinary box still works.
    const box = await createBox(source);
    expect((await execBox(box.id, ['cat', 'README.md'])).stdout).toBe('plain\n');
    await destroyBox(box.id);
  });

  it('a timeout that fires before the box check answers runs nothing in a stranger and reports the refusal', async () => {
    // A container named like a box, not ours. The exec's create goes out beside the box check; a
    // timeout of 1 ms fires before the check answers, and the kill it triggers must wait for it.
    const x = uniqueName('stranger');
    const name = `ca-sbx-${x}`;
    strangers.add(name);
    await docker(['run', '-d', '--name', name, '--network', 'none', 'ca-sbx-base:git', 'sleep', '600']);
    const since = Math.floor(Date.now() / 1000) - 1;
    for (const flags of [['--timeout', '0.001'], []]) {
      const exec = await cli(['exec', x, '--json', ...flags, '--', 'touch', '/tmp/reached']);
      expect(exec.exitCode, exec.stdout + exec.stderr).toBe(125);
      expect(JSON.parse(exec.stderr).error.code).toBe('NOT_A_BOX');
    }
    const until = Math.floor(Date.now() / 1000) + 1;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const events = await docker([
      'events',
      '--since',
      String(since),
      '--until',
      String(until),
      '--filter',
      `container=${name}`,
      '--filter',
      'event=exec_start',
      '--format',
      '{{.Action}}',
    ]);
    // Our execs may be created there (beside the check), never started.
    expect(events.stdout.trim()).toBe('');
    const reached = await docker(['exec', name, 'test', '-e', '/tmp/reached'], { allowFailure: true });
    expect(reached.exitCode).toBe(1);
  });
});
