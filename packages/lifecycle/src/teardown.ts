// prune: every object of ours, or those of a scope (tests, benches), with the build leftovers and
// the image cache when asked. destroy <id> is destroy.ts, on the same sweep.
import { type BuildLeftovers, findBuildLeftovers, removeBuildLeftovers } from '@ca-sandbox/build';
import { CACHE_IMAGE_REPOSITORY, engine, filterRecord, LABEL_ID, SANDBOX_FILTER } from '@ca-sandbox/docker';
import { listFirewallRules } from '@ca-sandbox/network';
import { z } from 'zod';
import { removeOrphanCommandLogs } from './command-log.js';
import {
  type Found,
  inChunks,
  named,
  PRUNE_ROUND_PAUSE_MS,
  PRUNE_ROUNDS,
  Sweep,
  sweepFound,
  type TeardownResult,
  withoutFailed,
} from './destroy.js';
import { InvalidOptionsError } from './errors.js';
import { boxName } from './names.js';

export {
  destroySandbox,
  MAX_FAILURES,
  PRUNE_ROUNDS,
  Sweep,
  type TeardownFailure,
  type TeardownKind,
  type TeardownResult,
} from './destroy.js';

/** Every object carrying all `filters`, by name. Throws when docker fails: discovery is never silent. */
async function discover(filters: string[], withVolumes = true): Promise<Found> {
  const filter = { filters: filterRecord(filters) };
  const names = (items: { name: string }[]) => items.map((item) => item.name);
  const [containers, volumes, networks] = await Promise.all([
    engine.container.list({ ...filter, all: true }).then(names),
    withVolumes ? engine.volume.list(filter).then(names) : Promise.resolve([]),
    engine.network.list(filter).then(names),
  ]);
  return { containers, volumes, networks };
}

const PruneOptionsSchema = z.strictObject({ dryRun: z.boolean().optional(), images: z.boolean().optional() });

/**
 * Reclaims every object labeled `ca.sandbox=1` (containers, volumes, networks) and every tagged
 * firewall rule, whatever their state; `images` also removes the `ca-sbx:*` cache and what failed or
 * killed builds left (untagged steps and stopped build containers of our Dockerfile, context
 * directories of build processes that are gone: see @ca-sandbox/build findBuildLeftovers). Removals run in
 * chunks with bounded parallelism; then a label-scoped re-list names what is left.
 */
export async function prune(options: { dryRun?: boolean; images?: boolean } = {}): Promise<TeardownResult> {
  const parsed = PruneOptionsSchema.safeParse(options ?? {});
  if (!parsed.success)
    throw new InvalidOptionsError(`invalid prune options: ${parsed.error.issues[0]?.message}`);
  return pruneWhere([], parsed.data);
}

/**
 * prune, narrowed to objects that also carry `extraFilters` (and the firewall rules of the ids
 * named by `sandboxIds`). prune() is pruneWhere([]). Tests and benches use a narrowed scope so
 * they never touch sandboxes they did not make.
 */
