import { BOX_USER, docker, inspectContainer, spawnDocker } from '@ca-sandbox/docker';
import {
  createEgressNetwork,
  type EgressRule,
  egressBlockedRanges,
  egressNames,
  GATEWAY_PORT,
  type GatewayLogEntry,
  parseGatewayLog,
  renderSquidConfig,
} from '@ca-sandbox/network';
import { GatewayStartError, IsolationViolationError } from './errors.js';
import { runContainer, verifyContainer } from './run-container.js';

/** The local image with Debian's squid (scripts/seed-images.sh); env CA_SANDBOX_GATEWAY_IMAGE overrides. */
export const DEFAULT_GATEWAY_IMAGE = 'ca-sbx-base:gateway';
export const GATEWAY_IMAGE_ENV = 'CA_SANDBOX_GATEWAY_IMAGE';

/** The variable that carries the squid configuration into the gateway (no mount, no copy-in). */
const CONFIG_ENV = 'CA_SANDBOX_SQUID_CONF';
const START_COMMAND = [
  '/bin/sh',
  '-c',
  `printf '%s\\n' "$${CONFIG_ENV}" > /tmp/squid.conf && exec /usr/sbin/squid -N -f /tmp/squid.conf`,
];
const READY = /Accepting HTTP Socket connections/;
const READY_TIMEOUT_MS = 15_000;

export interface GatewayOptions {
  sandboxId: string;
  /** Destinations let through; everything else, and every blocked range, is refused. */
  rules: readonly EgressRule[];
  /** Extra labels (e.g. a create's instance label, so its cleanup finds the gateway). */
  labels?: Record<string, string>;
  image?: string;
  signal?: AbortSignal;
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
}

/**
 * Starts a sandbox's egress gateway: two labeled networks, then Debian's squid in a container of
 * role `gateway` (the same hardening as every box: non-root, no capabilities, read-only root, no
 * volume), attached to the outward network, then connected to the internal one, re-verified, and
 * waited for until squid accepts connections. On any failure what was made is left for the caller's
 * label-based cleanup (the networks and container carry the sandbox's labels).
 */
/** The gateway image in use: env CA_SANDBOX_GATEWAY_IMAGE, else the seeded local image. */
export function gatewayImage(): string {
  return process.env[GATEWAY_IMAGE_ENV] || DEFAULT_GATEWAY_IMAGE;
}

export async function startGateway(options: GatewayOptions): Promise<EgressGateway> {
  const names = egressNames(options.sandboxId);
  const labels = options.labels ?? {};
  const blocked = egressBlockedRanges();
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
    env: { [CONFIG_ENV]: renderSquidConfig({ rules: options.rules, blocked }) },
    labels,
    command: START_COMMAND,
  });
  await docker(['network', 'connect', '--', await internal, names.gateway]);
  const report = await verifyContainer(names.gateway);
  if (!report.ok) {
    throw new IsolationViolationError(
      names.gateway,
      report.checks.filter((check) => !check.pass),
    );
  }
  await waitUntilReady(names.gateway, undefined, options.signal);
  const inspect = await inspectContainer(names.gateway);
  const address = inspect?.NetworkSettings.Networks[names.internal]?.IPAddress;
  if (!address) throw new GatewayStartError(names.gateway, 'it has no address on the internal network');
  return {
    container: names.gateway,
    network: names.internal,
    proxyUrl: `http://${address}:${GATEWAY_PORT}`,
    blocked,
  };
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
  const follow = spawnDocker([
    'logs',
    '--follow',
    ...(since ? ['--since', since.toISOString()] : []),
    '--',
    container,
  ]);
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
  await docker(
    [
      'exec',
      '--user',
      BOX_USER,
      '--env',
      `${CONFIG_ENV}=${renderSquidConfig({ rules, blocked: gateway.blocked })}`,
      '--',
      gateway.container,
      '/bin/sh',
      '-c',
      `printf '%s\\n' "$${CONFIG_ENV}" > /tmp/squid.conf && /usr/sbin/squid -k reconfigure -f /tmp/squid.conf`,
    ],
    { timeoutMs: 15_000 },
  );
  await waitUntilReady(gateway.container, since, signal);
}

/** What the gateway decided so far (its access log), oldest first. */
export async function readGatewayLog(sandboxId: string): Promise<GatewayLogEntry[]> {
  const { gateway } = egressNames(sandboxId);
  const logs = await docker(['logs', '--', gateway], { allowFailure: true });
  return logs.exitCode === 0 ? parseGatewayLog(logs.stdout) : [];
}

/** Removes a sandbox's gateway container and both its networks; absent objects are fine. */
export async function stopGateway(sandboxId: string): Promise<void> {
  const names = egressNames(sandboxId);
  await docker(['rm', '--force', '--', names.gateway], { allowFailure: true });
  await Promise.all([
    docker(['network', 'rm', '--', names.internal], { allowFailure: true }),
    docker(['network', 'rm', '--', names.outward], { allowFailure: true }),
  ]);
}
