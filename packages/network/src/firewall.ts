import { engine, LABEL_ID, SANDBOX_LABEL, SANDBOX_LABEL_VALUE } from '@ca-sandbox/docker';
import { parseAllowEntries } from './allow-entries.js';
import { formatCidr, parseCidr } from './cidr.js';
import { FirewallCommandError, InvalidAllowEntryError, SandboxNetworkMismatchError } from './errors.js';
import {
  buildAllowlistRules,
  buildGuardRules,
  compareRuleSets,
  deleteArgs,
  type FirewallRule,
  type FirewallRuleSpec,
  isGuardRule,
  parseRuleListing,
  type RuleSetComparison,
} from './firewall-rules.js';
import { firewallBlockedRanges, type HostRanges } from './host-ranges.js';
import {
  assertFirewallUsable,
  commandName,
  type Family,
  findExecutable,
  firewallFamilies,
  iptables,
} from './iptables.js';
import { assertSandboxId, bridgeName, sandboxNetworkName } from './names.js';
import { BRIDGE_OPTION, type SandboxNetwork } from './sandbox-network.js';

/** Every rule tagged `ca-sandbox:<id>` in the filter table, IPv4 and IPv6. */
export async function listFirewallRules(): Promise<FirewallRule[]> {
  // Without iptables no rule of ours can exist: teardown must not need it.
  if (!findExecutable('iptables')) return [];
  const rules: FirewallRule[] = [];
  for (const family of firewallFamilies()) {
    const listing = await iptables(family, ['-S']);
    rules.push(...parseRuleListing(listing.stdout, family));
  }
  return rules;
}

function describe(rule: FirewallRule): string {
  return `${commandName(rule.family)} ${rule.rule}`;
}

const GONE = /does a matching rule exist|bad rule|no chain\/target\/match/i;

/** Rounds of deletion: rules made before per-rule comments share one comment (see below). */
const DELETE_ROUNDS = 4;

/**
 * Deletes the listed rules by their full spec, comment included. Rules tagged since per-rule
 * comments match only themselves; older rules of one sandbox share a comment, and iptables-nft
 * ignores IPv6 masks on `-D`, so a delete may take a sibling instead: the rest are re-listed and
 * deleted again until none of them is left (all are the same sandbox's, all are to go).
 */
async function deleteRules(rules: readonly FirewallRule[]): Promise<string[]> {
  const removed: string[] = [];
  let pending = [...rules];
  for (let round = 0; round < DELETE_ROUNDS && pending.length > 0; round += 1) {
    const failures: FirewallCommandError[] = [];
    for (const rule of pending) {
      const result = await iptables(rule.family, deleteArgs(rule), { allowFailure: true });
      if (result.exitCode === 0) removed.push(describe(rule));
      // Already gone (a concurrent teardown, or a sibling's delete took it): what we wanted.
      else if (!GONE.test(result.stderr))
        failures.push(new FirewallCommandError(result.argv, result.exitCode, result.stderr));
    }
    if (failures[0]) throw failures[0];
    const wanted = new Set(pending.map((rule) => `${rule.family} ${rule.rule}`));
    pending = (await listFirewallRules()).filter((rule) => wanted.has(`${rule.family} ${rule.rule}`));
  }
  return removed;
}

/**
 * Deletes exactly the rules tagged with `sandboxId` and returns them as `iptables -A ...` lines.
 * Throws FirewallCommandError when a rule stays. There is no "every tagged rule" form: rules of a
 * sandbox being made right now must never go with someone else's sweep.
 */
export async function removeFirewallRules(sandboxId: string): Promise<string[]> {
  assertSandboxId(sandboxId);
  const mine = (await listFirewallRules()).filter((rule) => rule.sandboxId === sandboxId);
  const removed = await deleteRules(mine);
  const left = (await listFirewallRules()).filter((rule) => rule.sandboxId === sandboxId);
  if (left[0]) {
    throw new FirewallCommandError(
      [commandName(left[0].family), '-S'],
      1,
      `rule still present: ${left[0].rule}`,
    );
  }
  return removed;
}

/** The network really is this sandbox's: our labels and the bridge name we derive from the id. */
async function assertOwnNetwork(sandboxId: string, net: SandboxNetwork): Promise<void> {
  const expected = { name: sandboxNetworkName(sandboxId), bridge: bridgeName(sandboxId) };
  if (net.name !== expected.name || net.bridge !== expected.bridge) {
    throw new SandboxNetworkMismatchError(
      `network ${JSON.stringify(net.name)} / bridge ${JSON.stringify(net.bridge)} is not the network of sandbox ${sandboxId} (${expected.name} / ${expected.bridge})`,
    );
  }
  const { Labels: labels, Options: options } = await engine.network.inspect(expected.name);
  if (
    labels[SANDBOX_LABEL] !== SANDBOX_LABEL_VALUE ||
    labels[LABEL_ID] !== sandboxId ||
    options[BRIDGE_OPTION] !== expected.bridge
  ) {
    throw new SandboxNetworkMismatchError(
      `docker network ${expected.name} is not labeled for sandbox ${sandboxId} or does not use bridge ${expected.bridge}`,
    );
  }
}

