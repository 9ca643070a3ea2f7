import { type BuildLeftovers, findBuildLeftovers, removeBuildLeftovers } from '@ca-sandbox/build';
import {
  CACHE_IMAGE_REPOSITORY,
  DockerUnavailableError,
  engine,
  filterRecord,
  LABEL_ID,
  LABEL_POLICY,
  listLabeled,
  SANDBOX_FILTER,
  sandboxLabelPairs,
} from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { listFirewallRules } from '@ca-sandbox/network';
import { z } from 'zod';
import { mapLimit } from './_utils.js';
import { removeCommandLog, removeOrphanCommandLogs } from './command-log.js';
import { killedCreateOf } from './create-marker.js';
import { InvalidOptionsError, SandboxNotFoundError } from './errors.js';
import { type FirewallRelease, releaseFirewallRules } from './firewall-release.js';
import { boxName } from './names.js';
import { validateSandboxName } from './source.js';

export type TeardownKind = 'container' | 'volume' | 'network' | 'firewall' | 'image' | 'directory';

export interface TeardownFailure {
  kind: TeardownKind;
  name: string;
  /** docker's (or iptables') own exit code. */
  exitCode: number;
  message: string;
}

/** What a teardown did; names are `<kind>:<name>`. */
export interface TeardownResult {
  removed: string[];
  failures: TeardownFailure[];
  /** What a label-scoped re-list still found afterwards: non-empty means the teardown failed. */
  leftovers: string[];
  /** prune({ dryRun: true }): `removed` lists what would be removed; nothing was touched. */
  dryRun?: boolean;
}

export const MAX_FAILURES = 100;
/** Objects per `docker rm`/`volume rm`/`network rm` call, and calls in flight, during prune. */
const PRUNE_CHUNK = 10;
const PRUNE_PARALLEL = 4;
/** Sweeps of one prune at most, and the pause before each re-sweep. */
export const PRUNE_ROUNDS = 5;
const PRUNE_ROUND_PAUSE_MS = 500;

interface Found {
  containers: string[];
  volumes: string[];
  networks: string[];
}

export class Sweep {
  readonly result: TeardownResult = { removed: [], failures: [], leftovers: [] };

  fail(kind: TeardownKind, name: string, exitCode: number, message: string): void {
    if (this.result.failures.length < MAX_FAILURES) {
      this.result.failures.push({ kind, name, exitCode, message: sanitizeName(message.trim(), 500) });
    } else if (this.result.failures.length === MAX_FAILURES) {
      this.result.failures.push({ kind, name: '…', exitCode, message: 'more failures not listed' });
    }
  }

  /**
   * Removes `names` one by one over the Engine API (an object already gone counts as removed), so
   * that every failure carries its own object and the engine's message. Never throws for a
   * removal failure.
   */
  async remove(kind: 'container' | 'volume' | 'network' | 'image', names: string[]): Promise<void> {
    for (const name of names) {
      try {
        await removeOne(kind, name);
        this.result.removed.push(`${kind}:${name}`);
      } catch (error) {
        if (error instanceof DockerUnavailableError) throw error;
        const exitCode = (error as { exitCode?: number }).exitCode ?? 1;
        this.fail(
          kind,
          name,
          exitCode,
          String((error as { stderr?: unknown }).stderr || (error as Error).message),
        );
      }
    }
  }

  /** Releases the firewall rules of `id` (see releaseFirewallRules) and returns what stays. */
  async firewall(id: string, attached: boolean): Promise<FirewallRelease> {
    const release = await releaseFirewallRules(id, attached);
    this.result.removed.push(...release.removed);
    const { failure } = release;
    if (failure) this.fail(failure.kind, failure.name, failure.exitCode, failure.message);
    return release;
  }
}

function removeOne(kind: 'container' | 'volume' | 'network' | 'image', name: string): Promise<boolean> {
  if (kind === 'container') return engine.container.remove(name, { force: true, volumes: true });
  if (kind === 'volume') return engine.volume.remove(name);
  if (kind === 'network') return engine.network.remove(name);
  return engine.image.remove(name);
}

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

function named(found: Found): string[] {
  return [
    ...found.containers.map((name) => `container:${name}`),
    ...found.volumes.map((name) => `volume:${name}`),
    ...found.networks.map((name) => `network:${name}`),
  ];
}

const DestroyOptionsSchema = z.strictObject({ keepVolume: z.boolean().optional() });

/**
 * Removes sandbox `id`: its containers (box and any helper), its volume (unless `keepVolume`),
 * its network and firewall rules. Best-effort but never silent: a failed removal does not stop
 * the sweep, each failure is kept with docker's exit code, and a label-scoped re-list names what
 * is left. A docker failure while discovering or verifying throws.
 */
