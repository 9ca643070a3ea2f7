import { describe, expect, it } from 'vitest';
import {
  engineHasResolverFix,
  engineVersion,
  loopbackResolvers,
  resolverExposure,
} from './doctor-resolver.js';

describe('the CVE-2024-29018 check', () => {
  it('reads engine versions, distribution suffixes included', () => {
    expect(engineVersion('20.10.24+dfsg1')).toEqual([20, 10, 24]);
    expect(engineVersion('26.1.4')).toEqual([26, 1, 4]);
    expect(engineVersion('nonsense')).toBeUndefined();
  });

  it.each([
    ['20.10.24+dfsg1', false],
    ['23.0.10', false],
    ['23.0.11', true],
    ['24.0.9', false],
    ['25.0.4', false],
    ['25.0.5', true],
    ['25.1.0', true],
    ['26.0.0', true],
    ['27.3.1', true],
    ['', false],
  ])('engine %s has the fix: %s', (version, fixed) => {
    expect(engineHasResolverFix(version)).toBe(fixed);
  });

  it('finds loopback resolvers only', () => {
    expect(loopbackResolvers('# systemd-resolved\nnameserver 127.0.0.53\noptions edns0 trust-ad\n')).toEqual([
      '127.0.0.53',
    ]);
    expect(loopbackResolvers('nameserver ::1\nnameserver 10.255.255.53\n')).toEqual(['::1']);
    expect(loopbackResolvers('nameserver 10.255.255.53\nsearch example\n')).toEqual([]);
    expect(loopbackResolvers('# nameserver 127.0.0.1\n')).toEqual([]);
  });

  it('warns only for an old engine AND a loopback resolver', () => {
    expect(resolverExposure('20.10.24+dfsg1', 'nameserver 127.0.0.53\n')).toMatch(/CVE-2024-29018/);
    // This host: docker 20.10 with a resolver off loopback.
    expect(resolverExposure('20.10.24+dfsg1', 'nameserver 10.255.255.53\n')).toBeUndefined();
    expect(resolverExposure('26.0.0', 'nameserver 127.0.0.53\n')).toBeUndefined();
  });
});
