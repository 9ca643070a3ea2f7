import { InvariantError } from '@ca-sandbox/docker/contracts';
import { splitRuleLine } from './_utils.js';
import { type Cidr, cidrContains, formatCidr, parseCidr } from './cidr.js';
import { FIXED_BLOCKED_RANGES, type HostRanges } from './host-ranges.js';
import type { Family } from './iptables.js';
import { parseRuleTag, ruleTag } from './names.js';

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
  /** The rule's own part of the comment (`a3`, `g0`); absent on rules made before per-rule comments. */
  part?: string;
}

/**
 * The fixed blocks never reachable through a broad allow such as 0.0.0.0/0 (the host's own
 * prefixes are added at apply time, see firewallBlockedRanges). Only an allow entry that lies inside
 * one of them opens it.
 */
export const BLOCKED_RANGES: Record<Family, readonly string[]> = FIXED_BLOCKED_RANGES;

/** Where forwarded traffic of the family is filtered: Docker's DOCKER-USER (v4) or FORWARD (v6). */
export const FORWARD_CHAIN: Record<Family, string> = { 4: 'DOCKER-USER', 6: 'FORWARD' };

/** Halves of the address space: guard rules, distinct from any rule the builder makes. */
const GUARD_HALVES: Record<Family, string[]> = { 4: ['0.0.0.0/1', '128.0.0.0/1'], 6: ['::/1', '8000::/1'] };

function tagArgs(sandboxId: string, part: string): string[] {
  return ['-m', 'comment', '--comment', ruleTag(sandboxId, part)];
}

