import { splitRuleLine } from './_utils.js';
import { type Cidr, cidrContains, formatCidr, parseCidr } from './cidr.js';
import type { Family } from './iptables.js';
import { RULE_TAG_PREFIX, ruleTag } from './names.js';

/** One rule: `iptables|ip6tables -I <chain> 1 <args>` inserts it. */
export interface FirewallRuleSpec {
  family: Family;
  chain: string;
  args: string[];
}

/** A tagged rule found in `iptables -S` / `ip6tables -S`. */
export interface FirewallRule {
  sandboxId: string;
  chain: string;
  /** The rule as `iptables -S` prints it (`-A CHAIN ...`). */
  rule: string;
  family: Family;
}

/**
 * Blocks that are never reachable through a broad allow such as 0.0.0.0/0: the LAN, carrier-grade
 * NAT, link-local (169.254.169.254, the cloud metadata endpoint). Only an allow entry that lies
 * inside one of them opens it.
 */
export const BLOCKED_RANGES: Record<Family, string[]> = {
  4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'],
  6: ['fc00::/7', 'fe80::/10'],
};

/** Where forwarded traffic of the family is filtered: Docker's DOCKER-USER (v4) or FORWARD (v6). */
export const FORWARD_CHAIN: Record<Family, string> = { 4: 'DOCKER-USER', 6: 'FORWARD' };

/** Halves of the address space: guard rules, distinct from any rule the builder makes. */
const GUARD_HALVES: Record<Family, string[]> = { 4: ['0.0.0.0/1', '128.0.0.0/1'], 6: ['::/1', '8000::/1'] };

function tagArgs(sandboxId: string): string[] {
  return ['-m', 'comment', '--comment', ruleTag(sandboxId)];
}

function parseAll(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((text) => {
    const cidr = parseCidr(text);
    if (!cidr) throw new Error(`not a cidr: ${text}`);
    return cidr;
  });
}

/**
 * The rules of one sandbox, in evaluation order per chain. Every rule names the sandbox bridge
 * (`-i` or `-o`), so no rule can touch traffic of anything else on the host.
 *  1. replies back into the bridge (ESTABLISHED,RELATED) ACCEPT — ACCEPT, not RETURN: for a peer on
 *     another docker network, Docker's DOCKER-ISOLATION chains would drop the reply;
 *  2. anything else into the bridge DROP (nothing may open connections to the box);
 *  3. allowed blocks inside a blocked range ACCEPT (the user named that LAN address);
 *  4. blocked ranges DROP (LAN, 169.254/16, ...), before
 *  5. the other allowed blocks ACCEPT (so 0.0.0.0/0 means "the internet", not "the LAN");
 *  6. anything else from the bridge DROP;
 *  and in INPUT: anything from the bridge to the host itself (gateway, every host address) DROP.
 */
export function buildAllowlistRules(
  sandboxId: string,
  bridge: string,
  cidrs: readonly string[],
  families: readonly Family[] = [4, 6],
): FirewallRuleSpec[] {
  const tag = tagArgs(sandboxId);
  const allowed = parseAll(cidrs);
  const rules: FirewallRuleSpec[] = [];
  for (const family of families) {
    const chain = FORWARD_CHAIN[family];
    const blocked = parseAll(BLOCKED_RANGES[family]);
    const mine = allowed.filter((cidr) => cidr.family === family);
    const insideBlocked = mine.filter((cidr) => blocked.some((range) => cidrContains(range, cidr)));
    const outside = mine.filter((cidr) => !insideBlocked.includes(cidr));
    const add = (args: string[]) =>
      rules.push({ family, chain, args: [...args.slice(0, -2), ...tag, ...args.slice(-2)] });
    rules.push({ family, chain: 'INPUT', args: ['-i', bridge, ...tag, '-j', 'DROP'] });
    add(['-o', bridge, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT']);
    add(['-o', bridge, '-j', 'DROP']);
    for (const cidr of insideBlocked) add(['-i', bridge, '-d', formatCidr(cidr), '-j', 'ACCEPT']);
    for (const range of BLOCKED_RANGES[family]) add(['-i', bridge, '-d', range, '-j', 'DROP']);
    for (const cidr of outside) add(['-i', bridge, '-d', formatCidr(cidr), '-j', 'ACCEPT']);
    add(['-i', bridge, '-j', 'DROP']);
  }
  return rules;
}

/**
 * Rules that drop everything from the bridge, held while a sandbox's rules are replaced so that
 * a running box never has a moment without them. Their specs differ from every built rule.
 */
export function buildGuardRules(
  sandboxId: string,
  bridge: string,
  families: readonly Family[] = [4, 6],
): FirewallRuleSpec[] {
  return families.flatMap((family) =>
    [FORWARD_CHAIN[family], 'INPUT'].flatMap((chain) =>
      GUARD_HALVES[family].map((half) => ({
        family,
        chain,
        args: ['-i', bridge, '-d', half, ...tagArgs(sandboxId), '-j', 'DROP'],
      })),
    ),
  );
}

/** True when a listed rule is one of the guard rules. */
export function isGuardRule(rule: FirewallRule): boolean {
  const words = splitRuleLine(rule.rule);
  const dest = words[words.indexOf('-d') + 1];
  return words.includes('-d') && GUARD_HALVES[rule.family].includes(dest ?? '') && words.at(-1) === 'DROP';
}

/** The tagged rules in `iptables -S` output (`-A CHAIN ... --comment "ca-sandbox:<id>" ...`). */
export function parseRuleListing(output: string, family: Family): FirewallRule[] {
  const rules: FirewallRule[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('-A ')) continue;
    const words = splitRuleLine(line.trim());
    const at = words.indexOf('--comment');
    const comment = at === -1 ? undefined : words[at + 1];
    if (!comment?.startsWith(RULE_TAG_PREFIX) || comment.length === RULE_TAG_PREFIX.length) continue;
    rules.push({
      sandboxId: comment.slice(RULE_TAG_PREFIX.length),
      chain: words[1] ?? '',
      rule: line.trim(),
      family,
    });
  }
  return rules;
}

/** The `-D` argv that deletes a listed rule. */
export function deleteArgs(rule: FirewallRule): string[] {
  const words = splitRuleLine(rule.rule);
  return ['-D', ...words.slice(1)];
}
