import {
  type ContainerInspect,
  engine,
  filterRecord,
  LABEL_ID,
  LABEL_ROLE,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
} from '@ca-sandbox/docker';
import { NotABoxError, SandboxNotFoundError, SandboxNotRunningError } from './errors.js';
import { boxName } from './names.js';

export { mapLimit } from './map-limit.js';
export { boxName, resolveBox } from './names.js';

/**
 * The box of sandbox `id` (any state): SandboxNotFoundError when nothing has its name,
 * NotABoxError when the container is not ours, not of this id, or not role box (a helper).
 */
export async function inspectBox(id: string): Promise<ContainerInspect> {
  // Only the engine's own 404 means missing; an unreachable daemon is not.
  const inspect = await engine.container.find(boxName(id));
  if (!inspect) throw new SandboxNotFoundError(id);
  const labels = inspect.Config.Labels;
  const role = labels[LABEL_ROLE] ?? '';
  const ours = labels[SANDBOX_LABEL] === SANDBOX_LABEL_VALUE;
  if (!ours || labels[LABEL_ID] !== id || role !== 'box')
    throw new NotABoxError(id, boxName(id), ours ? role : '');
  return inspect;
}

/**
 * Maps a docker failure that may mean "no such box" to SandboxNotFoundError (gone) or
 * SandboxNotRunningError (stopped), confirming with an
 * inspect, because the text could also be the command's own stderr. Returns the inspect.
 */
export async function assertBoxRunning(id: string): Promise<ContainerInspect> {
  const inspect = await inspectBox(id);
  // Not "not found": an agent told the box is gone would create another instead of starting it.
  if (!inspect.State.Running) throw new SandboxNotRunningError(id, inspect.State.Status);
  return inspect;
}

/** Ids (volumes: names) of the objects matching `filters` (`label=k=v`, ...); throws when docker fails (discovery must not be silent). */
export async function listIds(
  kind: 'container' | 'volume' | 'network',
  filters: string[],
): Promise<string[]> {
  const filter = { filters: filterRecord(filters) };
  if (kind === 'container')
    return (await engine.container.list({ ...filter, all: true })).map((item) => item.id);
  if (kind === 'volume') return (await engine.volume.list(filter)).map((item) => item.name);
  return (await engine.network.list(filter)).map((item) => item.id);
}