function parseAll(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((text) => {
    const cidr = parseCidr(text);
    if (!cidr) throw new InvariantError(`not a cidr: ${text}`);
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
  blockedRanges: Readonly<HostRanges> | Record<Family, readonly string[]> = BLOCKED_RANGES,
): FirewallRuleSpec[] {
  const allowed = parseAll(cidrs);
  const rules: FirewallRuleSpec[] = [];
  // Every rule gets its own comment (`#a<n>`): deletion matches by it, never by the address alone.
  const tag = () => tagArgs(sandboxId, `a${rules.length}`);
  for (const family of families) {
    const chain = FORWARD_CHAIN[family];
    const blocked = parseAll(blockedRanges[family]);
    const mine = allowed.filter((cidr) => cidr.family === family);
    const insideBlocked = mine.filter((cidr) => blocked.some((range) => cidrContains(range, cidr)));
    const outside = mine.filter((cidr) => !insideBlocked.includes(cidr));
    const add = (args: string[]) =>
      rules.push({ family, chain, args: [...args.slice(0, -2), ...tag(), ...args.slice(-2)] });
    rules.push({ family, chain: 'INPUT', args: ['-i', bridge, ...tag(), '-j', 'DROP'] });
    add(['-o', bridge, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT']);
    add(['-o', bridge, '-j', 'DROP']);
    for (const cidr of insideBlocked) add(['-i', bridge, '-d', formatCidr(cidr), '-j', 'ACCEPT']);
    for (const range of blocked) add(['-i', bridge, '-d', formatCidr(range), '-j', 'DROP']);
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
  const rules: FirewallRuleSpec[] = [];
  for (const family of families)
    for (const chain of [FORWARD_CHAIN[family], 'INPUT'])
      for (const half of GUARD_HALVES[family])
        rules.push({
          family,
          chain,
          args: ['-i', bridge, '-d', half, ...tagArgs(sandboxId, `g${rules.length}`), '-j', 'DROP'],
        });
  return rules;
}

/** True when a listed rule is one of the guard rules (by its `#g<n>` comment). */
export function isGuardRule(rule: FirewallRule): boolean {
  return rule.part?.startsWith('g') === true;
}

/** The tagged rules in `iptables -S` output (`-A CHAIN ... --comment "ca-sandbox:<id>" ...`). */
export function parseRuleListing(output: string, family: Family): FirewallRule[] {
  const rules: FirewallRule[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('-A ')) continue;
    const words = splitRuleLine(line.trim());
    const at = words.indexOf('--comment');
    const tag = at === -1 ? undefined : parseRuleTag(words[at + 1] ?? '');
    if (!tag) continue;
    rules.push({
      sandboxId: tag.sandboxId,
      chain: words[1] ?? '',
      rule: line.trim(),
      family,
      ...(tag.part === undefined ? {} : { part: tag.part }),
    });
  }
  return rules;
}

/** The `-D` argv that deletes a listed rule. */
export function deleteArgs(rule: FirewallRule): string[] {
  const words = splitRuleLine(rule.rule);
  return ['-D', ...words.slice(1)];
}

/** The single-value options iptables may print in another order than they were given. */
const SINGLE_OPTIONS = new Set(['-s', '-d', '-i', '-o', '-p', '-j']);

/**
 * A rule in a canonical form, so that a spec (`-i br -d 10.0.0.0/8 -m comment ...`) and the line
 * `iptables -S` prints for it (`-A CHAIN -d 10.0.0.0/8 -i br -m comment ...`) compare equal:
 * addresses normalised (`1.2.3.4` → `1.2.3.4/32`, a /0 dropped), single options sorted, match
 * modules in order.
 */
export function canonicalRule(family: Family, chain: string, words: readonly string[]): string {
  const single: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < words.length; i += 1) {
    const word = words[i] as string;
    const value = words[i + 1];
    if (SINGLE_OPTIONS.has(word) && value !== undefined) {
      const cidr = word === '-s' || word === '-d' ? parseCidr(value) : undefined;
      // `-d 0.0.0.0/0` / `-d ::/0` match everything: iptables does not print them.
      if (cidr?.prefix !== 0) single.push(`${word} ${cidr ? formatCidr(cidr) : value}`);
      i += 1;
    } else rest.push(word);
  }
  return [`${family}`, chain, ...single.sort(), ...rest].join(' ');
}

export function canonicalSpec(spec: FirewallRuleSpec): string {
  return canonicalRule(spec.family, spec.chain, spec.args);
}

export function canonicalListed(rule: FirewallRule): string {
  const words = splitRuleLine(rule.rule);
  return canonicalRule(rule.family, words[1] ?? '', words.slice(2));
}

export interface RuleSetComparison {
  ok: boolean;
  /** Expected rules not in place (canonical form). */
  missing: string[];
  /** Tagged rules of the sandbox that are not expected (canonical form). */
  unexpected: string[];
  /** Chains whose rules are all there but in another order than the rule set's. */
  misordered: string[];
}

/**
 * Compares a sandbox's listed rules with its exact expected rule set: the same rules, each once,
 * in the same order within every chain. A count would not do: one deleted DROP and one stray
 * rule add up to the same number.
 */
export function compareRuleSets(
  expected: readonly FirewallRuleSpec[],
  listed: readonly FirewallRule[],
): RuleSetComparison {
  const want = expected.map(canonicalSpec);
  const seen = listed.map(canonicalListed);
  const missing = want.filter((rule) => !seen.includes(rule));
  const unexpected = seen.filter((rule) => !want.includes(rule));
  const duplicates = seen.filter((rule, index) => seen.indexOf(rule) !== index);
  const misordered: string[] = [];
  if (missing.length === 0 && unexpected.length === 0) {
    const chains = new Set(expected.map((spec) => `${spec.family} ${spec.chain}`));
    for (const chain of chains) {
      const inChain = (rules: string[]) => rules.filter((rule) => rule.startsWith(`${chain} `));
      if (inChain(want).join('\n') !== inChain(seen).join('\n')) misordered.push(chain);
    }
  }
  unexpected.push(...duplicates);
  return {
    ok: missing.length === 0 && unexpected.length === 0 && misordered.length === 0,
    missing,
    unexpected,
    misordered,
  };
}