async function insertRules(specs: readonly FirewallRuleSpec[]): Promise<void> {
  // Inserting at position 1 in reverse keeps the given order; the catch-all drops go in first.
  for (const spec of [...specs].reverse()) {
    await iptables(spec.family, ['-I', spec.chain, '1', ...spec.args]);
  }
}

/**
 * Limits the egress of sandbox `sandboxId`'s bridge to `cidrs` with host firewall rules (IPv4 in
 * Docker's DOCKER-USER chain, IPv6 in FORWARD, and INPUT for traffic to the host itself), each
 * tagged `ca-sandbox:<id>`. Replaces rules already applied for the id; while they are replaced,
 * guard rules drop everything from the bridge. If this throws, the guards may remain: the box
 * stays cut off until removeFirewallRules(id). Apply before the box starts.
 */
export async function applyAllowlist(
  sandboxId: string,
  net: SandboxNetwork,
  cidrs: readonly string[],
): Promise<AppliedAllowlist> {
  assertSandboxId(sandboxId);
  const allowed = parseAllowEntries(cidrs);
  await assertFirewallUsable();
  await assertOwnNetwork(sandboxId, net);
  const families: Family[] = firewallFamilies();
  const blocked = await firewallBlockedRanges();
  const before = (await listFirewallRules()).filter((rule) => rule.sandboxId === sandboxId);
  await insertRules(buildGuardRules(sandboxId, net.bridge, families));
  await deleteRules(before.filter((rule) => !isGuardRule(rule)));
  const rules = buildAllowlistRules(sandboxId, net.bridge, allowed, families, blocked);
  await insertRules(rules);
  const guards = (await listFirewallRules()).filter(
    (rule) => rule.sandboxId === sandboxId && isGuardRule(rule),
  );
  await deleteRules(guards);
  const check = await compareWithExpected(sandboxId, allowed, blocked);
  if (!check.ok) {
    throw new FirewallCommandError(
      [commandName(4), '-S'],
      1,
      `the allowlist rules of ${sandboxId} are not the expected set after applying them: ${describeComparison(check)}`,
    );
  }
  return { allowed, blocked: [...blocked[4], ...blocked[6]], rules: rules.length };
}

/** What applyAllowlist put in place: keep `allowed` and `blocked` to verify the exact set later. */
export interface AppliedAllowlist {
  allowed: string[];
  /** The blocked ranges of both families (fixed plus the host's prefixes at apply time). */
  blocked: string[];
  rules: number;
}

/** Splits a list of CIDRs of both families (as AppliedAllowlist.blocked) by family. */
export function rangesByFamily(cidrs: readonly string[]): HostRanges {
  const out: HostRanges = { 4: [], 6: [] };
  for (const text of cidrs) {
    const cidr = parseCidr(text);
    if (!cidr) throw new InvalidAllowEntryError(text, `not a blocked range cidr: ${text.slice(0, 60)}`);
    out[cidr.family].push(formatCidr(cidr));
  }
  return out;
}

export interface FirewallVerification extends RuleSetComparison {
  /** Rules the sandbox should have on this host now, and tagged rules of it found. */
  expected: number;
  seen: number;
}

/**
 * Compares the tagged rules of `sandboxId` with the exact rule set of its allowlist: the `cidrs`
 * it allows and the `blocked` ranges applyAllowlist used (AppliedAllowlist.blocked; without them,
 * the ranges this host gives now), its derived bridge, the families the kernel has. Any deleted,
 * added, changed or reordered rule fails, IPv4 and IPv6 alike.
 */
export async function verifyFirewallRules(
  sandboxId: string,
  cidrs: readonly string[],
  blocked?: readonly string[],
): Promise<FirewallVerification> {
  assertSandboxId(sandboxId);
  const ranges = blocked === undefined ? await firewallBlockedRanges() : rangesByFamily(blocked);
  return compareWithExpected(sandboxId, parseAllowEntries(cidrs), ranges);
}

async function compareWithExpected(
  sandboxId: string,
  allowed: readonly string[],
  blocked: HostRanges,
): Promise<FirewallVerification> {
  const expected = buildAllowlistRules(
    sandboxId,
    bridgeName(sandboxId),
    allowed,
    firewallFamilies(),
    blocked,
  );
  const mine = (await listFirewallRules()).filter((rule) => rule.sandboxId === sandboxId);
  return { ...compareRuleSets(expected, mine), expected: expected.length, seen: mine.length };
}

/** One line: what is missing, extra or out of order (the first few of each). */
export function describeComparison(check: RuleSetComparison): string {
  const some = (rules: string[]) =>
    rules.slice(0, 3).join('; ') + (rules.length > 3 ? `; +${rules.length - 3}` : '');
  return [
    check.missing.length ? `missing ${check.missing.length}: ${some(check.missing)}` : '',
    check.unexpected.length ? `unexpected ${check.unexpected.length}: ${some(check.unexpected)}` : '',
    check.misordered.length ? `out of order in ${check.misordered.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' | ');
}
