import { describe, expect, it } from 'vitest';
import { formatCidr } from './cidr.js';
import { buildAllowlistRules } from './firewall-rules.js';
import { blockedRanges, deriveHostRanges, FIXED_BLOCKED_RANGES } from './host-ranges.js';

// Shapes as `ip -j addr` / `ip -j route` print them on this kind of host: a LAN on TEST-NET-1
// (192.0.2.0/24, the default gateway 192.0.2.1), docker bridges, an IPv6 ULA and link-local.
const addr = [
  {
    ifname: 'lo',
    addr_info: [
      { family: 'inet', local: '127.0.0.1', prefixlen: 8 },
      { family: 'inet6', local: '::1', prefixlen: 128 },
    ],
  },
  {
    ifname: 'eth0',
    addr_info: [
      { family: 'inet', local: '192.0.2.2', prefixlen: 24 },
      { family: 'inet6', local: 'fd00::2', prefixlen: 64 },
      { family: 'inet6', local: 'fe80::1:2', prefixlen: 64 },
    ],
  },
  { ifname: 'docker0', addr_info: [{ family: 'inet', local: '172.17.0.1', prefixlen: 16 }] },
  {
    ifname: 'wan',
    addr_info: [
      { family: 'inet', local: '198.51.100.7', prefixlen: 28 },
      { family: 'inet6', local: '2001:db8:5::7', prefixlen: 64 },
    ],
  },
  { ifname: 'odd', addr_info: [{ local: 'not-an-ip', prefixlen: 3 }, { prefixlen: 8 }] },
];
const routes4 = [
  { dst: 'default', gateway: '192.0.2.1', dev: 'eth0' },
  { dst: '172.17.0.0/16', dev: 'docker0', prefsrc: '172.17.0.1' },
  { dst: '192.0.2.0/24', dev: 'eth0', prefsrc: '192.0.2.2' },
  { dst: '192.168.48.0/20', dev: 'br-2d8a80c80993' },
  { dst: '203.0.113.0/24', gateway: '192.0.2.254', dev: 'eth0' },
  { dst: '198.18.0.9', dev: 'tun0' },
];
const routes6 = [
  { dst: 'fd00::/64', dev: 'eth0' },
  { dst: 'fe80::/64', dev: 'eth0' },
  { dst: 'default', gateway: 'fe80::1', dev: 'eth0' },
];

describe('deriveHostRanges / blockedRanges', () => {
  const derived = deriveHostRanges(addr, [routes4, routes6]);
  const blocked = blockedRanges(derived);

  it('takes every address and connected prefix, and every non-default route', () => {
    const text = derived.map(formatCidr);
    for (const cidr of [
      '192.0.2.2/32',
      '192.0.2.0/24',
      '198.51.100.0/28',
      '198.51.100.7/32',
      '203.0.113.0/24',
      '198.18.0.9/32',
      '2001:db8:5::/64',
      '127.0.0.0/8',
    ])
      expect(text).toContain(cidr);
    expect(text.some((cidr) => cidr.endsWith('/0'))).toBe(false);
  });

  it('keeps the fixed ranges first and adds only what they do not cover', () => {
    expect(blocked[4]).toEqual([
      ...FIXED_BLOCKED_RANGES[4],
      '127.0.0.0/8',
      '192.0.2.0/24',
      '198.18.0.9/32',
      '198.51.100.0/28',
      '203.0.113.0/24',
    ]);
    expect(blocked[6]).toEqual([...FIXED_BLOCKED_RANGES[6], '::1/128', '2001:db8:5::/64']);
  });

  it('a non-RFC 1918 LAN is dropped even under an allow of 0.0.0.0/0; naming an address in it opens only that', () => {
    const rules = buildAllowlistRules('sbx', 'casbx0000000000', ['0.0.0.0/0', '192.0.2.10/32'], [4], blocked);
    const lines = rules.map((rule) => rule.args.join(' '));
    const drop = lines.findIndex((line) => line.includes('-d 192.0.2.0/24') && line.endsWith('DROP'));
    const allowOne = lines.findIndex((line) => line.includes('-d 192.0.2.10/32') && line.endsWith('ACCEPT'));
    const allowAll = lines.findIndex((line) => line.includes('-d 0.0.0.0/0') && line.endsWith('ACCEPT'));
    expect(drop).toBeGreaterThan(-1);
    expect(allowOne).toBeLessThan(drop);
    expect(allowAll).toBeGreaterThan(drop);
  });

  it('is stable: docker bridges inside the fixed ranges add nothing, input order does not matter', () => {
    const more = deriveHostRanges(
      [...addr, { ifname: 'br-x', addr_info: [{ local: '192.168.80.1', prefixlen: 20 }] }],
      [[...routes4].reverse(), routes6],
    );
    expect(blockedRanges(more)).toEqual(blocked);
    expect(blockedRanges([])).toEqual({ 4: [...FIXED_BLOCKED_RANGES[4]], 6: [...FIXED_BLOCKED_RANGES[6]] });
    expect(deriveHostRanges(undefined, [null, 'x'])).toEqual([]);
  });

  it('a route wider than a fixed range replaces it', () => {
    const wide = deriveHostRanges([], [[{ dst: '10.0.0.0/7', dev: 'vpn0' }]]);
    expect(blockedRanges(wide)[4]).toEqual([
      '172.16.0.0/12',
      '192.168.0.0/16',
      '169.254.0.0/16',
      '100.64.0.0/10',
      '10.0.0.0/7',
    ]);
  });
});
