import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { createBox, destroyBox, destroyLeftovers, execBox } from './_harness.js';

// Cache poisoning: deps images are a cache keyed by the manifests. A source that shares a victim's
// directory name and manifests must not hand the victim its install: the install code below writes
// a value of its own into /deps, which stands for whatever a hostile install plants there.

// The repo's own lifecycle scripts are skipped at install; its .pnpmfile.cjs is code pnpm runs.
const PACKAGE_JSON = JSON.stringify({
  name: 'proj',
  version: '1.0.0',
  private: true,
  packageManager: 'pnpm@9.15.9',
});
const PNPMFILE = [
  "require('node:fs').writeFileSync('/deps/marker', require('node:crypto').randomUUID());",
  'module.exports = {};',
  '',
].join('\n');

const dirs: string[] = [];
const images = new Set<string>();

afterAll(async () => {
  await destroyLeftovers();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  if (images.size) await docker(['image', 'rm', '--force', '--', ...images], { allowFailure: true });
});

/** `<tmp>/<side>/proj` with the shared package.json (plain folders: same name, same manifests). */
async function project(side: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), `ca-hostile-cache-${side}-`));
  dirs.push(root);
  const dir = join(root, 'proj');
  await mkdir(dir);
  await writeFile(join(dir, 'package.json'), PACKAGE_JSON);
  await writeFile(join(dir, '.pnpmfile.cjs'), PNPMFILE);
  return dir;
}

async function boxWithMarker(source: string) {
  const box = (await createBox(source, { network: 'clone-then-cut' })) as Awaited<
    ReturnType<typeof createBox>
  > & { imageCacheHit: boolean; imageSource: string };
  if (box.image.startsWith('ca-sbx:')) images.add(box.image);
  const marker = (await execBox(box.id, ['cat', '/deps/marker'])).stdout;
  expect(marker).toMatch(/^[0-9a-f-]{36}$/);
  await destroyBox(box.id);
  return { box, marker };
}

describe('deps images are keyed by the source, not only its name and manifests', () => {
  it('a second source named like the first, with the same manifests, gets its own install', async () => {
    const attacker = await project('a');
    const victim = await project('b');
    const first = await boxWithMarker(attacker);
    expect(first.box.imageSource).toBe(await realpath(attacker));

    const second = await boxWithMarker(victim);
    expect(second.box.imageCacheHit).toBe(false);
    expect(second.box.image).not.toBe(first.box.image);
    expect(second.marker).not.toBe(first.marker);
    expect(second.box.imageSource).toBe(await realpath(victim));

    // The cache still serves the source that built it, and says so.
    const again = await boxWithMarker(attacker);
    expect(again.box).toMatchObject({ imageCacheHit: true, image: first.box.image });
    expect(again.box.imageSource).toBe(await realpath(attacker));
    expect(again.marker).toBe(first.marker);
  }, 900_000);
});
