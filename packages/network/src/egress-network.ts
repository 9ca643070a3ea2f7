import { DockerResponseError, engine, sandboxLabels } from '@ca-sandbox/docker';
import { assertSandboxId } from './names.js';

/**
 * Names of a sandbox's egress gateway objects. They start with `ca-sbx.` where every box, helper,
 * volume and allowlist network starts with `ca-sbx-`, so no sandbox id can ever produce one of
 * them (ids have no upper case and these are prefixed differently).
 */
export function egressNames(sandboxId: string): { gateway: string; internal: string; outward: string } {
  assertSandboxId(sandboxId);
  return {
    gateway: `ca-sbx.gw.${sandboxId}`,
    internal: `ca-sbx.egress.${sandboxId}`,
    outward: `ca-sbx.out.${sandboxId}`,
  };
}

const INHIBIT_IPV4 = 'com.docker.network.bridge.inhibit_ipv4';

/**
 * Creates one network of an egress gateway, labeled for the sandbox: `internal` (docker
 * `--internal`: no route out, no host address on its bridge and no IPv6, checked once made; the build or
 * box and the proxy meet there) or `outward` (a bridge with inter-container traffic off, on which
 * only the proxy sits). Returns its name.
 */
export async function createEgressNetwork(
  sandboxId: string,
  which: 'internal' | 'outward',
  labels: Record<string, string> = {},
): Promise<string> {
  const name = egressNames(sandboxId)[which];
  await engine.network.create(name, {
    driver: 'bridge',
    labels: { ...labels, ...sandboxLabels(sandboxId) },
    ...(which === 'internal'
      ? {
          internal: true,
          // No IPv6 on it at all: an IPv6 address would give the client a path (and the embedded
          // resolver a family) that the gate does not cover.
          enableIPv6: false,
          // No address of the host on this bridge: a client's packets to the host's own addresses
          // would otherwise go up the host's INPUT chain, which Internal does not close (seen: a
          // build reached a listener on the host's LAN address and on docker0's).
          options: { [INHIBIT_IPV4]: 'true' },
        }
      : { options: { 'com.docker.network.bridge.enable_icc': 'false' } }),
  });
  if (which === 'internal') await assertInternalNetwork(name);
  return name;
}

/** Both networks of an egress gateway (see createEgressNetwork), made side by side. */
export async function createEgressNetworks(
  sandboxId: string,
  labels: Record<string, string> = {},
): Promise<{ internal: string; outward: string }> {
  const [internal, outward] = await Promise.all([
    createEgressNetwork(sandboxId, 'internal', labels),
    createEgressNetwork(sandboxId, 'outward', labels),
  ]);
  return { internal, outward };
}

/** What `docker network inspect` says of a network, as far as the internal-network gate reads it. */
export interface InternalNetworkInspect {
  Internal?: boolean;
  EnableIPv6?: boolean;
  Options?: Record<string, string> | null;
}

/**
 * Why a network is not a safe internal network (empty when it is): it must be internal, carry no
 * host address on its bridge, and have IPv6 off.
 */
export function internalNetworkProblems(network: InternalNetworkInspect): string[] {
  const problems: string[] = [];
  if (network.Internal !== true) problems.push(`Internal=${String(network.Internal)}`);
  if (network.Options?.[INHIBIT_IPV4] !== 'true')
    problems.push(`${INHIBIT_IPV4}=${network.Options?.[INHIBIT_IPV4] ?? 'unset'}`);
  if (network.EnableIPv6 !== false) problems.push(`EnableIPv6=${String(network.EnableIPv6)}`);
  return problems;
}

/**
 * The internal network as docker has it: internal, no host address on its bridge and no IPv6, or
 * a client on it could reach the host. DockerResponseError otherwise.
 */
export async function assertInternalNetwork(name: string): Promise<void> {
  const parsed: InternalNetworkInspect = await engine.network.inspect(name);
  const problems = internalNetworkProblems(parsed);
  if (problems.length > 0) {
    throw new DockerResponseError(
      `docker network ${name} is not internal with no host address and no IPv6 (${problems.join(', ')})`,
    );
  }
}
