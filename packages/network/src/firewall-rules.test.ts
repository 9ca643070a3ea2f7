import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitRuleLine } from './_utils.js';
import { parseAllowEntries } from './allow-entries.js';
import { cidrContains, formatCidr, parseCidr } from './cidr.js';
import {
  BLOCKED_RANGES,
  buildAllowlistRules,
  buildGuardRules,
  canonicalRule,
  compareRuleSets,
  deleteArgs,
  type FirewallRuleSpec,
  isGuardRule,
  parseRuleListing,
} from './firewall-rules.js';
import { bridgeName, parseRuleTag, ruleTag } from './names.js';

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('missing value');
  return value;
}

const ID = 'sbx-1a2b';
const BRIDGE = bridgeName(ID);

/** The rules of one chain as text, without the per-rule part of the comment (tested on its own). */
function render(rules: FirewallRuleSpec[], chain: string, family: 4 | 6 = 4): string[] {
  return rules
    .filter((rule) => rule.chain === chain && rule.family === family)
    .map((rule) => rule.args.join(' ').replace(/#[ag][0-9]+ -j/, ' -j'));
}

describe('buildAllowlistRules', () => {
  it('orders replies, inbound drop, LAN allows, LAN drops, other allows, final drop', () => {
    const rules = buildAllowlistRules(
      ID,
      BRIDGE,
      parseAllowEntries(['203.0.113.7', '172.17.0.3', '0.0.0.0/0']),
      [4],
    );
    const tag = `-m comment --comment ca-sandbox:${ID}`;
    expect(render(rules, 'DOCKER-USER')).toEqual([
      `-o ${BRIDGE} -m conntrack --ctstate RELATED,ESTABLISHED ${tag} -j ACCEPT`,
      `-o ${BRIDGE} ${tag} -j DROP`,
      `-i ${BRIDGE} -d 172.17.0.3/32 ${tag} -j ACCEPT`,
      `-i ${BRIDGE} -d 10.0.0.0/8 ${tag} -j DROP`,
      `-i ${BRIDGE} -d 172.16.0.0/12 ${tag} -j DROP`,
      `-i ${BRIDGE} -d 192.168.0.0/16 ${tag} -j DROP`,
      `-i ${BRIDGE} -d 169.254.0.0/16 ${tag} -j DROP`,
      `-i ${BRIDGE} -d 100.64.0.0/10 ${tag} -j DROP`,
      `-i ${BRIDGE} -d 203.0.113.7/32 ${tag} -j ACCEPT`,
      `-i ${BRIDGE} -d 0.0.0.0/0 ${tag} -j ACCEPT`,
      `-i ${BRIDGE} ${tag} -j DROP`,
    ]);
    expect(render(rules, 'INPUT')).toEqual([`-i ${BRIDGE} ${tag} -j DROP`]);
  });

  it('puts IPv6 rules in FORWARD and its own LAN ranges', () => {
    const rules = buildAllowlistRules(ID, BRIDGE, parseAllowEntries(['2001:db8::/32', '10.0.0.1']), [4, 6]);
    const v6 = render(rules, 'FORWARD', 6);
    expect(v6).toContain(`-i ${BRIDGE} -d 2001:db8::/32 -m comment --comment ca-sandbox:${ID} -j ACCEPT`);
    expect(v6.join('\n')).not.toContain('10.0.0.1');
    expect(v6.at(-1)).toBe(`-i ${BRIDGE} -m comment --comment ca-sandbox:${ID} -j DROP`);
    expect(render(rules, 'INPUT', 6)).toEqual([`-i ${BRIDGE} -m comment --comment ca-sandbox:${ID} -j DROP`]);
    expect(render(rules, 'DOCKER-USER', 4)).toContain(
      `-i ${BRIDGE} -d 10.0.0.1/32 -m comment --comment ca-sandbox:${ID} -j ACCEPT`,
    );
  });

  it('with nothing allowed, everything from and to the bridge is dropped', () => {
    const rules = buildAllowlistRules(ID, BRIDGE, [], [4]);
    expect(rules.filter((rule) => rule.args.at(-1) === 'ACCEPT').map((rule) => rule.args.join(' '))).toEqual([
      `-o ${BRIDGE} -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment ca-sandbox:${ID}#a1 -j ACCEPT`,
    ]);
  });

  // First-match evaluation of the forward chain for a NEW connection from the bridge.
  function verdict(rules: FirewallRuleSpec[], family: 4 | 6, destination: string): string {
    const target = must(parseCidr(destination));
    for (const rule of rules.filter((r) => r.family === family && r.chain !== 'INPUT')) {
      if (rule.args[0] !== '-i') continue;
      const at = rule.args.indexOf('-d');
      if (at !== -1 && !cidrContains(must(parseCidr(rule.args[at + 1] as string)), target)) continue;
      return rule.args.at(-1) as string;
    }
    return 'FALLTHROUGH';
  }

  it('(property) a new connection is accepted exactly when allowed, and a blocked range only when named inside it', () => {
    const blocked = BLOCKED_RANGES[4].map((range) => must(parseCidr(range)));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })), { maxLength: 6 }),
        fc.ipV4(),
        (allowed, ip) => {
          const cidrs = parseAllowEntries(allowed.map(([addr, prefix]) => `${addr}/${prefix}`)).map((c) =>
            must(parseCidr(c)),
          );
          const target = must(parseCidr(ip));
          const result = verdict(buildAllowlistRules(ID, BRIDGE, cidrs.map(formatCidr), [4]), 4, ip);
          const inBlocked = blocked.some((range) => cidrContains(range, target));
          const namedInside = cidrs.some(
            (cidr) => cidrContains(cidr, target) && blocked.some((range) => cidrContains(range, cidr)),
          );
          const allowedTarget = cidrs.some((cidr) => cidrContains(cidr, target));
          const expected = allowedTarget && (!inBlocked || namedInside) ? 'ACCEPT' : 'DROP';
          expect(result).toBe(expected);
        },
      ),
    );
  });

  it('0.0.0.0/0 opens neither the metadata address, the LAN nor carrier-grade NAT', () => {
    const rules = buildAllowlistRules(ID, BRIDGE, ['0.0.0.0/0', '::/0'], [4, 6]);
    for (const ip of ['169.254.169.254', '10.1.2.3', '172.17.0.2', '192.168.1.1', '100.100.100.100']) {
      expect(verdict(rules, 4, ip)).toBe('DROP');
    }
    expect(verdict(rules, 4, '203.0.113.9')).toBe('ACCEPT');
    expect(verdict(rules, 6, 'fe80::1')).toBe('DROP');
    expect(verdict(rules, 6, 'fd00::2')).toBe('DROP');
    expect(verdict(rules, 6, '2001:db8::1')).toBe('ACCEPT');
  });

  it('naming 169.254.169.254 itself opens only that address', () => {
    const rules = buildAllowlistRules(ID, BRIDGE, ['169.254.169.254/32'], [4]);
    expect(verdict(rules, 4, '169.254.169.254')).toBe('ACCEPT');
    expect(verdict(rules, 4, '169.254.169.253')).toBe('DROP');
  });

  it('(property) every rule names the sandbox bridge and carries the sandbox tag; each chain ends in DROP', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.ipV4(), fc.ipV6()), { maxLength: 8 }),
        fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,20}$/),
        (ips, id) => {
          const bridge = bridgeName(id);
          const rules = buildAllowlistRules(id, bridge, parseAllowEntries(ips), [4, 6]);
          for (const rule of rules) {
            const at = rule.args.findIndex((word) => word === '-i' || word === '-o');
            expect(rule.args[at + 1]).toBe(bridge);
            expect(rule.args.join(' ')).toMatch(
              new RegExp(`--comment ca-sandbox:${id.replace(/\./g, '\\.')}#a[0-9]+ -j`),
            );
          }
          for (const family of [4, 6] as const) {
            for (const chain of [family === 4 ? 'DOCKER-USER' : 'FORWARD', 'INPUT']) {
              expect(render(rules, chain, family).at(-1)).toBe(
                `-i ${bridge} -m comment --comment ca-sandbox:${id} -j DROP`,
              );
            }
          }
        },
      ),
    );
  });
});

