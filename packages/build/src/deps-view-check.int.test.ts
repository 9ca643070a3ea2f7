import { randomUUID } from 'node:crypto';
import { engine } from '@ca-sandbox/docker';
import { afterAll, describe, expect, it } from 'vitest';
import { assertDepsViewLower } from './deps-view-check.js';
import { DepsLayerError } from './errors.js';

// The check before an image is labeled for a repo view, on the real engine: the engine's own stat
// of /deps and /deps/src in a container that is created and never started.

const run = randomUUID().slice(0, 8);
const images: string[] = [];
const labels = { 'ca.sandbox.test': run };

async function imageWith(name: string, step: string): Promise<string> {
  const tag = `ca-sbx:test-deps-view-${name}-${run}`;
  await engine.image.build(['build', '--quiet', '--network', 'none', '--tag', tag, '-'], {
    input: `FROM ca-sbx-base:debian\nRUN ${step}\n`,
  });
  images.push(tag);
  const inspected = await engine.image.inspect(tag);
  return inspected?.Id ?? '';
}

afterAll(async () => {
  for (const tag of images) await engine.image.remove(tag, { force: true }).catch(() => false);
});

describe('the repo view lower check (real engine)', () => {
  it('passes /deps/src a directory; refuses a link at /deps/src or /deps, and leaves no container', async () => {
    const good = await imageWith('good', 'mkdir -p /deps/src/node_modules');
    await expect(assertDepsViewLower(good, 'good', `ca-sbx_check-${run}-a`, labels)).resolves.toBeUndefined();
    const linked = await imageWith('src-link', 'mkdir -p /deps && ln -s /etc /deps/src');
    const refused = await assertDepsViewLower(linked, 'linked', `ca-sbx_check-${run}-b`, labels).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(DepsLayerError);
    expect((refused as Error).message).toMatch(/left \/deps\/src as a symlink to \/etc/);
    const deps = await imageWith('deps-link', 'rm -rf /deps && mkdir -p /x/src && ln -s /x /deps');
    await expect(assertDepsViewLower(deps, 'deps', `ca-sbx_check-${run}-c`, labels)).rejects.toThrow(
      /left \/deps as a symlink/,
    );
    const none = await imageWith('none', 'true');
    await expect(assertDepsViewLower(none, 'none', `ca-sbx_check-${run}-d`, labels)).rejects.toThrow(
      /left no \/deps/,
    );
    const left = await engine.container.list({ all: true, labels: [`ca.sandbox.test=${run}`] });
    expect(left).toEqual([]);
  }, 120_000);
});
