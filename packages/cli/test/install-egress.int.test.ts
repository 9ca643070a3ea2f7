import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

// A dependency on a host the install may not reach (a tarball URL, a git dependency on github.com:
// clipanion in a new-user trial) failed with npm's bare "CONNECT tunnel failed, response 403", and
// the gateway that refused it was gone with the create. The error now says which destination the
// gateway refused and how to allow one. The request only ever reaches our gateway, which refuses
// the name without resolving it.
describe.skipIf(!READY)('an install that needs a destination off its list (bin)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-install-egress-'));
  const id = `sbx-${randomUUID().slice(0, 8)}`;

  afterAll(() => {
    forceRemoveSandbox(id);
    rmSync(work, { recursive: true, force: true });
  });

  it('fails with the refused destination and the install.allow setting in the message, nothing left', async () => {
    const dir = join(work, 'offlist');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: `offlist-${id}`,
        version: '1.0.0',
        dependencies: { offlist: 'https://example.com/offlist-1.0.0.tgz' },
      }),
    );
    const result = await runBin(['create', dir, '--name', id, '--network', 'clone-then-cut', '--json']);
    expect(result.code, result.stderr).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
    expect(error.code).toBe('IMAGE_BUILD_FAILED');
    expect(error.message).toContain(
      '(egress gateway: example.com:443: refused by the gateway (not on its list, or an address it blocks); the install reaches its registries and configured mirrors only: the install.allow setting (CA_SANDBOX_INSTALL_ALLOW) adds a destination)',
    );
    expect(remainingObjects(id)).toEqual([]);
  }, 300_000);
});
