import { currentSettings, DEFAULT_GATEWAY_IMAGE } from '@ca-sandbox/config';
import { BOX_USER, DockerCommandError, engine, inspectContainer } from '@ca-sandbox/docker';
import {
  CREDENTIAL_CERTS_SCRIPT,
  CREDENTIAL_DOMAINS_ENV,
  CREDENTIALS_CONF_PATH,
  createEgressNetwork,
  type EgressRule,
  egressBlockedRanges,
  egressNames,
  GATEWAY_CA_PATH,
  GATEWAY_HOSTS_ENV,
  GATEWAY_HOSTS_PATH,
  GATEWAY_PORT,
  type GatewayConfigInput,
  type GatewayCredential,
  type GatewayHostPin,
  type GatewayLogEntry,
  parseGatewayHostPins,
  parseGatewayLog,
  renderCredentialSecrets,
  renderGatewayHosts,
  renderSquidConfig,
  UPSTREAM_CA_PATH,
} from '@ca-sandbox/network';
import { GatewayStartError, IsolationViolationError } from './errors.js';
import { HEARTBEAT_STALE_SECONDS, heartbeatWatch } from './heartbeat.js';
import { runContainer, verifyContainer } from './run-container.js';

export { DEFAULT_GATEWAY_IMAGE };

/** The variable that carries the squid configuration into the gateway (no mount, no copy-in). */
const CONFIG_ENV = 'CA_SANDBOX_SQUID_CONF';
/** Where squid reads it, on the gateway's tmpfs: rewritten from the variable at every start. */
const CONFIG_PATH = '/tmp/squid.conf';
const WRITE_CONFIG = `printf '%s\\n' "$${CONFIG_ENV}" > ${CONFIG_PATH} && printf '%s' "$${GATEWAY_HOSTS_ENV}" > ${GATEWAY_HOSTS_PATH}`;
const SQUID = `/usr/sbin/squid -N -f ${CONFIG_PATH}`;

/**
 * How much of its access log (stdout) one run of the gateway writes: a little under what the CLI
 * reads, so the line that says where it stopped is read too. The daemon keeps a container's
 * output in a root-owned file on the host that no box limit bounds, and a box decides how much
 * the gateway logs (a request per line, its URL as long as squid takes): without a cap, a box
 * could fill the host's disk through its gateway. The first entries are kept (an install or a
 * box cannot push what it reached out of its record by flooding afterwards).
 */
const ACCESS_LOG_CAP_BYTES = 16 * 1024 * 1024 - 64 * 1024;
/** squid's own diagnostics (stderr): start-up and warnings, some of them about box requests. */
const DIAGNOSTICS_CAP_BYTES = 1024 * 1024;
/**
 * The line the access log ends with once it reached its cap. A box cannot write it: every access
 * line starts with squid's timestamp, and a request line holds no newline.
 */
export const GATEWAY_LOG_CUT_LINE = 'ca-sandbox: gateway access log cut: later requests not recorded';
/** The fifo that carries squid's stderr to its cap (on the gateway's tmpfs, made at every start). */
const DIAGNOSTICS_FIFO = '/tmp/squid-diagnostics';

/**
 * What the daemon's json-file adds to each line it keeps: `{"log":"`, the newline as `\n`,
 * `","stream":"stdout","time":"<RFC 3339 with nanoseconds>"}` and its own newline (about 71
 * bytes), rounded up.
 */
const JSON_FILE_LINE_FRAMING = 80;

/**
 * An awk that passes its input through, line by line as it comes (the start-up wait reads squid's
 * ready line as soon as it is written: mawk, Debian's awk, reads a pipe in blocks unless
 * `-W interactive`, set in $AWK when this awk takes it; fflush for the others), until `cap`
 * bytes of the daemon's log file, then writes `cut` once and drops the rest. It keeps reading, so
 * squid never blocks or dies on a full pipe. A line costs what the json-file keeps of it, not its
 * length: the framing, and up to 6 bytes for each byte outside printable ASCII or among `"\<>&`
 * (an invalid UTF-8 byte is written `\ufffd`, `<` as `\u003c`): squid logs a URL's raw bytes, so a
 * box sending bytes 0xff grew the file six times past the cap.
 */
