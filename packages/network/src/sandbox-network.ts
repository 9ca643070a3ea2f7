import {
  DockerResponseError,
  docker,
  labelArgs,
  SANDBOX_FILTER,
  sandboxIdFilter,
  sandboxLabels,
} from '@ca-sandbox/docker';
import { z } from 'zod';
import { parseJson } from './_utils.js';
import { InvalidNetworkLabelsError } from './errors.js';
import { assertSandboxId, bridgeName, sandboxNetworkName } from './names.js';

export const BRIDGE_OPTION = 'com.docker.network.bridge.name';

/** A per-sandbox docker bridge network, with the host interface name firewall rules target. */
export interface SandboxNetwork {
  name: string;
  bridge: string;
  subnet: string;
  gateway: string;
}

export interface NetworkRemovalResult {
  removed: string[];
  failures: { kind: 'network' | 'firewall'; name: string; exitCode: number; message: string }[];
}

const LabelsSchema = z.record(z.string().regex(/^[a-z0-9][a-z0-9._-]{0,127}$/i), z.string().max(1024));

const IpamSchema = z.object({
  IPAM: z.object({
    Config: z.array(z.object({ Subnet: z.string().optional(), Gateway: z.string().optional() })).nullable(),
  }),
  Options: z.record(z.string(), z.string()).nullable().optional(),
});

/**
 * Creates the docker bridge network `ca-sbx-<id>` for an allowlist sandbox: labeled
 * `ca.sandbox=1`, `ca.sandbox.id=<id>` (plus `labels`, which cannot override those two), host bridge
 * interface `bridgeName(id)`, inter-container traffic off. Egress is NOT limited until
 * applyAllowlist runs.
 */
export async function createSandboxNetwork(
  sandboxId: string,
  labels: Record<string, string> = {},
): Promise<SandboxNetwork> {
  assertSandboxId(sandboxId);
  const parsedLabels = LabelsSchema.safeParse(labels);
  if (!parsedLabels.success) {
    throw new InvalidNetworkLabelsError(
      'invalid network labels: keys must be [a-z0-9][a-z0-9._-]*, values strings up to 1024 chars',
    );
  }
  const extra = parsedLabels.data;
  const name = sandboxNetworkName(sandboxId);
  const bridge = bridgeName(sandboxId);
  await docker([
    'network',
    'create',
    '--driver',
    'bridge',
    ...labelArgs({ ...extra, ...sandboxLabels(sandboxId) }),
    '--opt',
    `${BRIDGE_OPTION}=${bridge}`,
    '--opt',
    'com.docker.network.bridge.enable_icc=false',
    '--',
    name,
  ]);
  const { stdout } = await docker(['network', 'inspect', '--format', '{{json .}}', '--', name]);
  const parsed = IpamSchema.safeParse(parseJson(stdout));
  const config = parsed.success ? parsed.data.IPAM.Config?.[0] : undefined;
  if (
    !parsed.success ||
    !config?.Subnet ||
    !config.Gateway ||
    parsed.data.Options?.[BRIDGE_OPTION] !== bridge
  ) {
    await docker(['network', 'rm', '--', name], { allowFailure: true });
    throw new DockerResponseError(
      `docker network ${name} came up without a subnet, gateway or bridge ${bridge}`,
    );
  }
  return { name, bridge, subnet: config.Subnet, gateway: config.Gateway };
}

/** Names of the networks labeled for `sandboxId`. */
export async function listSandboxNetworks(sandboxId: string): Promise<string[]> {
  assertSandboxId(sandboxId);
  const { stdout } = await docker([
    'network',
    'ls',
    '--filter',
    SANDBOX_FILTER,
    '--filter',
    sandboxIdFilter(sandboxId),
    '--format',
    '{{.Name}}',
  ]);
  return stdout.split('\n').filter(Boolean);
}

/**
 * Removes every network labeled for `sandboxId`. A network that still has a container attached
 * fails (reported in `failures`): remove the box first.
 */
export async function removeSandboxNetworks(sandboxId: string): Promise<NetworkRemovalResult> {
  const result: NetworkRemovalResult = { removed: [], failures: [] };
  for (const name of await listSandboxNetworks(sandboxId)) {
    const outcome = await docker(['network', 'rm', '--', name], { allowFailure: true });
    if (outcome.exitCode === 0 || /not found/i.test(outcome.stderr)) result.removed.push(name);
    else
      result.failures.push({
        kind: 'network',
        name,
        exitCode: outcome.exitCode,
        message: outcome.stderr.trim().slice(0, 500),
      });
  }
  return result;
}
