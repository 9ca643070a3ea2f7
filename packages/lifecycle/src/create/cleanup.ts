import { DockerUnavailableError, engine } from '@ca-sandbox/docker';
import { listIds } from '../_utils.js';
import { removeCloneListing } from '../file-listing.js';
import { releaseFirewallRules } from '../firewall-release.js';
import { LABEL_INSTANCE } from '../record.js';
import type { CreateContext } from './context.js';

/**
 * Removes the objects labeled with one create's `instance`, then re-lists. The id's firewall rules
 * go only when this create applied them (`firewall`) and no container or network of the id is left:
 * a box whose `docker rm` failed still runs, and without its rules it would have open egress (and a
 * create refused as a duplicate must never strip the existing sandbox's rules).
 */
export async function cleanupCreate(id: string, instance: string, firewall: boolean): Promise<string[]> {
  const mine = [`label=${LABEL_INSTANCE}=${instance}`];
  const containers = await listIds('container', mine);
  // One object at a time, all at once: an object already gone is fine, any other failure shows
  // up in the re-list below as a leftover (never thrown: the create's own error comes first).
  const quietly = (removing: Promise<unknown>) => removing.catch(() => undefined);
  await Promise.all(
    containers.map((ref) => quietly(engine.container.remove(ref, { force: true, volumes: true }))),
  );
  const [volumes, networks] = await Promise.all([listIds('volume', mine), listIds('network', mine)]);
  await Promise.all([
    ...volumes.map((name) => quietly(engine.volume.remove(name, { force: true }))),
    ...networks.map((ref) => quietly(engine.network.remove(ref))),
  ]);
  const labels = { labels: [`${LABEL_INSTANCE}=${instance}`] };
  const [leftContainers, leftVolumes, leftNetworks] = await Promise.all([
    engine.container.list({ ...labels, all: true }).then((found) => found.map((item) => item.name)),
    engine.volume.list(labels).then((found) => found.map((item) => item.name)),
    engine.network.list(labels).then((found) => found.map((item) => item.name)),
  ]);
  const leftovers = [
    ...leftContainers.map((name) => `container:${name}`),
    ...leftVolumes.map((name) => `volume:${name}`),
    ...leftNetworks.map((name) => `network:${name}`),
  ];
  if (!firewall) return leftovers;
  // Any container or network of the id (not only this create's) keeps the rules.
  const { leftover } = await releaseFirewallRules(id);
  return leftover ? [...leftovers, leftover] : leftovers;
}

/**
 * After a failed or aborted create: once the work started beside a phase has settled, the
 * gateway's log reader and heartbeat stop, then everything
 * this call made goes; what is left (by a re-list) is returned as `<kind>:<name>`. Never throws:
 * a failed cleanup must not hide the create's own error.
 */
export async function cleanupFailedCreate(ctx: CreateContext): Promise<string[]> {
  await ctx.settled();
  await ctx.egress.settled();
  ctx.egress.stopKeepAlive();
  ctx.stopHeartbeat();
  // The clone's listing was taken by this create only once it owned the id (its volume exists).
  if (ctx.cloneListing) await removeCloneListing(ctx.id, ctx.instance);
  try {
    return await cleanupCreate(ctx.id, ctx.instance, ctx.firewallTouched);
  } catch (error) {
    // Docker gone: the create's own error says so, and no firewall rule was touched.
    if (error instanceof DockerUnavailableError) return [];
    ctx.log(`cleanup after a failed create did not finish: ${(error as Error).message}; run prune`);
    return [`sandbox:${ctx.id} (cleanup did not finish)`];
  }
}