function capLines(cap: number, cut: string): string {
  const program = [
    '{ n += length($0) + 1 + framing + 5 * gsub(/[^ -~]|["\\\\<>&]/, "&")',
    'if (n <= cap) { print; fflush() } else if (!done) { print cut; fflush(); done = 1 } }',
  ].join('; ');
  return `$AWK -v cap=${cap} -v framing=${JSON_FILE_LINE_FRAMING} -v 'cut=${cut}' '${program}'`;
}

/**
 * squid with both of its outputs capped (see ACCESS_LOG_CAP_BYTES); `&` to run it in the
 * background, `logger=$!` then names the access log's awk, which lives exactly as long as squid's
 * stdout is open.
 */
function cappedSquid(background: '' | ' &'): string[] {
  return [
    `${WRITE_CONFIG} || exit 1`,
    "command -v awk >/dev/null || { echo 'ca-sandbox: the gateway image has no awk (it caps the log)' >&2; exit 1; }",
    "AWK=awk; awk -W interactive 'BEGIN { }' </dev/null >/dev/null 2>&1 && AWK='awk -W interactive'",
    `rm -f ${DIAGNOSTICS_FIFO}; mkfifo ${DIAGNOSTICS_FIFO} || exit 1`,
    `${capLines(DIAGNOSTICS_CAP_BYTES, 'ca-sandbox: squid diagnostics cut')} < ${DIAGNOSTICS_FIFO} >&2 &`,
    `${SQUID} 2>${DIAGNOSTICS_FIFO} | ${capLines(ACCESS_LOG_CAP_BYTES, GATEWAY_LOG_CUT_LINE)}${background}`,
  ];
}

/**
 * A box's gateway: squid, with its capped logs, for as long as the box lives (restarts included:
 * the container ends when squid does). A gateway with credentials first makes its certificates
 * (CREDENTIAL_CERTS_SCRIPT): a fresh CA at every start.
 */
function startCommand(credentials: boolean): string[] {
  const certs = credentials ? [CREDENTIAL_CERTS_SCRIPT] : [];
  return ['/bin/sh', '-c', [...certs, ...cappedSquid('')].join('\n')];
}
/**
 * A create's gateway (clone, install): squid runs beside a heartbeat watch (see heartbeat.ts) that
 * ends the container when the create that made it is gone (SIGKILL): an orphan's rules do not
 * stay open.
 */
const START_WATCHED_COMMAND = [
  '/bin/sh',
  '-c',
  [
    ...cappedSquid(' &'),
    'logger=$!',
    heartbeatWatch('kill -0 "$logger" 2>/dev/null'),
    // Leaving ends the container (this shell is its main process), squid and the awks with it.
  ].join('\n'),
  'ca-sbx-gateway',
  String(HEARTBEAT_STALE_SECONDS),
];
// `Accepting SSL bumped HTTP Socket connections` when the port terminates TLS (credentials).
// Anchored on squid's own line head: a diagnostic that quotes a box's text is never read as it.
const READY =
  /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d(\.\d+)?(\s+kid\d+)?\| Accepting (SSL bumped )?HTTP Socket connections at /;
const READY_TIMEOUT_MS = 15_000;

export interface GatewayOptions {
  sandboxId: string;
  /** Destinations let through; everything else, and every blocked range, is refused. */
  rules: readonly EgressRule[];
  /** Extra labels (e.g. a create's instance label, so its cleanup finds the gateway). */
  labels?: Record<string, string>;
  image?: string;
  signal?: AbortSignal;
  /**
   * A create's own gateway (clone, install): it stops unless the create touches its heartbeat
   * (keepAlive). A box's gateway (false, the default) runs as long as its box.
   */
  heartbeat?: boolean;
  /**
   * Headers the gateway adds to HTTPS requests for their domains (a box's gateway only): the
   * values reach the gateway by an exec's stdin, never by a variable, a label or a file.
   */
  credentials?: readonly GatewayCredential[];
  /** More CA certificates (PEM) the gateway trusts when it connects on to a credential domain. */
  upstreamCa?: string;
}

/** A running gateway: what a build or box on `network` sets as its proxy. */
export interface EgressGateway {
  container: string;
  /** The internal network (no route out) the client joins. */
  network: string;
  /** `http://<gateway address on the internal network>:3128`. */
  proxyUrl: string;
  /** Addresses refused after name resolution (fixed ranges plus the host's own). */
  blocked: string[];
  /** The names it resolves to fixed addresses (setting gatewayHosts, read when it started). */
  hostPins: GatewayHostPin[];
  /** With credentials: the PEM of its CA, which the box trusts (name-constrained to their domains). */
  credentialCa?: string;
}

