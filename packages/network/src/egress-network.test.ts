import { describe, expect, it } from 'vitest';
import { internalNetworkProblems } from './egress-network.js';

const INHIBIT = 'com.docker.network.bridge.inhibit_ipv4';

describe('internalNetworkProblems', () => {
  it('accepts an internal network with no host address and IPv6 off', () => {
    expect(
      internalNetworkProblems({ Internal: true, EnableIPv6: false, Options: { [INHIBIT]: 'true' } }),
    ).toEqual([]);
  });

  it('refuses IPv6 on, or an engine that does not say', () => {
    expect(
      internalNetworkProblems({ Internal: true, EnableIPv6: true, Options: { [INHIBIT]: 'true' } }),
    ).toEqual(['EnableIPv6=true']);
    expect(internalNetworkProblems({ Internal: true, Options: { [INHIBIT]: 'true' } })).toEqual([
      'EnableIPv6=undefined',
    ]);
  });

  it('refuses a routed network or one with a host address on its bridge', () => {
    expect(internalNetworkProblems({ Internal: false, EnableIPv6: false, Options: null })).toEqual([
      'Internal=false',
      `${INHIBIT}=unset`,
    ]);
    expect(internalNetworkProblems({})).toHaveLength(3);
  });
});
