import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { imageExists, SANDBOX_FILTER, sandboxNames } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import {
  applyAllowlist,
  createSandboxNetwork,
  listFirewallRules,
  removeFirewallRules,
  removeSandboxNetworks,
} from '@ca-sandbox/network';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyAll, labeledObjects, removeDir, tempDir, uniqueId } from '../test/helpers.js';
import { createSandbox } from './create/index.js';
import { CreateAbortedError, SandboxNotFoundError } from './errors.js';
import { destroySandbox, pruneWhere, Sweep, sweepOrphanRules } from './teardown.js';

const ready =
  (await imageExists('ca-sbx-base:git').catch(() => false)) && (await imageExists('ca-sbx-base:python'));
const isRoot = process.getuid?.() === 0;
const created = new Set<string>();
const holders = new Set<string>();
let work: string;
let source: string;

beforeAll(async () => {
  work = await tempDir();
  source = join(work, 'src');
  await mkdir(source);
  await writeFile(join(source, 'a.txt'), 'a');
});
afterAll(async () => {
  for (const name of holders) await docker(['rm', '-f', name], { allowFailure: true });
  await destroyAll(created);
  await removeDir(work);
});

async function waitFor(check: () => Promise<boolean>, what: string, limitMs = 60_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const helperExists = (id: string) => async () =>
  (await labeledObjects(id)).includes(`container:${sandboxNames(id).helper}`);

describe.skipIf(!ready)('destroySandbox', () => {
  it('create → destroy leaves zero labeled objects', async () => {
    const id = uniqueId(created);
    await createSandbox({ source, name: id });
    expect(await labeledObjects(id)).toEqual([`container:ca-sbx-${id}`, `volume:ca-sbx-${id}`]);
    const result = await destroySandbox(id);
    expect(result).toEqual({
      removed: [`container:ca-sbx-${id}`, `volume:ca-sbx-${id}`],
      failures: [],
      leftovers: [],
    });
    expect(await labeledObjects(id)).toEqual([]);
    await expect(destroySandbox(id)).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  it('keepVolume keeps the volume; a second destroy removes it', async () => {
    const id = uniqueId(created);
    await createSandbox({ source, name: id });
    const kept = await destroySandbox(id, { keepVolume: true });
    expect(kept).toMatchObject({ removed: [`container:ca-sbx-${id}`], leftovers: [] });
    expect(await labeledObjects(id)).toEqual([`volume:ca-sbx-${id}`]);
    expect((await destroySandbox(id)).removed).toEqual([`volume:ca-sbx-${id}`]);
  });

  it('a volume held by another container: the failure with docker exit code, the leftover named', async () => {
    const id = uniqueId(created);
    await createSandbox({ source, name: id });
    const holder = `lc-holder-${id}`;
    holders.add(holder);
    // An unlabeled container of the test (not ours to sweep) that keeps the volume in use.
    await docker([
      'run',
      '-d',
      '--name',
      holder,
      '--mount',
      `type=volume,source=ca-sbx-${id},target=/data`,
      'ca-sbx-base:debian',
      'sleep',
      '300',
    ]);
    const result = await destroySandbox(id);
    expect(result.removed).toEqual([`container:ca-sbx-${id}`]);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatchObject({ kind: 'volume', name: `ca-sbx-${id}`, exitCode: 1 });
    expect(result.failures[0]?.message).toMatch(/in use/);
    expect(result.leftovers).toEqual([`volume:ca-sbx-${id}`]);
    await docker(['rm', '-f', holder]);
    holders.delete(holder);
    expect((await destroySandbox(id)).leftovers).toEqual([]);
  });
});

describe.skipIf(!ready)('interrupted creates', () => {
  let tarpit: StartedTestContainer;
  let url: string;

  beforeAll(async () => {
    // A "git server" that accepts connections and never answers: the clone hangs in the helper.
    const script =
      'import socket, sys\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(("0.0.0.0", 9418))\ns.listen(64)\nprint("listening", flush=True)\nheld = []\nwhile True:\n    held.append(s.accept()[0])\n';
    tarpit = await new GenericContainer('ca-sbx-base:python')
      .withUser('1000:1000')
      .withCommand(['python3', '-c', script])
      .withWaitStrategy(Wait.forLogMessage(/listening/))
      .start();
    url = `git://${tarpit.getIpAddress('bridge')}/repo.git`;
  });
  afterAll(async () => {
    await tarpit?.stop();
  });

  it('an abort (SIGINT/SIGTERM in the CLI) mid-clone removes everything created so far', async () => {
    const id = uniqueId(created);
    const controller = new AbortController();
    // Straight onto the bridge (the tarpit is a container there), not through the egress gateway.
    const pending = createSandbox(
      { source: url, name: id, cloneNetwork: 'bridge' },
      { signal: controller.signal },
    );
    const outcome = pending.catch((error: unknown) => error);
    await waitFor(helperExists(id), 'the clone helper');
    controller.abort();
    expect(await outcome).toBeInstanceOf(CreateAbortedError);
    expect(await labeledObjects(id)).toEqual([]);
  });

  it('a driver killed with SIGKILL mid-create leaves labeled objects that prune reclaims', async () => {
    const id = uniqueId(created);
    const driver = fileURLToPath(new URL('../test/create-driver.mjs', import.meta.url));
    const child = spawn(process.execPath, [driver, url, id], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitFor(helperExists(id), 'the clone helper');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    const left = await labeledObjects(id);
    expect(left).toEqual(
      expect.arrayContaining([`container:${sandboxNames(id).helper}`, `volume:ca-sbx-${id}`]),
    );
    // prune, narrowed to this test's sandbox so that parallel test runs keep theirs.
    const scope = [`label=ca.sandbox.id=${id}`];
    const preview = await pruneWhere(scope, { dryRun: true }, [id]);
    expect(preview.dryRun).toBe(true);
    expect(preview.removed.sort()).toEqual(left.sort());
    expect(await labeledObjects(id)).toEqual(left);
    const result = await pruneWhere(scope, {}, [id]);
    expect(result.failures).toEqual([]);
    expect(result.leftovers).toEqual([]);
    expect(result.removed.sort()).toEqual(left.sort());
    expect(await labeledObjects(id)).toEqual([]);
  });
});

describe.skipIf(!isRoot)('prune beside a create: orphan firewall rules go id by id', () => {
  const ids: string[] = [];
  afterAll(async () => {
    for (const id of ids) {
      await removeSandboxNetworks(id).catch(() => undefined);
      await removeFirewallRules(id).catch(() => undefined);
    }
  });

  async function withRules(id: string, keepNetwork: boolean): Promise<void> {
    ids.push(id);
    const net = await createSandboxNetwork(id, {});
    await applyAllowlist(id, net, ['203.0.113.7']);
    if (!keepNetwork) await removeSandboxNetworks(id);
  }
  const rulesOf = async (id: string) =>
    (await listFirewallRules()).filter((rule) => rule.sandboxId === id).length;

  it('removes only the listed ids that have no container or network; rules that appear after the listing stay', async () => {
    const orphan = uniqueId();
    const beingMade = uniqueId();
    const newcomer = uniqueId();
    await withRules(orphan, false);
    // A create that listed as orphan at prune's start but whose network exists by the delete.
    await withRules(beingMade, true);
    const listed = (await listFirewallRules()).filter(
      (rule) => rule.sandboxId === orphan || rule.sandboxId === beingMade,
    );
    // A create that applied its rules after prune's listing (it never was an orphan).
    await withRules(newcomer, false);
    const before = { beingMade: await rulesOf(beingMade), newcomer: await rulesOf(newcomer) };
    expect(before.beingMade).toBeGreaterThan(0);
    expect(before.newcomer).toBeGreaterThan(0);
    const sweep = new Sweep();
    await sweepOrphanRules(sweep, listed, [SANDBOX_FILTER]);
    expect(sweep.result.failures).toEqual([]);
    expect(await rulesOf(orphan)).toBe(0);
    expect(sweep.result.removed.length).toBe(listed.filter((rule) => rule.sandboxId === orphan).length);
    expect(await rulesOf(beingMade)).toBe(before.beingMade);
    expect(await rulesOf(newcomer)).toBe(before.newcomer);
  });
});