describe('guard rules', () => {
  it('cover the whole address space of each chain and are recognised as guards', () => {
    const guards = buildGuardRules(ID, BRIDGE, [4, 6]);
    expect(guards).toHaveLength(8);
    const listing = guards.map(
      (rule) => `-A ${rule.chain} ${rule.args.join(' ').replace(/--comment (\S+)/, '--comment "$1"')}`,
    );
    const parsed = listing.flatMap((line, i) => parseRuleListing(line, guards[i]?.family ?? 4));
    expect(parsed.every(isGuardRule)).toBe(true);
    const normal = buildAllowlistRules(ID, BRIDGE, parseAllowEntries(['0.0.0.0/1', '::/1']), [4, 6]);
    const normalParsed = normal.flatMap((rule) =>
      parseRuleListing(`-A ${rule.chain} ${rule.args.join(' ')}`, rule.family),
    );
    expect(normalParsed.some(isGuardRule)).toBe(false);
  });
});

describe('parseRuleListing', () => {
  const listing = [
    '-P INPUT ACCEPT',
    '-N DOCKER-USER',
    '-A INPUT -i casbx0123456789 -m comment --comment "ca-sandbox:abc" -j DROP',
    '-A DOCKER-USER -o casbx0123456789 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment "ca-sandbox:abc" -j ACCEPT',
    '-A DOCKER-USER -d 10.0.0.0/8 -i casbxaaaaaaaaaa -m comment --comment ca-sandbox:abc.1 -j DROP',
    '-A DOCKER-USER -m comment --comment "someone else: ca-sandbox:abc" -j RETURN',
    '-A DOCKER-USER -m comment --comment "ca-sandbox:" -j RETURN',
    '-A DOCKER-USER -j RETURN',
  ].join('\n');

  it('finds exactly the tagged rules, with their sandbox id and chain', () => {
    const rules = parseRuleListing(listing, 4);
    expect(rules.map((rule) => [rule.sandboxId, rule.chain])).toEqual([
      ['abc', 'INPUT'],
      ['abc', 'DOCKER-USER'],
      ['abc.1', 'DOCKER-USER'],
    ]);
  });

  it('turns a listed rule into the -D argv that deletes it', () => {
    const [, second] = parseRuleListing(listing, 4);
    expect(deleteArgs(must(second))).toEqual([
      '-D',
      'DOCKER-USER',
      '-o',
      'casbx0123456789',
      '-m',
      'conntrack',
      '--ctstate',
      'RELATED,ESTABLISHED',
      '-m',
      'comment',
      '--comment',
      'ca-sandbox:abc',
      '-j',
      'ACCEPT',
    ]);
  });

  it('splits quoted words with spaces and escapes', () => {
    expect(splitRuleLine('-A X -m comment --comment "a b \\"c\\"" -j DROP')).toEqual([
      '-A',
      'X',
      '-m',
      'comment',
      '--comment',
      'a b "c"',
      '-j',
      'DROP',
    ]);
  });
});

