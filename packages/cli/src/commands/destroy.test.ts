import { SandboxNotFoundError } from '@ca-sandbox/lifecycle';
import { describe, expect, it } from 'vitest';
import type { TeardownResult } from '../lifecycle-api.js';
import { destroyEach } from './destroy.js';

/** A teardown of `id` that finds it gone when `id` is in `gone` (what the lifecycle throws then). */
const teardown =
  (gone: readonly string[]) =>
  async (id: string): Promise<TeardownResult> => {
    if (gone.includes(id)) throw new SandboxNotFoundError(id);
    return { removed: [`container:ca-sbx-${id}`], failures: [], leftovers: [] };
  };

describe('destroyEach', () => {
  it('under --all, a listed box gone by its turn is no error and the others still go', async () => {
    const { results, notFound } = await destroyEach(['a', 'b', 'c'], teardown(['b']), { all: true });
    expect(results.flatMap((r) => r.removed)).toEqual(['container:ca-sbx-a', 'container:ca-sbx-c']);
    expect(notFound).toEqual([]);
    const alone = await destroyEach(['b'], teardown(['b']), { all: true });
    expect(alone).toEqual({ results: [], notFound: [] });
  });

  it('named ids: a gone one is reported and the others still go; alone it is its own error', async () => {
    const { results, notFound } = await destroyEach(['a', 'b'], teardown(['a']), { all: false });
    expect(results.flatMap((r) => r.removed)).toEqual(['container:ca-sbx-b']);
    expect(notFound.map((n) => n.id)).toEqual(['a']);
    await expect(destroyEach(['a'], teardown(['a']), { all: false })).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
  });

  it('any other failure stops the run, with or without --all', async () => {
    const broken = async (): Promise<TeardownResult> => {
      throw new Error('engine gone');
    };
    await expect(destroyEach(['a', 'b'], broken, { all: true })).rejects.toThrow('engine gone');
  });

  it('stops before the next box once the signal is aborted', async () => {
    const controller = new AbortController();
    const seen: string[] = [];
    await destroyEach(
      ['a', 'b'],
      async (id) => {
        seen.push(id);
        controller.abort();
        return { removed: [], failures: [], leftovers: [] };
      },
      { all: true, signal: controller.signal },
    );
    expect(seen).toEqual(['a']);
  });
});
