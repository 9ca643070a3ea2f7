import { type Cidr, cidrContains, formatCidr, parseCidr } from './cidr.js';
import { FirewallUnavailableError } from './errors.js';
import type { Family } from './iptables.js';
import { findExecutable } from './iptables.js';

/**
 * Ranges an allowlist never opens through a broad allow such as 0.0.0.0/0, whatever the host:
 * RFC 1918, carrier-grade NAT, link-local (169.254.169.254, the cloud metadata endpoint), IPv6
 * unique-local and link-local. The host's own prefixes are added to them (deriveHostRanges).
 */
export const FIXED_BLOCKED_RANGES: Record<Family, readonly string[]> = {
  4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'],
  6: ['fc00::/7', 'fe80::/10'],
};

export type HostRanges = Record<Family, string[]>;

interface AddrInfo {
  local?: unknown;
  prefixlen?: unknown;
}

function cidrOf(address: unknown, prefix?: unknown): Cidr | undefined {
  if (typeof address !== 'string') return undefined;
  const text = typeof prefix === 'number' ? `${address}/${prefix}` : address;
  return parseCidr(text);
}

/**
 * The host's own prefixes from `ip -j addr` and `ip -j route` / `ip -6 -j route` (main table):
 * every address of every interface (as itself and as its connected prefix) and every route's
 * destination except the default route. These are the LANs, VPN and site routes the host can
 * reach directly, whatever their numbering (a LAN on public or TEST-NET addresses included).
 */
export function deriveHostRanges(addr: unknown, routes: readonly unknown[]): Cidr[] {
  const found: Cidr[] = [];
  for (const link of Array.isArray(addr) ? addr : []) {
    const infos = (link as { addr_info?: unknown }).addr_info;
    for (const info of Array.isArray(infos) ? (infos as AddrInfo[]) : []) {
      const own = cidrOf(info.local);
      const prefix = cidrOf(info.local, info.prefixlen);
      if (own) found.push(own);
      if (prefix) found.push(prefix);
    }
  }
  for (const table of routes) {
    for (const route of Array.isArray(table) ? table : []) {
      const dst = (route as { dst?: unknown }).dst;
      if (typeof dst !== 'string' || dst === 'default') continue;
      const cidr = cidrOf(dst);
      if (cidr && cidr.prefix > 0) found.push(cidr);
    }
  }
  return found;
}

/**
 * The fewest blocks that cover the fixed ranges and `derived`, per family, in a stable order (the
 * fixed ranges first as listed, then the rest by address): a block inside another is dropped, so
 * the many Docker bridges inside 172.16.0.0/12 or 192.168.0.0/16 add no rule.
 */
export function blockedRanges(derived: readonly Cidr[]): HostRanges {
  const out: HostRanges = { 4: [], 6: [] };
  for (const family of [4, 6] as const) {
    const fixed = FIXED_BLOCKED_RANGES[family].map((text) => parseCidr(text) as Cidr);
    const extra = derived
      .filter((cidr) => cidr.family === family)
      .sort((a, b) => (a.bits < b.bits ? -1 : a.bits > b.bits ? 1 : a.prefix - b.prefix));
    const all = [...fixed, ...extra];
    const kept: Cidr[] = [];
    for (const [index, cidr] of all.entries()) {
      const covered = all.some(
        (other, at) =>
          at !== index &&
          cidrContains(other, cidr) &&
          // Equal blocks: keep the first one only.
          (other.prefix < cidr.prefix || at < index),
      );
      if (!covered) kept.push(cidr);
    }
    out[family] = kept.map(formatCidr);
  }
  return out;
}

async function ipJson(args: string[]): Promise<unknown> {
  const ip = findExecutable('ip');
  if (!ip) {
    throw new FirewallUnavailableError(
      '`ip` (iproute2) was not found: the allowlist derives the ranges to drop from the host interfaces and routes',
      'install iproute2 (apt-get install iproute2)',
    );
  }
  // Loaded on use: execa costs every command that loads the network package ~40 ms of start-up,
  // and only a create that opens a gateway or a firewall reads the host's ranges.
  const { execa } = await import('execa');
  const result = await execa(ip, ['-j', ...args], {
    reject: false,
    stdin: 'ignore',
    extendEnv: false,
    env: { LC_ALL: 'C', PATH: process.env.PATH ?? '' },
    timeout: 10_000,
  });
  // A family the kernel lacks lists nothing; anything else is a failure the caller must see.
  if (result.exitCode !== 0) {
    if (args[0] === '-6') return [];
    throw new FirewallUnavailableError(`ip ${args.join(' ')} failed: ${String(result.stderr).slice(0, 200)}`);
  }
  try {
    return JSON.parse(String(result.stdout || '[]'));
  } catch {
    throw new FirewallUnavailableError(`ip -j ${args.join(' ')} did not print JSON`);
  }
}

/** The ranges an allowlist box may not reach on this host: the fixed ones plus the host's own. */
export async function firewallBlockedRanges(): Promise<HostRanges> {
  const [addr, routes4, routes6] = await Promise.all([
    ipJson(['addr', 'show']),
    ipJson(['-4', 'route', 'show', 'table', 'main']),
    ipJson(['-6', 'route', 'show', 'table', 'main']),
  ]);
  return blockedRanges(deriveHostRanges(addr, [routes4, routes6]));
}
