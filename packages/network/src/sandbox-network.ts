import {
  DockerResponseError,
  engine,
  LABEL_ID,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
  sandboxLabels,
} from '@ca-sandbox/docker';
import { z } from 'zod';
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
  const made = await engine.network.create(name, {
    driver: 'bridge',
    labels: { ...extra, ...sandboxLabels(sandboxId) },
    options: { [BRIDGE_OPTION]: bridge, 'com.docker.network.bridge.enable_icc': 'false' },
  });
  const config = made.IPAM.Config[0];
  if (!config?.Subnet || !config.Gateway || made.Options[BRIDGE_OPTION] !== bridge) {
    await engine.network.remove(name).catch(() => false);
    throw new DockerResponseError(
      `docker network ${name} came up without a subnet, gateway or bridge ${bridge}`,
    );
  }
  return { name, bridge, subnet: config.Subnet, gateway: config.Gateway };
}

/** Names of the networks labeled for `sandboxId`. */
export async function listSandboxNetworks(sandboxId: string): Promise<string[]> {
  assertSandboxId(sandboxId);
  const listed = await engine.network.list({
    labels: [`${SANDBOX_LABEL}=${SANDBOX_LABEL_VALUE}`, `${LABEL_ID}=${sandboxId}`],
  });
  return listed.map((network) => network.name);
}

/**
 * Removes every network labeled for `sandboxId`. A network that still has a container attached
 * fails (reported in `failures`): remove the box first.
 */
export async function removeSandboxNetworks(sandboxId: string): Promise<NetworkRemovalResult> {
  const result: NetworkRemovalResult = { removed: [], failures: [] };
  for (const name of await listSandboxNetworks(sandboxId)) {
    try {
      await engine.network.remove(name); // false: already gone, which is removed too
      result.removed.push(name);
    } catch (error) {
      result.failures.push({
        kind: 'network',
        name,
        exitCode: (error as { exitCode?: number }).exitCode ?? 1,
        message: String((error as { stderr?: unknown }).stderr ?? (error as Error).message)
          .trim()
          .slice(0, 500),
      });
    }
  }
  return result;
}
