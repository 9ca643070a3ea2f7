import { listLabeled, sandboxLabelPairs } from '@ca-sandbox/docker/process';
import { removeFirewallRules, ruleTag } from '@ca-sandbox/network';

/** What releasing a sandbox's firewall rules did; names are `<kind>:<name>` as in TeardownResult. */
export interface FirewallRelease {
  /** `firewall:<iptables -A line>` of each rule removed. */
  removed: string[];
  /** `firewall:ca-sandbox:<id>` when the rules stay (still needed, or their removal failed). */
  leftover?: string;
  failure?: { kind: 'firewall'; name: string; exitCode: number; message: string };
}

/**
 * The one rule of firewall teardown (destroy, prune and the cleanup of a failed create all come
 * here): a sandbox's egress rules go only once no container and no network of its id is left. A
 * box whose removal failed still runs, and a network left behind can still be joined: without the
 * rules either would have open egress. `attached` is the caller's own re-list when it has one;
 * else the id's objects are listed here.
 */
export async function releaseFirewallRules(id: string, attached?: boolean): Promise<FirewallRelease> {
  const leftover = `firewall:${ruleTag(id)}`;
  if (attached ?? (await hasObjects(id))) return { removed: [], leftover };
  try {
    const removed = await removeFirewallRules(id);
    return { removed: removed.map((rule) => `firewall:${rule}`) };
  } catch (error) {
    const exitCode = (error as { exitCode?: number }).exitCode ?? -1;
    const failure = {
      kind: 'firewall' as const,
      name: ruleTag(id),
      exitCode,
      message: (error as Error).message,
    };
    return { removed: [], leftover, failure };
  }
}

/** Whether any container (in any state) or network of sandbox `id` is left. */
async function hasObjects(id: string): Promise<boolean> {
  const ours = sandboxLabelPairs(id);
  const [containers, networks] = await Promise.all([
    listLabeled('container', ours),
    listLabeled('network', ours),
  ]);
  return containers.length > 0 || networks.length > 0;
}
