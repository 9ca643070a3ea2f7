import { NETWORK_POLICIES, type NetworkPolicy } from '@ca-sandbox/docker';
import { z } from 'zod';
import { InvalidNetworkPolicyError } from './errors.js';

export { NETWORK_POLICIES, type NetworkPolicy };

/** `offline` (default), `clone-then-cut`, `allowlist` (EXPERIMENTAL). */
export const NetworkPolicySchema = z.enum(NETWORK_POLICIES);

export const DEFAULT_NETWORK_POLICY: NetworkPolicy = 'offline';

/** Printed every time an allowlist of addresses only (host firewall rules) is selected. */
export const ALLOWLIST_WARNING =
  'warning: an allowlist of addresses only is EXPERIMENTAL: the box gets a per-sandbox network whose egress host iptables rules limit to the listed IPs/CIDRs (LAN ranges, 169.254.0.0/16 and the host are dropped); the rules live only in the running kernel, and DNS names are not resolved for you. Name a domain (or a port) to go through the egress gateway instead';

/** The policy named by `input`, `offline` when absent; InvalidNetworkPolicyError otherwise. */
export function resolveNetworkPolicy(input?: unknown): NetworkPolicy {
  if (input === undefined) return DEFAULT_NETWORK_POLICY;
  const parsed = NetworkPolicySchema.safeParse(input);
  if (!parsed.success) {
    const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 60)) : typeof input;
    throw new InvalidNetworkPolicyError(
      `unknown network policy ${shown}: expected ${NETWORK_POLICIES.join(', ')}`,
    );
  }
  return parsed.data;
}

/** Whether dependency install (untrusted install scripts, needs the network) runs: not offline. */
export function policyInstallsDependencies(policy: NetworkPolicy): boolean {
  return resolveNetworkPolicy(policy) !== 'offline';
}

/** Whether the running box needs a per-sandbox network (only `allowlist`); else `--network none`. */
export function policyNeedsSandboxNetwork(policy: NetworkPolicy): boolean {
  return resolveNetworkPolicy(policy) === 'allowlist';
}