/** The names the gateway resolves itself (setting gatewayHosts), parsed. */
export function gatewayHostPins(): GatewayHostPin[] {
  return parseGatewayHostPins(currentSettings().value('gatewayHosts') ?? []);
}

/** The gateway image in use: setting gatewayImage (file, env CA_SANDBOX_GATEWAY_IMAGE), else the seeded one. */
export function gatewayImage(): string {
  return currentSettings().value('gatewayImage') ?? DEFAULT_GATEWAY_IMAGE;
}

/**
 * Starts a sandbox's egress gateway: two labeled networks, then Debian's squid in a container of
 * role `gateway` (the same hardening as every box: non-root, no capabilities, read-only root, no
 * volume), attached to the outward network, then connected to the internal one, re-verified, and
 * waited for until squid accepts connections. On any failure what was made is left for the caller's
 * label-based cleanup (the networks and container carry the sandbox's labels).
 */
export async function startGateway(options: GatewayOptions): Promise<EgressGateway> {
  const names = egressNames(options.sandboxId);
  const labels = options.labels ?? {};
  const blocked = egressBlockedRanges();
  const hostPins = gatewayHostPins();
  const credentials = options.credentials ?? [];
  if (credentials.length > 0 && options.heartbeat)
    throw new GatewayStartError(names.gateway, "credentials are for a box's own gateway only");
  // Checked before anything starts: a value squid could not take is a usage error, not a dead gateway.
  const secrets = renderCredentialSecrets(credentials);
  const config: GatewayConfigInput = {
    rules: options.rules,
    blocked,
    hostsFile: hostPins.length > 0,
    ...(credentials.length
      ? { credentials: credentials.map(({ domain, header }) => ({ domain, header })) }
      : {}),
  };
  // The proxy starts on the outward network while the internal one is made and checked: it joins
  // that one only once docker says it is internal with no host address.
  const internal = createEgressNetwork(options.sandboxId, 'internal', labels);
  internal.catch(() => undefined);
  const outward = await createEgressNetwork(options.sandboxId, 'outward', labels);
  await runContainer({
    sandboxId: options.sandboxId,
    name: names.gateway,
    image: options.image ?? gatewayImage(),
    role: 'gateway',
    network: outward,
    extraNetworks: [names.internal],
    memory: '256m',
    cpus: 1,
    pidsLimit: 128,
    tmpfsSize: '64m',
    env: {
      [CONFIG_ENV]: renderSquidConfig(config),
      [GATEWAY_HOSTS_ENV]: renderGatewayHosts(hostPins),
      ...(credentials.length
        ? { [CREDENTIAL_DOMAINS_ENV]: [...new Set(credentials.map((each) => each.domain))].join(' ') }
        : {}),
    },
    labels,
    command: options.heartbeat ? START_WATCHED_COMMAND : startCommand(credentials.length > 0),
  });
  await engine.network.connect(await internal, names.gateway);
  const report = await verifyContainer(names.gateway);
  if (!report.ok) {
    throw new IsolationViolationError(
      names.gateway,
      report.checks.filter((check) => !check.pass),
    );
  }
  await waitUntilReady(names.gateway, undefined, options.signal);
  const credentialCa = credentials.length
    ? await deliverCredentials(names.gateway, secrets, options.upstreamCa ?? '', options.signal)
    : undefined;
  const inspect = await inspectContainer(names.gateway);
  const address = inspect?.NetworkSettings.Networks[names.internal]?.IPAddress;
  if (!address) throw new GatewayStartError(names.gateway, 'it has no address on the internal network');
  return {
    container: names.gateway,
    network: names.internal,
    proxyUrl: `http://${address}:${GATEWAY_PORT}`,
    blocked,
    hostPins,
    ...(credentialCa ? { credentialCa } : {}),
  };
}

/**
 * A gateway that was started again (a reboot, `docker start`): waits until squid listens (from
 * the container's own start), then hands it the credentials again (deliverCredentials): its
 * restart made a new CA and an empty values' file. Returns the new CA.
 */
export async function restoreCredentials(
  container: string,
  credentials: readonly GatewayCredential[],
  upstreamCa: string,
): Promise<string> {
  const inspect = await inspectContainer(container);
  const started = inspect?.State.StartedAt ? new Date(inspect.State.StartedAt) : undefined;
  await waitUntilReady(container, started && !Number.isNaN(started.getTime()) ? started : undefined);
  return deliverCredentials(container, renderCredentialSecrets(credentials), upstreamCa);
}

