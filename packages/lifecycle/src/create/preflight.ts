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
 * this id exists. Fits ctx.limits and chooses ctx.runtime. The engine's answers are asked for at
 * once (each is one round trip on the socket) and judged in this order, so the first failure said
 * is the one a sequential check would say.
 */
export async function preflight(ctx: CreateContext): Promise<string> {
  const { options } = ctx;
  const filters = [SANDBOX_FILTER, sandboxIdFilter(ctx.id)];
  const asked = {
    info: dockerInfo(),
    helper: imageExists(options.helperImage),
    gateway: ctx.needsGateway() ? imageExists(gatewayImage()) : Promise.resolve(true),
    taken: Promise.all([listIds('container', filters), listIds('volume', filters)]),
  };
  // None is left unhandled while an earlier one is awaited (and thrown) first.
  for (const answer of Object.values(asked)) answer.catch(() => undefined);
  const info = await asked.info;
  ctx.limits = fitToEngine(ctx.limits, options.chosen, info);
  if (options.runtime !== 'runc' && !info.runtimes.includes(options.runtime)) {
    throw new RuntimeUnavailableError(options.runtime, info.runtimes);
  }
  const choice = chooseRuntime(options, info);
  ctx.runtime = choice.runtime;
  if (choice.notice) ctx.progress.notice(choice.notice);
  if (!(await asked.helper)) throw new HelperImageMissingError(options.helperImage);
  if (!(await asked.gateway)) throw new GatewayImageMissingError(gatewayImage());
  if (options.policy === 'allowlist' && options.allowVia === 'firewall') await assertFirewallUsable();
  const [containers, volumes] = await asked.taken;
  if (containers.length > 0 || volumes.length > 0) throw new SandboxExistsError(ctx.id);
  return `docker ${info.serverVersion}`;
}
