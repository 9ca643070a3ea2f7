import {
  cloneEgressRule,
  type EgressRule,
  GATEWAY_PORT,
  type GatewayCredential,
  type GatewayLogEntry,
} from '@ca-sandbox/network';
import {
  type EgressGateway,
  keepAlive,
  readGatewayLog,
  reconfigureGateway,
  startGateway,
  stopGateway,
} from '@ca-sandbox/run';
import type { ParsedSource } from './source.js';

/**
 * A CONNECT relay through the gateway for the transports that do not read proxy variables: git://
 * (GIT_PROXY_COMMAND) and ssh (ProxyCommand). Ours, static, written into the helper's /tmp, in
 * perl (perl-base is in every Debian image: no tool to add to the helper image). It ends when the
 * server closes. squid turns a client's half-close into a full close of the tunnel, so the end of
 * stdin is not passed on; git:// therefore speaks protocol v0 through it, whose server closes
 * after the pack (a v2 server waits for the client's end).
 */
export const CONNECT_RELAY_PATH = '/tmp/.ca-sbx-connect';
const CONNECT_RELAY = String.raw`#!/usr/bin/perl
use strict; use warnings; use IO::Socket::INET; use IO::Select;
my ($host, $port) = @ARGV;
my $s = IO::Socket::INET->new(PeerAddr => $ENV{CA_SANDBOX_GATEWAY_HOST},
  PeerPort => $ENV{CA_SANDBOX_GATEWAY_PORT}, Proto => 'tcp')
  or die "the egress gateway is unreachable: $!\n";
sub put { my ($fh, $data) = @_; my $off = 0;
  while ($off < length $data) { my $n = syswrite($fh, $data, length($data) - $off, $off);
    defined $n or exit 1; $off += $n } }
put($s, "CONNECT $host:$port HTTP/1.1\r\nHost: $host:$port\r\n\r\n");
my $head = ''; my $c;
while ($head !~ /\r?\n\r?\n\z/) { sysread($s, $c, 1) or die "the egress gateway closed the connection\n"; $head .= $c }
my ($status) = split /\r?\n/, $head;
$status =~ m{^HTTP/1\.[01] 200} or die "the egress gateway refused $host:$port ($status)\n";
my $sel = IO::Select->new(\*STDIN, $s); my $buf;
while (my @ready = $sel->can_read) {
  for my $fh (@ready) {
    my $n = sysread($fh, $buf, 65536);
    if ($fh == $s) { exit 0 unless $n; put(\*STDOUT, $buf) }
    elsif ($n) { put($s, $buf) }
    else { $sel->remove(\*STDIN) }
  }
}
`;

/** What git and ssh need to go through the relay. */
export function relayEnv(sshCommand: string): Record<string, string> {
  return {
    GIT_PROXY_COMMAND: CONNECT_RELAY_PATH,
    GIT_SSH_COMMAND: `${sshCommand} -o ProxyCommand="${CONNECT_RELAY_PATH} %h %p"`,
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'protocol.version',
    GIT_CONFIG_VALUE_0: '0',
  };
}

/** The helper command that installs the relay (a clone step). */
export function relayInstallStep(): string[] {
  return [
    '/bin/sh',
    '-c',
    `umask 077; cat > ${CONNECT_RELAY_PATH} <<'CA_SBX_EOF'\n${CONNECT_RELAY}CA_SBX_EOF\nchmod 700 ${CONNECT_RELAY_PATH}`,
  ];
}

/** The environment that sends a client's traffic through the gateway. */
export function proxyEnv(gateway: EgressGateway): Record<string, string> {
  const url = new URL(gateway.proxyUrl);
  return {
    http_proxy: gateway.proxyUrl,
    https_proxy: gateway.proxyUrl,
    HTTP_PROXY: gateway.proxyUrl,
    HTTPS_PROXY: gateway.proxyUrl,
    CA_SANDBOX_GATEWAY_HOST: url.hostname,
    CA_SANDBOX_GATEWAY_PORT: String(GATEWAY_PORT),
  };
}