/** What a TLS handshake from the gateway to an upstream said of its certificate. */
export type UpstreamTrust = { verified: true } | { verified: false; reason: string } | { unknown: string };

/** openssl's verify reason: its own fixed words, bounded (the certificate's names never appear). */
const VERIFY_LINE = /^Verify return code: (\d+) \(([A-Za-z0-9 ,.'-]{1,120})\)$/m;

/**
 * openssl's verify codes for a chain no trusted CA vouches for (unable to get the issuer's
 * certificate, locally or at all; self-signed, alone or in the chain; the leaf unverifiable; not
 * trusted): a missing CA. An expired certificate or a clock off is another matter, said nothing of.
 */
const UNKNOWN_SIGNER_CODES = new Set(['2', '18', '19', '20', '21', '27']);

/**
 * Whether `host:port` presents a certificate that the system's CAs plus `extraCa` (PEM; '' none)
 * vouch for: one TLS handshake from the gateway itself, where the install's traffic leaves, so a
 * TLS-intercepting proxy on the way is seen as the install sees it (squid's own name pins are the
 * caller's to check: the probe resolves as the gateway's system does). `unknown` when no handshake
 * completed (no route, a refused port, the 5 s limit). Host and port go as arguments, never as shell.
 */
export async function probeUpstreamTrust(
  container: string,
  host: string,
  port: number,
  extraCa: string,
  signal?: AbortSignal,
): Promise<UpstreamTrust> {
  // An IPv6 literal is bracketed for -connect; an address has no name to send (-servername).
  // (No node:net here: the engine boundary keeps network APIs out of this package.)
  const literal = host.includes(':') || /^[0-9.]+$/.test(host);
  const connect = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const script = [
    'trust=/tmp/ca-sbx-trust-probe.pem',
    'cat /etc/ssl/certs/ca-certificates.crt - > "$trust" || exit 3',
    `timeout 5 openssl s_client -connect "$1" ${literal ? '' : '-servername "$2" '}-verify_return_error -CAfile "$trust" < /dev/null 2>&1 | grep -m 1 "^Verify return code"`,
    'rm -f "$trust"',
  ].join('\n');
  const probe = await engine.exec.internal(
    container,
    ['/bin/sh', '-c', script, 'ca-sbx-trust-probe', connect, host],
    {
      user: BOX_USER,
      stdin: true,
      input: extraCa ? `\n${extraCa}\n` : '',
      timeoutMs: 10_000,
      ...(signal ? { signal } : {}),
    },
  );
  const match = VERIFY_LINE.exec(probe.stdout);
  if (!match) return { unknown: probe.exitCode === 0 ? 'no verify line' : `exit ${probe.exitCode}` };
  if (match[1] === '0') return { verified: true };
  return UNKNOWN_SIGNER_CODES.has(match[1] ?? '')
    ? { verified: false, reason: match[2] ?? '' }
    : { unknown: `verify code ${match[1]} (${match[2]})` };
}

/**
 * The CA certificate (PEM) of a running gateway with credentials, and whether it holds their values
 * (a gateway restarted since the create or the last `start` has an empty values' file).
 */
export async function readGatewayCa(container: string): Promise<{ ca: string; loaded: boolean }> {
  const script = `cat ${GATEWAY_CA_PATH} && if [ -s ${CREDENTIALS_CONF_PATH} ]; then echo ca-sandbox:loaded; fi`;
  const read = await engine.exec.internal(container, ['/bin/sh', '-c', script], {
    user: BOX_USER,
    timeoutMs: 15_000,
  });
  if (read.exitCode !== 0 || !read.stdout.includes('BEGIN CERTIFICATE'))
    throw new GatewayStartError(container, `its CA is unreadable: ${read.stderr.slice(0, 200)}`);
  const loaded = read.stdout.includes('ca-sandbox:loaded');
  return { ca: read.stdout.replace('ca-sandbox:loaded\n', ''), loaded };
}

/**
 * Hands a started gateway its credentials and has squid re-read them: the values go through an
 * exec's stdin (an exec's command and variables are kept in its inspect; its input is not) into
 * the gateway's tmpfs, mode 600, and the user's CAs are appended to the ones it trusts upstream.
 * Returns the gateway's CA certificate (PEM). Also what `start` calls after a gateway restart,
 * which made a new CA and lost the values.
 */
export async function deliverCredentials(
  container: string,
  secrets: string,
  upstreamCa: string,
  signal?: AbortSignal,
): Promise<string> {
  const since = new Date(Date.now() - 1);
  const run = (script: string, input: string) =>
    engine.exec.internal(container, ['/bin/sh', '-c', script], {
      user: BOX_USER,
      stdin: true,
      input,
      timeoutMs: 15_000,
      ...(signal ? { signal } : {}),
    });
  if (upstreamCa.trim()) {
    const added = await run(`cat >> ${UPSTREAM_CA_PATH}`, `\n${upstreamCa}\n`);
    if (added.exitCode !== 0)
      throw new GatewayStartError(container, `its upstream CAs: ${added.stderr.slice(0, 200)}`);
  }
  const script = [
    `umask 077; cat > ${CREDENTIALS_CONF_PATH}.new && mv ${CREDENTIALS_CONF_PATH}.new ${CREDENTIALS_CONF_PATH}`,
    `/usr/sbin/squid -k reconfigure -f ${CONFIG_PATH} && cat ${GATEWAY_CA_PATH}`,
  ].join(' && ');
  const delivered = await run(script, secrets);
  // Never squid's words here: a line it refuses is quoted in its error, the value with it.
  if (delivered.exitCode !== 0 || !delivered.stdout.includes('BEGIN CERTIFICATE'))
    throw new GatewayStartError(container, `squid refused its credentials file (exit ${delivered.exitCode})`);
  await waitUntilReady(container, since, signal);
  return delivered.stdout;
}

/**
 * Waits until squid says it accepts connections in a log line written at or after `since` (the
 * daemon's time; undefined: from the start). One `docker logs --follow` stream, not a poll: the
 * line is seen as soon as squid writes it, and the stream ends if the container stops.
 */
async function waitUntilReady(
  container: string,
  since: Date | undefined,
  signal?: AbortSignal,
): Promise<void> {
  const follow = engine.container.follow(container, since ? { since } : {});
  let last = '';
  let pending = '';
  let outcome: 'ready' | 'timeout' | 'aborted' | undefined;
  let timer: NodeJS.Timeout | undefined;
  const abort = () => settle?.('aborted');
  let settle: ((why: 'ready' | 'timeout' | 'aborted') => void) | undefined;
  await new Promise<void>((resolve) => {
    settle = (why) => {
      outcome ??= why;
      resolve();
    };
    follow.stderr?.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString('utf8')).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim()) last = line;
        if (READY.test(line)) settle?.('ready');
      }
    });
    follow.stdout?.resume();
    timer = setTimeout(() => settle?.('timeout'), READY_TIMEOUT_MS);
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) abort();
    // The stream ends when the container stops: outcome stays undefined.
    void follow.then(() => resolve());
  });
  clearTimeout(timer);
  signal?.removeEventListener('abort', abort);
  follow.kill();
  await follow;
  if (outcome === 'ready') return;
  if (outcome === 'aborted') throw new GatewayStartError(container, 'the create was aborted');
  if (outcome === 'timeout')
    throw new GatewayStartError(
      container,
      `squid did not accept connections within 15 s: ${last.slice(0, 200)}`,
    );
  // The stream ended: the container stopped (or is gone).
  throw new GatewayStartError(container, `squid exited: ${(last || pending).slice(0, 200)}`);
}

