import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { liveBuildOf, liveBuilds } from './build-leftovers.js';
import { renderDockerfile } from './dockerfile.js';
import type { InstallRecipe } from './recipe.js';

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function root(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ca-build-live-'));
  roots.push(dir);
  return dir;
}

/** A pid that ran and is gone. */
const deadPid = () => spawnSync('true').pid as number;

const recipe: InstallRecipe = {
  provider: 'node',
  install: [],
  env: [],
  installEnv: [],
  notes: [],
  linkNodeModules: false,
};
const labels = { 'ca.sandbox.build': '1', 'ca.sandbox.build.repo': 'r', 'ca.sandbox.build.dephash': 'd1' };

async function buildDir(dir: string, pid: number, dockerfile?: string): Promise<string> {
  const path = join(dir, `ca-sbx-build-${pid}-${Math.random().toString(36).slice(2, 8).padEnd(6, 'x')}`);
  await mkdir(path);
  if (dockerfile !== undefined) await writeFile(join(path, 'Dockerfile'), dockerfile);
  return path;
}

describe('liveBuildOf (the LABEL line of our Dockerfile)', () => {
  it('names a build by its build id, else by repo and dephash, else not at all', () => {
    const rendered = renderDockerfile('ca-sbx-base:node', recipe, {
      buildId: 'abc12345',
      buildLabels: labels,
    });
    expect(liveBuildOf(rendered)).toEqual({ buildId: 'abc12345' });
    expect(liveBuildOf(renderDockerfile('ca-sbx-base:node', recipe, { buildLabels: labels }))).toEqual({
      repo: 'r',
      dephash: 'd1',
    });
    expect(liveBuildOf('FROM x\nRUN true\n')).toBeUndefined();
  });
});

describe('liveBuilds', () => {
  it('the builds of live processes; a dead one, or one that has not written its Dockerfile, is none', async () => {
    const dir = await root();
    const rendered = (buildId: string) =>
      renderDockerfile('ca-sbx-base:node', recipe, { buildId, buildLabels: labels });
    await buildDir(dir, process.pid, rendered('11111111'));
    await buildDir(dir, deadPid(), rendered('22222222'));
    await buildDir(dir, process.pid);
    await mkdir(join(dir, 'ca-sbx-build-mnopqr'));
    await mkdir(join(dir, 'unrelated'));
    expect(await liveBuilds(dir)).toEqual([{ buildId: '11111111' }]);
  });

  it('a live build that cannot be named makes every build object a live one (undefined)', async () => {
    const dir = await root();
    const path = await buildDir(dir, process.pid, 'FROM x\n');
    expect(await liveBuilds(dir)).toBeUndefined();
    await rm(join(path, 'Dockerfile'));
    await mkdir(join(path, 'Dockerfile'));
    expect(await liveBuilds(dir)).toBeUndefined();
  });
});