/**
 * One create's egress: started on first need (the clone of a URL, or an install that really runs)
 * or ahead of it (`prestart`, while a local tree is copied), re-pointed between phases (the clone
 * reaches the repo's host only, the install its registries), and what it decided collected per
 * phase before it goes. This gateway lives on the create's heartbeat: a create killed outright
 * leaves no gateway open. A box that goes through a gateway gets a new one of its own
 * (`openForBox`), whose configuration is the box's rules from its first start on.
 */
export class CreateEgress {
  private starting?: Promise<EgressGateway>;
  private phase = '';
  private seen = 0;
  private stopHeartbeat: () => void = () => {};
  readonly decisions: (GatewayLogEntry & { phase: string })[] = [];

  constructor(
    private readonly sandboxId: string,
    private readonly labels: Record<string, string>,
    private readonly signal?: AbortSignal,
  ) {}

  private start(
    rules: readonly EgressRule[],
    heartbeat: boolean,
    secrets: BoxGatewaySecrets = {},
  ): Promise<EgressGateway> {
    const starting = startGateway({
      sandboxId: this.sandboxId,
      rules,
      labels: this.labels,
      heartbeat,
      ...secrets,
      ...(this.signal ? { signal: this.signal } : {}),
    });
    // A failure is reported by whoever opens it; an unused start must not crash the process.
    starting.catch(() => undefined);
    if (heartbeat) {
      const stop = starting.then((gateway) => keepAlive(gateway.container)).catch(() => () => {});
      this.stopHeartbeat = () => void stop.then((clear) => clear());
    }
    this.starting = starting;
    return starting;
  }

  /** Starts the gateway with nothing allowed, so that a later open only re-points it. */
  prestart(): void {
    if (!this.starting) this.start([], true);
  }

  /** The gateway for `phase`, allowing `rules` only; started, or re-pointed and waited for. */
  async open(phase: string, rules: EgressRule[]): Promise<EgressGateway> {
    if (!this.starting) {
      this.phase = phase;
      return this.start(rules, true);
    }
    const gateway = await this.starting;
    await this.collect();
    this.phase = phase;
    await reconfigureGateway(gateway, rules, this.signal);
    return gateway;
  }

  /**
   * The box's own gateway, allowing `rules` only: the create's (if any) is collected and removed,
   * and a new one starts with the box's rules in its container configuration, so a restart of the
   * gateway (a reboot, `docker restart`) brings back the box's rules, never a phase's. It needs no
   * heartbeat: it runs as long as the box. It alone may carry credentials.
   */
  async openForBox(rules: EgressRule[], secrets: BoxGatewaySecrets = {}): Promise<EgressGateway> {
    await this.close();
    this.phase = 'box';
    this.seen = 0;
    return this.start(rules, false, secrets);
  }

  /** Reads what the gateway logged since the last call into `decisions`. */
  async collect(): Promise<void> {
    if (!this.starting) return;
    await this.starting;
    const entries = await readGatewayLog(this.sandboxId);
    for (const entry of entries.slice(this.seen)) this.decisions.push({ ...entry, phase: this.phase });
    this.seen = entries.length;
  }

  /** Resolves once a start in flight has finished either way (a cleanup must see what it made). */
  async settled(): Promise<void> {
    await this.starting?.catch(() => undefined);
  }

  /** Stops touching the gateway's heartbeat (a failed create: its cleanup removes the gateway). */
  stopKeepAlive(): void {
    this.stopHeartbeat();
  }

  /** Collects the last decisions and removes the gateway and its networks. */
  async close(): Promise<void> {
    this.stopHeartbeat();
    if (!this.starting) return;
    await this.collect().catch(() => undefined);
    await stopGateway(this.sandboxId);
    this.starting = undefined;
  }
}

/** What only a box's own gateway gets: the credentials it adds, and the CAs it trusts for them. */
export interface BoxGatewaySecrets {
  credentials?: readonly GatewayCredential[];
  upstreamCa?: string;
}

/** The clone's only destination: the repo's host. */
export function cloneRules(source: Extract<ParsedSource, { kind: 'url' }>): EgressRule[] {
  return [
    cloneEgressRule({
      host: source.host,
      scheme: source.scheme,
      ...(source.port ? { port: source.port } : {}),
    }),
  ];
}