export async function destroySandbox(
  id: string,
  options: { keepVolume?: boolean } = {},
): Promise<TeardownResult> {
  validateSandboxName(id);
  const parsed = DestroyOptionsSchema.safeParse(options ?? {});
  if (!parsed.success)
    throw new InvalidOptionsError(`invalid destroy options: ${parsed.error.issues[0]?.message}`);
  const keepVolume = parsed.data.keepVolume ?? false;
  // Reads go over the engine socket where docker is reached that way (a millisecond each instead
  // of a CLI start), else through the CLI; a failing read throws either way.
  const ours = sandboxLabelPairs(id);
  const namesOf = async (kind: 'container' | 'volume' | 'network') =>
    (await listLabeled(kind, ours)).map((object) => object.name);
  const listContainers = () => namesOf('container');
  const listVolumes = () => (keepVolume ? Promise.resolve([]) : namesOf('volume'));
  const listNetworks = () => namesOf('network');
  const sweep = new Sweep();
  // The stages overlap where the engine allows, so that discovery and the re-list cost little
  // beyond the removals: volumes and networks are listed while the containers go (removing a
  // container does not change them) and containers are re-listed while the volume goes.
  const boxes = await listLabeled('container', ours, LABEL_POLICY);
  const containers = boxes.map((box) => box.name);
  const [, volumes, networks] = await Promise.all([
    sweep.remove('container', containers),
    listVolumes(),
    listNetworks(),
  ]);
  // Firewall rules exist only beside an allowlist network or box (prune sweeps any orphan rule).
  const allowlist = networks.length > 0 || boxes.some((box) => box.label === 'allowlist');
  const [, , leftContainers, rules] = await Promise.all([
    sweep.remove('volume', volumes),
    sweep.remove('network', networks),
    listContainers(),
    allowlist ? firewallRuleCount(id) : Promise.resolve(0),
  ]);
  // Nothing labeled: a typo, or a create killed before its first object was listed (its mark
  // says so), whose docker request still in flight may make that object in a moment.
  const killedEarly =
    containers.length + volumes.length + networks.length + rules === 0 && (await killedCreateOf(id));
  if (containers.length + volumes.length + networks.length + rules === 0 && !killedEarly)
    throw new SandboxNotFoundError(id);
  const [leftVolumes, leftNetworks] = await Promise.all([listVolumes(), listNetworks()]);
  // A create killed a moment ago may have a docker client still in flight that makes its object
  // (the egress network, a volume) after the listing above: as prune does, sweep what a re-list
  // finds and list again, a bounded number of rounds, only while something new is there (a
  // destroy of a settled sandbox lists once and costs nothing more).
  let left: Found = { containers: leftContainers, volumes: leftVolumes, networks: leftNetworks };
  for (let round = 0; round < PRUNE_ROUNDS; round += 1) {
    const todo = withoutFailed(left, sweep.result.failures);
    // A create killed early is watched every round: what it had in flight shows up late.
    if (named(todo).length === 0 && !killedEarly) break;
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, PRUNE_ROUND_PAUSE_MS));
    await sweepFound(sweep, todo);
    const [containersNow, volumesNow, networksNow] = await Promise.all([
      listContainers(),
      listVolumes(),
      listNetworks(),
    ]);
    left = { containers: containersNow, volumes: volumesNow, networks: networksNow };
  }
  const attached = left.containers.length > 0 || left.networks.length > 0;
  const firewall: Partial<FirewallRelease> = rules > 0 ? await sweep.firewall(id, attached) : {};
  sweep.result.leftovers = [...named(left), ...(firewall.leftover ? [firewall.leftover] : [])];
  // The box's command log (the report's) goes with the box.
  if (!left.containers.includes(boxName(id))) await removeCommandLog(id);
  return sweep.result;
}

/** Tagged rules of `id` (all when no id); iptables that cannot run here cannot hold our rules. */
async function firewallRuleCount(id?: string): Promise<number> {
  const rules = await listFirewallRules().catch(() => []);
  return rules.filter((rule) => id === undefined || rule.sandboxId === id).length;
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

function withoutFailed(found: Found, failures: readonly TeardownFailure[]): Found {
  const failed = (kind: TeardownKind) =>
    new Set(failures.filter((failure) => failure.kind === kind).map((failure) => failure.name));
  const [containers, volumes, networks] = [failed('container'), failed('volume'), failed('network')];
  return {
    containers: found.containers.filter((name) => !containers.has(name)),
    volumes: found.volumes.filter((name) => !volumes.has(name)),
    networks: found.networks.filter((name) => !networks.has(name)),
  };
}

async function sweepFound(sweep: Sweep, found: Found): Promise<void> {
  await inChunks(found.containers, (chunk) => sweep.remove('container', chunk));
  await Promise.all([
    inChunks(found.volumes, (chunk) => sweep.remove('volume', chunk)),
    inChunks(found.networks, (chunk) => sweep.remove('network', chunk)),
  ]);
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

async function inChunks(names: string[], fn: (chunk: string[]) => Promise<void>): Promise<void> {
  const chunks: string[][] = [];
  for (let index = 0; index < names.length; index += PRUNE_CHUNK)
    chunks.push(names.slice(index, index + PRUNE_CHUNK));
  await mapLimit(chunks, PRUNE_PARALLEL, fn);
}

/** The `ca-sbx:*` cache images, by tag. */
async function cacheImages(): Promise<string[]> {
  const images = await engine.image.list({ filters: { reference: [`${CACHE_IMAGE_REPOSITORY}:*`] } });
  const tags = images.flatMap((image) => image.tags);
  return tags.filter((tag) => tag.startsWith(`${CACHE_IMAGE_REPOSITORY}:`) && !tag.endsWith(':<none>'));
}
