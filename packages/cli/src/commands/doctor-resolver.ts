/**
 * CVE-2024-29018: on an `--internal` network the engine's embedded resolver forwards the queries
 * it cannot answer to the host's resolvers; when a host resolver is on loopback (systemd-resolved's
 * 127.0.0.53, a local dnsmasq) the engine sends them from the host's own namespace, so a name query
 * leaves an internal network (a DNS exfiltration channel). Engines 23.0.11, 25.0.5 and 26.0 and
 * later do not; 24.x got no fix.
 */
export const RESOLVER_CVE = 'CVE-2024-29018';

/** Major, minor and patch of an engine version (`20.10.24+dfsg1`, `26.1.4`), or undefined. */
export function engineVersion(text: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

/** Whether the engine has the fix; an unreadable version counts as without. */
export function engineHasResolverFix(text: string): boolean {
  const version = engineVersion(text);
  if (!version) return false;
  const [major, minor, patch] = version;
  if (major >= 26) return true;
  if (major === 25) return minor > 0 || patch >= 5;
  if (major === 23) return minor > 0 || patch >= 11;
  return false;
}

/** The loopback resolvers named by a resolv.conf text (`nameserver 127.0.0.53`, `::1`). */
export function loopbackResolvers(resolvConf: string): string[] {
  const out: string[] = [];
  for (const line of resolvConf.split('\n')) {
    const match = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = match?.[1]?.replace(/%.*$/, '');
    // 127/8, and ::1 however it is written (`::1`, `0:0:0:0:0:0:0:1`).
    if (address && (/^127\./.test(address) || /^(0*:)+0*1$/.test(address))) out.push(address);
  }
  return out;
}

/** Why this host is exposed to the CVE (undefined when it is not): an old engine AND a loopback resolver. */
export function resolverExposure(engine: string, resolvConf: string): string | undefined {
  if (engineHasResolverFix(engine)) return undefined;
  const loopback = loopbackResolvers(resolvConf);
  if (loopback.length === 0) return undefined;
  return `engine ${engine} (before 23.0.11/25.0.5/26.0) with the loopback resolver ${loopback.join(', ')} in /etc/resolv.conf: a box on an internal network (an allowlist of domains, an install) can send DNS queries out through the host (${RESOLVER_CVE})`;
}
