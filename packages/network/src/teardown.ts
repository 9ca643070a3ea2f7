import { FirewallCommandError } from './errors.js';
import { removeFirewallRules } from './firewall.js';
import { listSandboxNetworks, type NetworkRemovalResult, removeSandboxNetworks } from './sandbox-network.js';

/**
 * Removes the sandbox's networks, then its firewall rules, but the rules only once no network of
 * the id is left: while a box can still be attached, its egress stays limited.
 */
export async function teardownSandboxNetwork(sandboxId: string): Promise<NetworkRemovalResult> {
  const result = await removeSandboxNetworks(sandboxId);
  const left = await listSandboxNetworks(sandboxId);
  if (left.length > 0) return result;
  try {
    result.removed.push(...(await removeFirewallRules(sandboxId)));
  } catch (error) {
    const failed = error instanceof FirewallCommandError ? error : undefined;
    result.failures.push({
      kind: 'firewall',
      name: `ca-sandbox:${sandboxId}`,
      exitCode: failed?.exitCode ?? -1,
      message: (error as Error).message,
    });
  }
  return result;
}
