import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILD_SCOPE_FILE, liveBuildScopes, writeBuildScope } from './build-leftovers.js';

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function root(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ca-build-scope-'));
  roots.push(dir);
  return dir;
}

/** A pid that ran and is gone. */
const deadPid = () => spawnSync('true').pid;

describe('liveBuildScopes', () => {
  it('names what the builds of live processes build; a dead build is no scope', async () => {
    const dir = await root();
    const live = join(dir, `ca-sbx-build-${process.pid}-abcdef`);
    const dead = join(dir, `ca-sbx-build-${deadPid()}-ghijkl`);
    await mkdir(live);
    await mkdir(dead);
    await writeBuildScope(live, { repo: 'r', dephash: 'd1' });
    await writeBuildScope(dead, { repo: 'r', dephash: 'd2' });
    await mkdir(join(dir, 'ca-sbx-build-mnopqr'));
    await mkdir(join(dir, 'unrelated'));
    expect(await liveBuildScopes(dir)).toEqual([{ repo: 'r', dephash: 'd1' }]);
  });

  it('a live build whose scope cannot be read makes every build object a live one (undefined)', async () => {
    const dir = await root();
    const live = join(dir, `ca-sbx-build-${process.pid}-abcdef`);
    await mkdir(live);
    expect(await liveBuildScopes(dir)).toBeUndefined();
    await writeFile(join(live, BUILD_SCOPE_FILE), '{"repo":"r"}');
    expect(await liveBuildScopes(dir)).toBeUndefined();
    await writeFile(join(live, BUILD_SCOPE_FILE), 'not json');
    expect(await liveBuildScopes(dir)).toBeUndefined();
    await writeBuildScope(live, { repo: 'r', dephash: 'd' });
    expect(await liveBuildScopes(dir)).toEqual([{ repo: 'r', dephash: 'd' }]);
  });
});
