// destroy <id>: what a user waits for after every sandbox, measured against raw `docker rm -f` +
// `docker volume rm` through the bin. So this file loads light: the docker entry without zod (the
// engine's listings and removals), iptables' module only for a sandbox that has firewall rules.
// prune (teardown.ts) builds on the same sweep.

import {
  DockerUnavailableError,
  LABEL_POLICY,
  listLabeled,
  removeObject,
  sandboxLabelPairs,
  sandboxNames,
  sanitizeName,
} from '@ca-sandbox/docker/process';
import { removeCommandLog } from './command-log.js';
import { killedCreateOf } from './create-marker.js';
import { InvalidOptionsError, SandboxNotFoundError } from './errors.js';
import type { FirewallRelease } from './firewall-release.js';
import { mapLimit } from './map-limit.js';
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
export const PRUNE_CHUNK = 10;
export const PRUNE_PARALLEL = 4;
/** Sweeps of one prune at most, and the pause before each re-sweep. */
export const PRUNE_ROUNDS = 5;
export const PRUNE_ROUND_PAUSE_MS = 500;

export interface Found {
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
    // Only a sandbox with an allowlist has rules: iptables' module loads then.
    const { releaseFirewallRules } = await import('./firewall-release.js');
    const release = await releaseFirewallRules(id, attached);
    this.result.removed.push(...release.removed);
    const { failure } = release;
    if (failure) this.fail(failure.kind, failure.name, failure.exitCode, failure.message);
    return release;
  }
}

function removeOne(kind: 'container' | 'volume' | 'network' | 'image', name: string): Promise<boolean> {
  return removeObject(kind, name, kind === 'container' ? { force: true, volumes: true } : {});
}

export function named(found: Found): string[] {
  return [
    ...found.containers.map((name) => `container:${name}`),
    ...found.volumes.map((name) => `volume:${name}`),
    ...found.networks.map((name) => `network:${name}`),
  ];
}

/**
 * destroy's options (`keepVolume`), checked at the library's edge by hand: the schema library is
 * what this file's start-up saves (a plain object with an optional boolean is all it takes).
 */
function destroyOptions(options: unknown): { keepVolume?: boolean } {
  const given = options ?? {};
  if (typeof given !== 'object' || Array.isArray(given))
    throw new InvalidOptionsError('invalid destroy options: expected an object');
  const unknown = Object.keys(given).filter((key) => key !== 'keepVolume');
  if (unknown.length > 0)
    throw new InvalidOptionsError(`invalid destroy options: unrecognized key(s) ${unknown.join(', ')}`);
  const { keepVolume } = given as { keepVolume?: unknown };
  if (keepVolume !== undefined && typeof keepVolume !== 'boolean')
    throw new InvalidOptionsError('invalid destroy options: keepVolume must be a boolean');
  return keepVolume === undefined ? {} : { keepVolume };
}

/**
 * Removes sandbox `id`: its containers (box and any helper), its volumes (the source's kept with
 * `keepVolume`),
 * its network and firewall rules. Best-effort but never silent: a failed removal does not stop
 * the sweep, each failure is kept with docker's exit code, and a label-scoped re-list names what
 * is left. A docker failure while discovering or verifying throws.
 */
export async function destroySandbox(
  id: string,
  options: { keepVolume?: boolean } = {},
): Promise<TeardownResult> {
  validateSandboxName(id);
  const keepVolume = destroyOptions(options).keepVolume ?? false;
  // Reads go over the engine socket where docker is reached that way (a millisecond each instead
  // of a CLI start), else through the CLI; a failing read throws either way.
  const ours = sandboxLabelPairs(id);
  const namesOf = async (kind: 'container' | 'volume' | 'network') =>
    (await listLabeled(kind, ours)).map((object) => object.name);
  const listContainers = () => namesOf('container');
  // --keep-volume keeps the source volume only: the view of the image (its three volumes) goes.
  const source = sandboxNames(id).volume;
  const listVolumes = async () => (await namesOf('volume')).filter((name) => !keepVolume || name !== source);
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
export async function firewallRuleCount(id?: string): Promise<number> {
  const { listFirewallRules } = await import('@ca-sandbox/network');
  const rules = await listFirewallRules().catch(() => []);
  return rules.filter((rule) => id === undefined || rule.sandboxId === id).length;
}

export function withoutFailed(found: Found, failures: readonly TeardownFailure[]): Found {
  const failed = (kind: TeardownKind) =>
    new Set(failures.filter((failure) => failure.kind === kind).map((failure) => failure.name));
  const [containers, volumes, networks] = [failed('container'), failed('volume'), failed('network')];
  return {
    containers: found.containers.filter((name) => !containers.has(name)),
    volumes: found.volumes.filter((name) => !volumes.has(name)),
    networks: found.networks.filter((name) => !networks.has(name)),
  };
}

export async function sweepFound(sweep: Sweep, found: Found): Promise<void> {
  await inChunks(found.containers, (chunk) => sweep.remove('container', chunk));
  await Promise.all([
    inChunks(found.volumes, (chunk) => sweep.remove('volume', chunk)),
    inChunks(found.networks, (chunk) => sweep.remove('network', chunk)),
  ]);
}

export async function inChunks(names: string[], fn: (chunk: string[]) => Promise<void>): Promise<void> {
  const chunks: string[][] = [];
  for (let index = 0; index < names.length; index += PRUNE_CHUNK)
    chunks.push(names.slice(index, index + PRUNE_CHUNK));
  await mapLimit(chunks, PRUNE_PARALLEL, fn);
}