describe('per-rule comments (iptables-nft ignores IPv6 masks on -D)', () => {
  it('every allowlist and guard rule of a sandbox has its own comment, and -D names it', () => {
    const rules = [
      ...buildAllowlistRules(ID, BRIDGE, parseAllowEntries(['0.0.0.0/0', '::/0', '10.1.0.0/16']), [4, 6]),
      ...buildGuardRules(ID, BRIDGE, [4, 6]),
    ];
    const comments = rules.map((rule) => rule.args[rule.args.indexOf('--comment') + 1]);
    expect(new Set(comments).size).toBe(rules.length);
    // The ::/1 guard and the catch-all DROP of FORWARD differ by their comment, not only by -d.
    const listed = rules.flatMap((rule) =>
      parseRuleListing(`-A ${rule.chain} ${rule.args.join(' ')}`, rule.family),
    );
    const guard = must(listed.find((rule) => rule.family === 6 && rule.rule.includes('-d ::/1')));
    const catchAll = must(
      listed.find(
        (rule) =>
          rule.family === 6 &&
          rule.chain === 'FORWARD' &&
          / -i \S+ -m comment .* -j DROP$/.test(rule.rule) &&
          !rule.rule.includes(' -d '),
      ),
    );
    expect(isGuardRule(guard)).toBe(true);
    expect(isGuardRule(catchAll)).toBe(false);
    const comment = (args: string[]) => args[args.indexOf('--comment') + 1];
    expect(comment(deleteArgs(guard))).not.toBe(comment(deleteArgs(catchAll)));
    expect(listed.every((rule) => rule.sandboxId === ID)).toBe(true);
  });

  it('parseRuleTag: id and part; the part separator is outside the id alphabet; old tags still parse', () => {
    expect(parseRuleTag('ca-sandbox:sbx-1.a_b#a12')).toEqual({ sandboxId: 'sbx-1.a_b', part: 'a12' });
    expect(parseRuleTag('ca-sandbox:sbx-1')).toEqual({ sandboxId: 'sbx-1' });
    expect(parseRuleTag('ca-sandbox:')).toBeUndefined();
    expect(parseRuleTag('ca-sandbox:Bad#a1')).toBeUndefined();
    expect(parseRuleTag('other:sbx')).toBeUndefined();
    expect(() => ruleTag('sbx', 'x y')).toThrow();
  });
});