/**
 * Points a running gateway at other destinations: rewrites squid's configuration in place and has
 * it re-read (`squid -k reconfigure`), then waits until squid listens again, so the next phase's
 * first connection is never refused by a reload in progress.
 */
export async function reconfigureGateway(
  gateway: EgressGateway,
  rules: readonly EgressRule[],
  signal?: AbortSignal,
): Promise<void> {
  // The daemon's clock is this host's: a line squid writes after the exec below is at or after it.
  const since = new Date(Date.now() - 1);
  const reload = await engine.exec.run(
    gateway.container,
    {
      cmd: ['/bin/sh', '-c', `${WRITE_CONFIG} && /usr/sbin/squid -k reconfigure -f ${CONFIG_PATH}`],
      user: BOX_USER,
      env: [
        `${CONFIG_ENV}=${renderSquidConfig({ rules, blocked: gateway.blocked, hostsFile: gateway.hostPins.length > 0 })}`,
      ],
    },
    { timeoutMs: 15_000 },
  );
  if (reload.exitCode !== 0) throw new DockerCommandError(['exec'], reload.exitCode, reload.stderr);
  await waitUntilReady(gateway.container, since, signal);
}

/**
 * Whether a sandbox's gateway enforces exactly `rules` with `blocked` refused: the configuration
 * squid runs with (its live file, read by an internal exec; a restart rewrites it from the
 * container's own variable, a reconfigure from an exec's) compared with the one they render.
 */
