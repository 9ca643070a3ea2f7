// A URL clone that the gateway cannot carry says why: git only sees "CONNECT tunnel failed,
// response 503"; the gateway's log knows it could not connect (or resolve, or was told to refuse).
// The URL is the gateway's own loopback on a closed port: no traffic leaves the containers we start.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

describe.skipIf(!READY)('a URL clone the gateway cannot carry, through the bin (real engine)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  afterAll(() => forceRemoveSandbox(id));

  it("exits 1 with git's error and the gateway's side of it, and leaves nothing", async () => {
    const result = await runBin(['create', 'https://127.0.0.1:9/x.git', '--name', id, '--json']);
    expect(result.code).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error as {
      code: string;
      message: string;
    };
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.message).toMatch(/CONNECT tunnel failed/);
    expect(error.message).toMatch(/\(egress gateway: 127\.0\.0\.1:9: the gateway could not connect to it\)$/);
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);
});