describe('compareRuleSets (verify compares the exact rule set)', () => {
  const rules = buildAllowlistRules(ID, BRIDGE, parseAllowEntries(['203.0.113.7', '2001:db8::/32']), [4, 6]);
  /** The rules as `iptables -S` prints them: -d before -i, host addresses with /32, comment quoted. */
  const asListed = (specs: FirewallRuleSpec[]) =>
    specs.flatMap((spec) => {
      const args = [...spec.args];
      const d = args.indexOf('-d');
      const words: string[] = [];
      if (d !== -1) {
        words.push('-d', (args[d + 1] as string).replace(/^203\.0\.113\.7\/32$/, '203.0.113.7/32'));
        args.splice(d, 2);
      }
      words.push(...args);
      const line = `-A ${spec.chain} ${words.join(' ').replace(/--comment (\S+)/, '--comment "$1"')}`;
      return parseRuleListing(line, spec.family);
    });

  it('the rules as listed match their specs exactly', () => {
    expect(compareRuleSets(rules, asListed(rules))).toEqual({
      ok: true,
      missing: [],
      unexpected: [],
      misordered: [],
    });
  });

  it('a deleted catch-all DROP with a stray rule in its place fails, though the count is the same', () => {
    const listed = asListed(rules);
    const at = listed.findIndex(
      (rule) =>
        rule.family === 6 &&
        rule.chain === 'FORWARD' &&
        rule.rule.endsWith('-j DROP') &&
        rule.rule.includes(' -i ') &&
        !rule.rule.includes(' -d '),
    );
    const stray = must(asListed(buildGuardRules(ID, BRIDGE, [6]))[0]);
    listed.splice(at, 1, stray);
    const check = compareRuleSets(rules, listed);
    expect(listed).toHaveLength(rules.length);
    expect(check.ok).toBe(false);
    expect(check.missing).toHaveLength(1);
    expect(check.missing[0]).toMatch(
      /^6 FORWARD -i casbx\S+ -j DROP -m comment --comment ca-sandbox:sbx-1a2b#a\d+$/,
    );
    expect(check.unexpected).toHaveLength(1);
  });

  it('a reordered chain, a duplicate or a changed address fails', () => {
    const listed = asListed(rules);
    const swapped = [...listed];
    const first = swapped.findIndex((rule) => rule.chain === 'DOCKER-USER');
    [swapped[first], swapped[first + 1]] = [must(swapped[first + 1]), must(swapped[first])];
    expect(compareRuleSets(rules, swapped).misordered).toEqual(['4 DOCKER-USER']);
    expect(compareRuleSets(rules, [...listed, must(listed[0])]).ok).toBe(false);
    const changed = listed.map((rule) => ({ ...rule, rule: rule.rule.replace('10.0.0.0/8', '10.0.0.0/9') }));
    expect(compareRuleSets(rules, changed).ok).toBe(false);
  });

  it('canonicalRule: option order and host prefixes do not matter, values do', () => {
    expect(canonicalRule(4, 'X', ['-i', 'b', '-d', '1.2.3.4', '-j', 'DROP'])).toBe(
      canonicalRule(4, 'X', ['-d', '1.2.3.4/32', '-i', 'b', '-j', 'DROP']),
    );
    expect(canonicalRule(6, 'X', ['-d', '::/1', '-j', 'DROP'])).not.toBe(
      canonicalRule(6, 'X', ['-j', 'DROP']),
    );
    // iptables prints no -d for an allow of everything.
    expect(canonicalRule(4, 'X', ['-i', 'b', '-d', '0.0.0.0/0', '-j', 'ACCEPT'])).toBe(
      canonicalRule(4, 'X', ['-i', 'b', '-j', 'ACCEPT']),
    );
    expect(canonicalRule(6, 'X', ['-d', '::/0', '-j', 'ACCEPT'])).toBe(
      canonicalRule(6, 'X', ['-j', 'ACCEPT']),
    );
  });
});