/** The reason describeFailedDecisions gives for a request the gateway refused. */
export const GATEWAY_REFUSED = 'refused by the gateway (not on its list, or an address it blocks)';

/** Why the gateway did not carry a request, from squid's result (`TCP_DENIED/403`, `NONE_NONE/500`). */
function failureReason(result: string): string | undefined {
  const status = Number(/\/(\d{3})$/.exec(result)?.[1] ?? Number.NaN);
  if (/DENIED/.test(result) || status === 403) return GATEWAY_REFUSED;
  if (status === 503) return 'the gateway could not connect to it';
  if (status >= 500) return 'the gateway could not resolve or reach it';
  if (status === 0 || status >= 400) return `the gateway answered ${result}`;
  return undefined;
}

/**
 * The gateway's side of a failed phase, for its error: git and npm only see "CONNECT tunnel failed,
 * response 500", while the gateway knows it could not resolve the name or was told to refuse it.
 * Undefined when the gateway logged nothing that failed in that phase.
 */
export function describeFailedDecisions(
  decisions: readonly (GatewayLogEntry & { phase: string })[],
  phase: string,
): string | undefined {
  const reasons = new Map<string, string>();
  for (const entry of decisions) {
    const why = entry.phase === phase ? failureReason(entry.result) : undefined;
    if (why && !reasons.has(entry.destination)) reasons.set(entry.destination, why);
  }
  if (reasons.size === 0) return undefined;
  return [...reasons]
    .slice(0, 3)
    .map(([destination, why]) => `${destination}: ${why}`)
    .join('; ');
}

/** One line per row, for the create log: `install REFUSED example.com:443 (2x)`. */
export function describeSummaryRow(row: EgressSummaryRow): string {
  return `${row.phase} ${row.allowed ? 'allowed' : 'REFUSED'} ${row.destination}${row.count > 1 ? ` (${row.count}x)` : ''}`;
}

/** The box label that keeps what the clone and install reached (they are gone once the box runs). */
export const LABEL_EGRESS = 'ca.sandbox.egress';
const MAX_SUMMARY_ROWS = 100;

/** One row of the egress record: a destination a phase asked for, the decision, how often. */
export interface EgressSummaryRow {
  phase: string;
  destination: string;
  allowed: boolean;
  count: number;
  /** These requests got the credential of this domain from the gateway (`--credential`; never the value). */
  credential?: string;
}

/** Printable ASCII only, cut short: the destination is text the repo's scripts chose. */
function cleanDestination(text: string): string {
  const printable = text.replace(/[^\x21-\x7e]/g, '?');
  return printable.length > 200 ? `${printable.slice(0, 200)}...` : printable;
}

/** Aggregates decisions per phase, destination and outcome; refusals first, at most 100 rows. */
export function summariseDecisions(
  decisions: readonly (GatewayLogEntry & { phase: string })[],
): EgressSummaryRow[] {
  const rows = new Map<string, EgressSummaryRow>();
  for (const entry of decisions) {
    const destination = cleanDestination(entry.destination);
    const credential = entry.credential ? cleanDestination(entry.credential) : undefined;
    const key = `${entry.phase} ${entry.allowed} ${destination} ${credential ?? ''}`;
    const row = rows.get(key) ?? {
      phase: entry.phase,
      destination,
      allowed: entry.allowed,
      count: 0,
      ...(credential ? { credential } : {}),
    };
    row.count += 1;
    rows.set(key, row);
  }
  return [...rows.values()]
    .sort((a, b) => Number(a.allowed) - Number(b.allowed) || b.count - a.count)
    .slice(0, MAX_SUMMARY_ROWS);
}

/** Reads the egress record of a box's labels (an empty list when it has none). */
export function egressFromLabels(labels: Record<string, string>): EgressSummaryRow[] {
  try {
    const parsed = JSON.parse(labels[LABEL_EGRESS] ?? '[]') as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (row): row is EgressSummaryRow =>
        typeof row === 'object' &&
        row !== null &&
        typeof row.phase === 'string' &&
        typeof row.destination === 'string' &&
        typeof row.allowed === 'boolean' &&
        typeof row.count === 'number',
    );
  } catch {
    return [];
  }
}
