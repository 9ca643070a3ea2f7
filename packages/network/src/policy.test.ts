import { describe, expect, it } from 'vitest';
import { InvalidNetworkPolicyError, InvalidSandboxIdError } from './errors.js';
import { assertSandboxId, bridgeName, ruleTag, sandboxNetworkName } from './names.js';
import {
  ALLOWLIST_WARNING,
  NetworkPolicySchema,
  policyInstallsDependencies,
  policyNeedsSandboxNetwork,
  resolveNetworkPolicy,
} from './policy.js';

describe('network policy', () => {
  it('defaults to offline and accepts the three names', () => {
    expect(resolveNetworkPolicy()).toBe('offline');
    expect(resolveNetworkPolicy('clone-then-cut')).toBe('clone-then-cut');
    expect(resolveNetworkPolicy('allowlist')).toBe('allowlist');
    expect(NetworkPolicySchema.options).toEqual(['offline', 'clone-then-cut', 'allowlist']);
  });

  it.each(['online', 'OFFLINE', '', 'host', 'bridge', 42, null])('refuses %j as a usage error', (value) => {
    expect(() => resolveNetworkPolicy(value)).toThrow(InvalidNetworkPolicyError);
    expect(() => resolveNetworkPolicy(value)).toThrow(
      /^unknown network policy .*: expected offline, clone-then-cut, allowlist$/,
    );
  });

  it('installs dependencies only when the policy gives the build a network', () => {
    expect(policyInstallsDependencies('offline')).toBe(false);
    expect(policyInstallsDependencies('clone-then-cut')).toBe(true);
    expect(policyInstallsDependencies('allowlist')).toBe(true);
    expect(() => policyInstallsDependencies('online' as never)).toThrow(InvalidNetworkPolicyError);
  });

  it('only allowlist needs a sandbox network; the others run the box with --network none', () => {
    expect(policyNeedsSandboxNetwork('offline')).toBe(false);
    expect(policyNeedsSandboxNetwork('clone-then-cut')).toBe(false);
    expect(policyNeedsSandboxNetwork('allowlist')).toBe(true);
  });

  it('the allowlist warning says EXPERIMENTAL', () => {
    expect(ALLOWLIST_WARNING).toMatch(/^warning: .*allowlist.* is EXPERIMENTAL/);
    expect(ALLOWLIST_WARNING).toContain('169.254.0.0/16');
  });
});

describe('names', () => {
  it('derives network name, a 15-char bridge name and the rule tag from the id', () => {
    expect(sandboxNetworkName('sbx-1')).toBe('ca-sbx-sbx-1');
    expect(bridgeName('sbx-1')).toMatch(/^casbx[0-9a-f]{10}$/);
    expect(bridgeName('sbx-1')).toHaveLength(15);
    expect(bridgeName('sbx-1')).toBe(bridgeName('sbx-1'));
    expect(bridgeName('sbx-1')).not.toBe(bridgeName('sbx-2'));
    expect(bridgeName('a'.repeat(63))).toHaveLength(15);
    expect(ruleTag('sbx-1')).toBe('ca-sandbox:sbx-1');
  });

  it('gives distinct bridges to many ids', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => `sbx-${i}`);
    expect(new Set(ids.map(bridgeName)).size).toBe(ids.length);
  });

  it.each(['', 'A', '-x', '.x', 'a b', 'a/b', 'a:b', `a${'b'.repeat(63)}`, 'x\n', 'é'])(
    'refuses the id %j',
    (id) => {
      expect(() => assertSandboxId(id)).toThrow(InvalidSandboxIdError);
      expect(() => bridgeName(id)).toThrow(InvalidSandboxIdError);
      expect(() => ruleTag(id)).toThrow(/^invalid sandbox id/);
    },
  );
});