export async function pruneWhere(
  extraFilters: string[],
  options: { dryRun?: boolean; images?: boolean },
  sandboxIds?: readonly string[],
): Promise<TeardownResult> {
  const { dryRun = false, images = false } = options;
  const filters = [SANDBOX_FILTER, ...extraFilters];
  const ours = (rule: { sandboxId: string }) =>
    sandboxIds === undefined || sandboxIds.includes(rule.sandboxId);
  const rulesNow = async () => (await listFirewallRules().catch(() => [])).filter(ours);
  // What failed or killed builds left carries no sandbox id: only an unscoped prune takes it.
  const builds = images && extraFilters.length === 0 && sandboxIds === undefined;
  const buildsNow = () => (builds ? findBuildLeftovers() : Promise.resolve(NO_BUILD_LEFTOVERS));
  const [found, rules, cache, leftBuilds] = await Promise.all([
    discover(filters),
    rulesNow(),
    images ? cacheImages() : Promise.resolve([]),
    buildsNow(),
  ]);
  if (dryRun) {
    const removed = [
      ...named(found),
      ...rules.map((rule) => `firewall:${rule.rule}`),
      ...cache.map((image) => `image:${image}`),
      ...namedBuildLeftovers(leftBuilds),
    ];
    return { removed, failures: [], leftovers: [], dryRun: true };
  }
  const sweep = new Sweep();
  // A create killed a moment ago may leave a docker client that still makes its object (a helper,
  // a volume) after the listing above: sweep and re-list until a listing finds nothing, or a
  // bounded number of rounds has passed (what is left then is reported as leftovers).
  // An object whose removal already failed is not tried again (its failure is reported once).
  let left = found;
  for (let index = 0; index < PRUNE_ROUNDS; index += 1) {
    const todo = withoutFailed(left, sweep.result.failures);
    if (named(todo).length === 0) break;
    if (index > 0) await new Promise((resolve) => setTimeout(resolve, PRUNE_ROUND_PAUSE_MS));
    await sweepFound(sweep, todo);
    left = await discover(filters);
  }
  await sweepOrphanRules(sweep, rules, filters);
  await inChunks(cache, (chunk) => sweep.remove('image', chunk));
  if (builds) {
    const removal = await removeBuildLeftovers(leftBuilds);
    sweep.result.removed.push(...removal.removed);
    for (const failure of removal.failures)
      sweep.fail(failure.kind, failure.name, failure.exitCode, failure.message);
  }
  // The firewall, image and build steps change no labeled container, volume or network: `left` still holds.
  const [leftRules, leftCache, buildsLeft] = await Promise.all([
    rulesNow(),
    images ? cacheImages() : Promise.resolve([]),
    buildsNow(),
  ]);
  await removeOrphanCommandLogs(
    async (id) => (await engine.container.find(boxName(id))) !== undefined,
    sandboxIds,
  );
  sweep.result.leftovers = [
    ...named(left),
    ...leftRules.map((rule) => `firewall:${rule.rule}`),
    ...leftCache.map((image) => `image:${image}`),
    ...namedBuildLeftovers(buildsLeft),
  ];
  return sweep.result;
}

const NO_BUILD_LEFTOVERS: BuildLeftovers = { images: [], containers: [], directories: [] };

function namedBuildLeftovers(found: BuildLeftovers): string[] {
  return [
    ...found.containers.map((name) => `container:${name}`),
    ...found.images.map((id) => `image:${id}`),
    ...found.directories.map((dir) => `directory:${dir}`),
  ];
}

/**
 * Removes the firewall rules of the sandboxes named by `listed` (the rules prune listed at its
 * start), one id at a time and only while that id has no container or network, checked right
 * before its rules go. Never all tagged rules at once: a create running beside prune makes its
 * network, then its rules, then its box; rules that appeared after the listing (a new id) are not
 * touched, and an id whose network exists again keeps its rules. The window left (a network made
 * between the check and the delete) is closed by create's gate, which compares the exact rule set
 * after `docker run` and removes the box when it is not there.
 */
export async function sweepOrphanRules(
  sweep: Sweep,
  listed: readonly { sandboxId: string }[],
  filters: readonly string[],
): Promise<void> {
  for (const id of new Set(listed.map((rule) => rule.sandboxId))) {
    // Rules of a sandbox whose box or network survived (or is being made) stay: its egress must stay limited.
    await sweep.firewall(id, await isAttached(id, filters));
  }
}

/** Whether sandbox `id` still has a container or network carrying all `filters`. */
async function isAttached(id: string, filters: readonly string[]): Promise<boolean> {
  const filter = { filters: filterRecord([...filters, `label=${LABEL_ID}=${id}`]) };
  const [containers, networks] = await Promise.all([
    engine.container.list({ ...filter, all: true }),
    engine.network.list(filter),
  ]);
  return containers.length + networks.length > 0;
}

/** The `ca-sbx:*` cache images, by tag. */
async function cacheImages(): Promise<string[]> {
  const images = await engine.image.list({ filters: { reference: [`${CACHE_IMAGE_REPOSITORY}:*`] } });
  const tags = images.flatMap((image) => image.tags);
  return tags.filter((tag) => tag.startsWith(`${CACHE_IMAGE_REPOSITORY}:`) && !tag.endsWith(':<none>'));
}
