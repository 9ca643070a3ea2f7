import { dockerInfo, imageExists, SANDBOX_FILTER, sandboxIdFilter } from '@ca-sandbox/docker';
import { assertFirewallUsable } from '@ca-sandbox/network';
import { GatewayImageMissingError, gatewayImage, RuntimeUnavailableError } from '@ca-sandbox/run';
import { listIds } from '../_utils.js';
import { HelperImageMissingError, SandboxExistsError } from '../errors.js';
import { fitToEngine } from '../limits.js';
import { chooseRuntime } from '../runtime-choice.js';
import type { CreateContext } from './context.js';

/**
 * Before anything is made: the engine answers and can give the limits and the runtime, the helper
 * (and, when needed, gateway) images exist, the firewall works for an allowlist, and no sandbox of
 * this id exists. Fits ctx.limits and chooses ctx.runtime.
 */
export async function preflight(ctx: CreateContext): Promise<string> {
  const { options } = ctx;
  const info = await dockerInfo();
  ctx.limits = fitToEngine(ctx.limits, options.chosen, info);
  if (options.runtime !== 'runc' && !info.runtimes.includes(options.runtime)) {
    throw new RuntimeUnavailableError(options.runtime, info.runtimes);
  }
  const choice = chooseRuntime(options, info);
  ctx.runtime = choice.runtime;
  if (choice.notice) ctx.progress.notice(choice.notice);
  if (!(await imageExists(options.helperImage))) throw new HelperImageMissingError(options.helperImage);
  if (ctx.needsGateway() && !(await imageExists(gatewayImage())))
    throw new GatewayImageMissingError(gatewayImage());
  if (options.policy === 'allowlist' && options.allowVia === 'firewall') await assertFirewallUsable();
  const filters = [SANDBOX_FILTER, sandboxIdFilter(ctx.id)];
  const [containers, volumes] = await Promise.all([
    listIds('container', filters),
    listIds('volume', filters),
  ]);
  if (containers.length > 0 || volumes.length > 0) throw new SandboxExistsError(ctx.id);
  return `docker ${info.serverVersion}`;
}
