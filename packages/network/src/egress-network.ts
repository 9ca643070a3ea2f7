import { docker, labelArgs, sandboxLabels } from '@ca-sandbox/docker';
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

/**
 * Creates the two networks of an egress gateway: `internal` (docker `--internal`: no route out, no
 * gateway address; the build or box and the proxy meet there) and `outward` (a bridge with
 * inter-container traffic off, on which only the proxy sits). Both are labeled for the sandbox.
 */
export async function createEgressNetworks(
  sandboxId: string,
  labels: Record<string, string> = {},
): Promise<{ internal: string; outward: string }> {
  const names = egressNames(sandboxId);
  const flags = labelArgs({ ...labels, ...sandboxLabels(sandboxId) });
  await Promise.all([
    docker(['network', 'create', '--driver', 'bridge', '--internal', ...flags, '--', names.internal]),
    docker([
      'network',
      'create',
      '--driver',
      'bridge',
      '--opt',
      'com.docker.network.bridge.enable_icc=false',
      ...flags,
      '--',
      names.outward,
    ]),
  ]);
  return { internal: names.internal, outward: names.outward };
}
