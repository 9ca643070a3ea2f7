import { engine, sandboxNames } from '@ca-sandbox/docker';
import { volumeCreateSpec } from '@ca-sandbox/mounts';
import { ContainerNameInUseError, runContainer } from '@ca-sandbox/run';
import { SandboxExistsError } from '../errors.js';
import { HELPER_COMMAND, keepHelperAlive } from '../helper.js';
import { LABEL_INSTANCE } from '../record.js';

/**
 * The source volume of sandbox `id`. `docker volume create` is idempotent: the volume is checked to
 * be the one this call made (its `instance` label), or another create of the id got there first.
 */
export async function createOwnVolume(id: string, labels: Record<string, string>): Promise<void> {
  const spec = volumeCreateSpec(sandboxNames(id).volume, labels);
  // The engine answers a create of an existing name with that volume, labels included.
  const found = await engine.volume.create(spec.name, spec);
  if (found.Labels[LABEL_INSTANCE] !== labels[LABEL_INSTANCE]) throw new SandboxExistsError(id);
}

export interface HelperSpec {
  id: string;
  image: string;
  labels: Record<string, string>;
  /** 'none', or the network a URL clone goes out on (the gateway's, or the caller's). */
  network: string;
  env?: Record<string, string>;
}

/**
 * The hardened helper that git and the install run in, on the sandbox's volume. Its main process is
 * bounded by a heartbeat: the helper (and a clone in it) dies when its create does. Returns the
 * heartbeat's stop.
 */
export async function startHelper(spec: HelperSpec): Promise<() => void> {
  const names = sandboxNames(spec.id);
  await runContainer({
    sandboxId: spec.id,
    name: names.helper,
    image: spec.image,
    role: 'helper',
    volume: names.volume,
    network: spec.network,
    tmpfsSize: '1g',
    labels: spec.labels,
    command: HELPER_COMMAND,
    ...(spec.env ? { env: spec.env } : {}),
  }).catch((error: unknown) => {
    if (error instanceof ContainerNameInUseError) throw new SandboxExistsError(spec.id);
    throw error;
  });
  return keepHelperAlive(names.helper);
}

/** Removes the helper once the image is prepared: nothing of the repo runs in it any more. */
export async function removeHelper(id: string): Promise<void> {
  await engine.container.remove(sandboxNames(id).helper, { force: true });
}
