import { randomBytes } from 'node:crypto';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { assertInternalNetwork, createEgressNetworks, egressNames } from './egress-network.js';

const id = `sbx-${randomBytes(4).toString('hex')}`;
const plain = `ca-sbx-test-internal-${randomBytes(4).toString('hex')}`;

afterAll(async () => {
  const names = egressNames(id);
  for (const name of [names.internal, names.outward, plain])
    await docker(['network', 'rm', '--', name], { allowFailure: true });
});

describe('the egress networks against the engine', () => {
  it('the internal network is internal, has no host address and no IPv6, and passes the gate', async () => {
    const { internal } = await createEgressNetworks(id);
    const { stdout } = await docker(['network', 'inspect', '--format', '{{json .}}', '--', internal]);
    const seen = JSON.parse(stdout) as {
      Internal: boolean;
      EnableIPv6: boolean;
      Options: Record<string, string>;
    };
    expect(seen).toMatchObject({ Internal: true, EnableIPv6: false });
    expect(seen.Options['com.docker.network.bridge.inhibit_ipv4']).toBe('true');
    await expect(assertInternalNetwork(internal)).resolves.toBeUndefined();
  });

  it('the gate refuses an --internal network with a host address on its bridge', async () => {
    await docker(['network', 'create', '--internal', '--label', 'ca.sandbox.test=1', '--', plain]);
    await expect(assertInternalNetwork(plain)).rejects.toThrow(/inhibit_ipv4=unset/);
  });
});
