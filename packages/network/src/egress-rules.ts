import { networkInterfaces } from 'node:os';
import { quoteForMessage } from './_utils.js';
import { formatCidr, parseCidr } from './cidr.js';
import { InvalidAllowEntryError } from './errors.js';

/**
 * One destination the egress gateway lets through: a domain (a leading `*.` also allows every
 * subdomain and the domain itself) or an address block, on the listed ports.
 */
export type EgressRule =
  | {
      kind: 'domain';
      domain: string;
      subdomains: boolean;
      ports: number[];
      /**
       * The user named this host themselves (the repo URL): it is allowed wherever it resolves,
       * an internal git server included. Never set for defaults or anything a repo can choose.
       */
      resolvesAnywhere?: boolean;
    }
  | { kind: 'cidr'; cidr: string; ports: number[] };

/** Ports a rule without an explicit `:port` opens: HTTPS and HTTP. */
export const DEFAULT_EGRESS_PORTS: readonly number[] = [443, 80];

const LABEL = '[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9])?';
const DOMAIN = new RegExp(`^(\\*\\.)?(${LABEL})(\\.${LABEL})*$`);
const MAX_RULES = 256;

/**
 * Ranges the gateway never connects to, whatever name resolved to them: "this" network, private,
 * carrier-grade NAT, loopback, link-local (cloud metadata services live at 169.254.169.254),
 * IETF protocol assignments, benchmarking, multicast and reserved; IPv6 loopback, unique-local,
 * link-local, multicast and the IPv4-mapped space (which would smuggle any of the above).
 */
export const ALWAYS_BLOCKED_RANGES: readonly string[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  '::ffff:0:0/96',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
];

function ruleError(entry: string, why: string): InvalidAllowEntryError {
  return new InvalidAllowEntryError(entry, `invalid egress destination ${quoteForMessage(entry)}: ${why}`);
}

function parsePort(entry: string, text: string): number {
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw ruleError(entry, 'the port must be a number from 1 to 65535');
  return port;
}

/**
 * Parses `--allow` style destinations for the gateway: `example.com`, `*.example.com`,
 * `example.com:8443`, `203.0.113.7`, `203.0.113.0/24`, `[2001:db8::1]:443`, `2001:db8::/32`.
 */
export function parseEgressRule(input: unknown): EgressRule {
  if (typeof input !== 'string') throw ruleError(String(input), 'expected a string');
  const entry = input.trim();
  const bracketed = /^\[([0-9a-f:.]+)\](?::([0-9]+))?$/i.exec(entry);
  if (bracketed?.[1]) {
    const cidr = parseCidr(bracketed[1]);
    if (!cidr) throw ruleError(entry, 'not an IPv6 address');
    return { kind: 'cidr', cidr: formatCidr(cidr), ports: portsOf(entry, bracketed[2]) };
  }
  const whole = parseCidr(entry);
  if (whole) return { kind: 'cidr', cidr: formatCidr(whole), ports: [...DEFAULT_EGRESS_PORTS] };
  const hostPort = /^([^:]+):([0-9]+)$/.exec(entry);
  const host = (hostPort?.[1] ?? entry).toLowerCase().replace(/\.$/, '');
  const ports = portsOf(entry, hostPort?.[2]);
  const address = parseCidr(host);
  if (address) return { kind: 'cidr', cidr: formatCidr(address), ports };
  if (host.length > 253 || !DOMAIN.test(host) || !/[a-z]/.test(host.split('.').pop() ?? '')) {
    throw ruleError(
      entry,
      'expected a domain (example.com, *.example.com), an IP address or a CIDR, with an optional :port',
    );
  }
  const subdomains = host.startsWith('*.');
  return { kind: 'domain', domain: subdomains ? host.slice(2) : host, subdomains, ports };
}

function portsOf(entry: string, text: string | undefined): number[] {
  return text === undefined ? [...DEFAULT_EGRESS_PORTS] : [parsePort(entry, text)];
}

/** Parses and de-duplicates a list of destinations (at most 256). */
export function parseEgressRules(entries: readonly unknown[]): EgressRule[] {
  if (!Array.isArray(entries)) throw ruleError('', 'destinations must be a list');
  if (entries.length > MAX_RULES) {
    throw ruleError('', `too many destinations (${entries.length}, at most ${MAX_RULES})`);
  }
  const seen = new Set<string>();
  const out: EgressRule[] = [];
  for (const entry of entries) {
    const rule = parseEgressRule(entry);
    const key = describeEgressRule(rule);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(rule);
    }
  }
  return out;
}

/** `*.example.com:443,80`, `203.0.113.0/24:443`: how a rule is shown to people and in labels. */
export function describeEgressRule(rule: EgressRule): string {
  const target = rule.kind === 'cidr' ? rule.cidr : `${rule.subdomains ? '*.' : ''}${rule.domain}`;
  return `${target}:${rule.ports.join(',')}`;
}

type InterfaceMap = ReturnType<typeof networkInterfaces>;

/**
 * The host's own addresses and the prefixes it is directly connected to (its LAN, whatever range
 * that is), read from the host's interfaces: the gateway refuses them after name resolution, so no
 * name can lead back to the host or its network.
 */
export function hostBlockedRanges(interfaces: InterfaceMap = networkInterfaces()): string[] {
  const out = new Set<string>();
  for (const addresses of Object.values(interfaces)) {
    for (const info of addresses ?? []) {
      const own = parseCidr(info.address.replace(/%.*$/, ''));
      if (own) out.add(formatCidr(own));
      const prefix = info.cidr ? parseCidr(info.cidr.replace(/%[^/]*/, '')) : undefined;
      if (prefix) out.add(formatCidr(prefix));
    }
  }
  return [...out];
}

/** Everything the gateway refuses: the fixed ranges plus the host's own. */
export function egressBlockedRanges(interfaces?: InterfaceMap): string[] {
  return [...new Set([...ALWAYS_BLOCKED_RANGES, ...hostBlockedRanges(interfaces)])];
}

/**
 * How an allowlist is enforced: addresses and CIDRs alone (no port) by host firewall rules, any
 * port and protocol (EXPERIMENTAL); anything naming a domain or a port by the egress gateway, which
 * resolves names itself and lets proxy-aware clients reach exactly the list.
 */
export function allowlistEnforcement(entries: readonly string[]): 'firewall' | 'gateway' {
  return entries.every((entry) => {
    const cidr = parseCidr(String(entry).trim());
    return cidr !== undefined;
  })
    ? 'firewall'
    : 'gateway';
}
