import { DockerResponseError, docker, labelArgs, sandboxLabels } from '@ca-sandbox/docker';
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
 * `--internal`: no route out, and no host address on its bridge, checked once made; the build or
 * box and the proxy meet there) or `outward` (a bridge with inter-container traffic off, on which
 * only the proxy sits). Returns its name.
 */
export async function createEgressNetwork(
  sandboxId: string,
  which: 'internal' | 'outward',
  labels: Record<string, string> = {},
): Promise<string> {
  const name = egressNames(sandboxId)[which];
  const flags = labelArgs({ ...labels, ...sandboxLabels(sandboxId) });
  const options =
    which === 'internal'
      ? [
          '--internal',
          // No address of the host on this bridge: a client's packets to the host's own addresses
          // would otherwise go up the host's INPUT chain, which --internal does not close (seen: a
          // build reached a listener on the host's LAN address and on docker0's).
          '--opt',
          `${INHIBIT_IPV4}=true`,
        ]
      : ['--opt', 'com.docker.network.bridge.enable_icc=false'];
  await docker(['network', 'create', '--driver', 'bridge', ...options, ...flags, '--', name]);
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

/**
 * The internal network as docker has it: it must be internal with no host address on its bridge,
 * or a client on it could reach the host. DockerResponseError otherwise.
 */
export async function assertInternalNetwork(name: string): Promise<void> {
  const { stdout } = await docker(['network', 'inspect', '--format', '{{json .}}', '--', name]);
  let parsed: { Internal?: boolean; Options?: Record<string, string> | null } = {};
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    // reported below
  }
  if (parsed.Internal !== true || parsed.Options?.[INHIBIT_IPV4] !== 'true') {
    throw new DockerResponseError(
      `docker network ${name} is not internal with no host address (Internal=${String(parsed.Internal)}, ${INHIBIT_IPV4}=${parsed.Options?.[INHIBIT_IPV4] ?? 'unset'})`,
    );
  }
}