export async function gatewayConfigMatches(
  sandboxId: string,
  expectedConfig: GatewayConfigInput,
): Promise<{ ok: boolean; seen: string }> {
  const { gateway } = egressNames(sandboxId);
  const readConfig = () =>
    engine.exec
      .internal(gateway, ['/bin/cat', CONFIG_PATH], { user: BOX_USER, timeoutMs: 15_000 })
      .catch((error: Error) => ({ exitCode: -1, stdout: '', stderr: error.message }));
  let read = await readConfig();
  // A gateway started a moment ago writes its file first thing: give it that moment.
  for (let attempt = 0; attempt < 10 && read.exitCode !== 0; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    read = await readConfig();
  }
  if (read.exitCode !== 0) return { ok: false, seen: `${CONFIG_PATH} unreadable` };
  const expected = renderSquidConfig(expectedConfig).trimEnd();
  const live = read.stdout.trimEnd();
  if (live === expected) return { ok: true, seen: 'the rules of the box' };
  const expectedLines = new Set(expected.split('\n'));
  const liveLines = new Set(live.split('\n'));
  const missing = [...expectedLines].filter((line) => !liveLines.has(line)).length;
  const extra = [...liveLines].filter((line) => !expectedLines.has(line)).length;
  return { ok: false, seen: `other rules: ${missing} line(s) missing, ${extra} line(s) not of the box` };
}

/**
 * How much of a gateway's log is read: about 100,000 requests. A box (or an install) that floods
 * the gateway with requests makes its log grow without bound; reading all of it could exhaust the
 * CLI's memory, and past node's longest string the read failed and the record came back empty.
 */
export const GATEWAY_LOG_MAX_BYTES = 16 * 1024 * 1024;

/**
 * The destination of the entry that says the record stops short (see gatewayLogEntries). No
 * space: a summary shows destinations as printable text without blanks (box text cannot fake a
 * column), so this one is written that way.
 */
export const GATEWAY_LOG_CUT = `(gateway-log-cut-at-${GATEWAY_LOG_MAX_BYTES / 1024 / 1024}MiB:later-requests-not-recorded)`;

/**
 * The entries of a log read. A log the gateway cut (its GATEWAY_LOG_CUT_LINE) or the read cut at
 * its cap (losing the last, partial line; a gateway of an older version caps nothing) ends with an
 * entry that says so: a refusal, so it sorts first in a summary and is never read as a place the
 * box reached, timed now, so that no filter by time (egressLog's, since the box started) drops it.
 */
export function gatewayLogEntries(text: string, truncated: boolean): GatewayLogEntry[] {
  const cutByGateway = text.split('\n').includes(GATEWAY_LOG_CUT_LINE);
  if (!truncated && !cutByGateway) return parseGatewayLog(text);
  const entries = parseGatewayLog(truncated ? text.slice(0, text.lastIndexOf('\n') + 1) : text);
  const cut = { time: new Date().toISOString(), allowed: false, result: 'LOG_CUT', method: '-' };
  return [...entries, { ...cut, destination: GATEWAY_LOG_CUT }];
}

/** What the gateway decided so far (its access log, at most GATEWAY_LOG_MAX_BYTES), oldest first. */
export async function readGatewayLog(sandboxId: string): Promise<GatewayLogEntry[]> {
  const { gateway } = egressNames(sandboxId);
  const logs = await engine.container
    .logs(gateway, { maxBytes: GATEWAY_LOG_MAX_BYTES })
    .catch(() => undefined);
  return logs ? gatewayLogEntries(logs.stdout, logs.truncated) : [];
}

/** Removes a sandbox's gateway container and both its networks; absent objects are fine. */
export async function stopGateway(sandboxId: string): Promise<void> {
  const names = egressNames(sandboxId);
  await engine.container.remove(names.gateway, { force: true }).catch(() => false);
  await Promise.all([
    engine.network.remove(names.internal).catch(() => false),
    engine.network.remove(names.outward).catch(() => false),
  ]);
}
