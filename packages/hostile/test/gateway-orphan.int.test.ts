import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBuildLeftovers, removeBuildLeftovers, staleBuildDirectories } from '@ca-sandbox/build';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cli, FIXTURES, labeledLeft } from './_harness.js';

// A create killed outright (SIGKILL, a closed terminal) cannot clean up: what it made stays until
// prune. Its egress gateway must not stay OPEN with the install's rules meanwhile: it lives on the
// create's heartbeat and stops by itself. The install runs in a container of its own (the
// engine's default runtime whatever the box's), so this does not depend on the runtime.

let root = '';
const names: string[] = [];

afterAll(async () => {
  for (const name of names) await cli(['destroy', name]);
  if (root) await rm(root, { recursive: true, force: true });
});

async function running(container: string): Promise<boolean | undefined> {
  const state = await docker(['inspect', '--format', '{{.State.Running}}', '--', container], {
    allowFailure: true,
  });
  return state.exitCode === 0 ? state.stdout.trim() === 'true' : undefined;
}

describe('the egress gateway of a create killed with SIGKILL', () => {
  it('stops by itself once nobody touches its heartbeat, and prune-style removal leaves nothing', async () => {
    // build-killed: its install-time code never ends, so the create is killed mid-install.
    const repo = `build-killed-${randomUUID().slice(0, 8)}`;
    root = await mkdtemp(join(tmpdir(), 'ca-hostile-gworphan-'));
    const path = join(root, repo);
    await cp(join(FIXTURES, 'build-killed'), path, { recursive: true });
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    names.push(name);
    const gateway = `ca-sbx.gw.${name}`;
    // Its own process group: the kill takes the CLI and its docker client, as a closed terminal would.
    const child = execa(
      process.execPath,
      [BIN, 'create', path, '--name', name, '--network', 'clone-then-cut'],
      {
        detached: true,
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1' },
      },
    );
    const pid = child.pid as number;
    const started = Date.now() + 180_000;
    const buildFilter = ['container', 'ls', '--quiet', '--filter', `label=ca.sandbox.build.repo=${repo}`];
    while ((await docker(buildFilter)).stdout.trim() === '') {
      expect(Date.now() < started, 'the install step never started').toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(await running(gateway)).toBe(true);
    process.kill(-pid, 'SIGKILL');
    await child;
    const killedAt = Date.now();
    // Heartbeat: stale after 90 s, checked every 2 s.
    const until = killedAt + 150_000;
    while ((await running(gateway)) === true) {
      expect(Date.now() < until, 'the orphaned gateway still runs 150 s after its create died').toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    console.info(
      `gateway-orphan: the gateway stopped ${Math.round((Date.now() - killedAt) / 1000)} s after the kill`,
    );
    // Stopped, not removed: still visible to ls and prune. The helper has its own heartbeat (its
    // own last touch): it stops within the same bound.
    expect(await running(gateway)).toBe(false);
    while ((await running(`ca-sbx_helper-${name}`)) === true) {
      expect(Date.now() < until, 'the orphaned helper still runs 150 s after its create died').toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }

    const removal = await removeBuildLeftovers({
      ...(await findBuildLeftovers({ repo })),
      directories: await staleBuildDirectories({ pids: [pid] }),
    });
    expect(removal.failures).toEqual([]);
    expect((await cli(['destroy', name, '--json'])).exitCode).toBe(0);
    expect(await labeledLeft(name)).toEqual([]);
  }, 420_000);
});
