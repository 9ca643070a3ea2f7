// The engine calls of the light entry (no zod): labeled listings, removals, a container's labels,
// an exec's terminal size. Over the Engine API client (engine-client.ts), whatever the transport.
import {
  engineCall,
  engineJson,
  engineJsonOrMissing,
  engineRequest,
  labelFilters,
  query,
  segment,
  statusError,
} from './engine-client.js';
import { DockerEngineError } from './errors.js';

export type LabeledKind = 'container' | 'volume' | 'network';

const PATHS: Record<LabeledKind, string> = {
  container: '/containers/json',
  volume: '/volumes',
  network: '/networks',
};

/** One labeled object: its name and, when asked for, the value of one of its labels. */
export interface LabeledObject {
  name: string;
  label?: string;
}

function entries(kind: LabeledKind, answer: unknown): unknown[] | undefined {
  const list = kind === 'volume' ? ((answer as { Volumes?: unknown } | null)?.Volumes ?? []) : answer;
  return Array.isArray(list) ? list : undefined;
}

function toObject(kind: LabeledKind, raw: unknown, label?: string): LabeledObject | undefined {
  const item = raw as { Name?: unknown; Names?: unknown; Labels?: unknown };
  const name =
    kind === 'container'
      ? Array.isArray(item.Names) && typeof item.Names[0] === 'string'
        ? item.Names[0].replace(/^\//, '')
        : undefined
      : typeof item.Name === 'string'
        ? item.Name
        : undefined;
  if (!name) return undefined;
  const labels = (item.Labels ?? {}) as Record<string, unknown>;
  const value = label ? labels[label] : undefined;
  return typeof value === 'string' ? { name, label: value } : { name };
}

/**
 * Containers (all states), volumes or networks carrying every `key=value` in `labels`, with the
 * value of `label` when given. An engine that does not answer throws DockerUnavailableError: a
 * discovery never fails silently.
 */
export async function listLabeled(
  kind: LabeledKind,
  labels: string[],
  label?: string,
  timeoutMs = 10_000,
): Promise<LabeledObject[]> {
  const path = `${PATHS[kind]}${query({ all: kind === 'container' ? 1 : undefined, filters: labelFilters(labels) })}`;
  const list = entries(kind, await engineJson('GET', path, { verb: `${kind} ls`, timeoutMs }));
  if (!list) return [];
  return list
    .map((raw) => toObject(kind, raw, label))
    .filter((item): item is LabeledObject => item !== undefined);
}

/** Sets the terminal size of an exec started with a TTY (what `docker exec -t` does on SIGWINCH). */
export async function resizeExec(execId: string, rows: number, columns: number): Promise<boolean> {
  if (!(rows > 0 && columns > 0)) return false;
  const path = `/exec/${segment(execId)}/resize?h=${Math.floor(rows)}&w=${Math.floor(columns)}`;
  try {
    await engineCall('POST', path, { verb: 'exec resize', timeoutMs: 5_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * The labels of one container, or undefined when the engine has no container by that name (a
 * millisecond: `exec` checks the role on its hot path). A daemon that does not answer throws.
 */
export async function containerLabels(name: string): Promise<Record<string, string> | undefined> {
  const answer = await engineJsonOrMissing(`/containers/${segment(name)}/json`, 'container inspect', 10_000);
  if (answer === undefined) return undefined;
  return labelRecord((answer as { Config?: { Labels?: unknown } } | null)?.Config?.Labels);
}

function labelRecord(labels: unknown): Record<string, string> {
  if (!labels || typeof labels !== 'object') return {};
  return Object.fromEntries(
    Object.entries(labels as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
}

const REMOVE: Record<'container' | 'volume' | 'network' | 'image', { path: string; verb: string }> = {
  container: { path: '/containers/', verb: 'rm' },
  volume: { path: '/volumes/', verb: 'volume rm' },
  network: { path: '/networks/', verb: 'network rm' },
  image: { path: '/images/', verb: 'image rm' },
};

/**
 * Removes one object; its removal may find it already gone: true when removed, false when it was
 * not there. `force` (containers, volumes, images), `volumes` (a container's anonymous ones).
 */
export async function removeObject(
  kind: 'container' | 'volume' | 'network' | 'image',
  name: string,
  options: { force?: boolean; volumes?: boolean } = {},
): Promise<boolean> {
  const { path, verb } = REMOVE[kind];
  const objectPath = `${path}${segment(name)}`;
  const flags = query({
    force: options.force && kind !== 'network' ? 1 : undefined,
    v: options.volumes && kind === 'container' ? 1 : undefined,
  });
  const response = await engineRequest('DELETE', `${objectPath}${flags}`, { verb });
  if (response.status === 404) return false;
  if (response.status >= 200 && response.status < 300) return true;
  // Another caller's removal of it runs (a killed create's own cleanup, a prune beside a destroy):
  // what was asked happens; wait for it to end, then say so as a removal.
  if (
    response.status === 409 &&
    /removal of container .* is already in progress/.test(response.body.toString('utf8'))
  )
    return waitGone(objectPath, verb);
  throw statusError(verb, response.status, response.body);
}

/** Polls the object at `objectPath` until the engine no longer has it (at most 30 s). */
async function waitGone(objectPath: string, verb: string): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const response = await engineRequest('GET', `${objectPath}/json`, { verb });
    if (response.status === 404) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new DockerEngineError(
    verb,
    0,
    `${objectPath.split('/').at(-1) ?? ''}: another removal of it did not end within 30 s`,
  );
}
