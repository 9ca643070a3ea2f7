import type { SandboxContainerConfig, VolumeMountConfig } from './container-create.js';
import { BOX_USER, sandboxNames } from './contracts.js';
import { engine } from './engine.js';
import { ImageViewError } from './errors.js';
import { plainOwn } from './image-view.js';
import type { ContainerInspect } from './inspect.js';
import { LABEL_ROLE } from './labels.js';

/**
 * The create body of a container that is created and never started: it only lets the engine answer
 * about an image (a stat of a path in it) or hold volumes. Nothing of the image runs, so nothing of
 * the repo's can answer for it; should anyone start it all the same, it runs `/bin/true` as the
 * box user with no network, no capability, no new privileges and a read-only root.
 */
export function inertContainerConfig(
  image: string,
  labels: Record<string, string>,
  mounts: VolumeMountConfig[] = [],
): SandboxContainerConfig {
  return {
    Image: image,
    Entrypoint: [],
    Cmd: ['/bin/true'],
    User: BOX_USER,
    Hostname: 'sandbox',
    WorkingDir: '/',
    Env: [],
    Labels: labels,
    HostConfig: {
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      PidsLimit: 16,
      Memory: 64 * 1024 ** 2,
      MemorySwap: 64 * 1024 ** 2,
      NanoCpus: 1e9,
      IpcMode: 'private',
      Ulimits: [],
      Init: true,
      Runtime: 'runc',
      NetworkMode: 'none',
      Mounts: mounts,
      Tmpfs: {},
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}

/** Where the hold mounts each volume (a folder no image has: nothing to copy into the volume). */
const HOLD_DIR = '/.ca-sbx-hold';

/**
 * The view volumes of a box that no container mounts: the overlays' upper and work directories,
 * which the kernel is given by path (the image view's upper and work, the repo view's work).
 */
export function unmountedViewVolumes(box: ContainerInspect, sandboxId: string): string[] {
  const names = sandboxNames(sandboxId);
  const mounted = new Set(box.Mounts.map((mount) => mount.Name));
  return [
    ...(mounted.has(names.imageView.view) ? [names.imageView.upper, names.imageView.work] : []),
    ...(mounted.has(names.repoView.view) ? [names.repoView.work] : []),
  ];
}

/**
 * Holds `volumes` of sandbox `sandboxId` with a container of its box's image that is created and
 * never started (`ca-sbx_hold-<id>`, role hold): the engine then counts them in use, so a
 * `docker volume prune` (which on engine 20.10 removes every named volume no container has) or a
 * `docker volume rm` cannot take a view's upper or work directory from under the box: its writes
 * into its deps would fail at once and the box would never start again. destroy and prune remove
 * it with the sandbox's other containers, before its volumes. Only for a box that is handed out:
 * a held volume cannot be replaced (an early box's view of another image).
 */
export async function holdVolumes(
  sandboxId: string,
  image: string,
  volumes: readonly string[],
  labels: Record<string, string>,
): Promise<void> {
  if (volumes.length === 0) return;
  // Only the sandbox's own plain volumes: a mount of a name that is gone would make the engine
  // create it, empty and with none of our labels (no destroy or prune would ever find it).
  const found = await Promise.all(volumes.map((name) => engine.volume.find(name)));
  const missing = volumes.filter((_, index) => !plainOwn(found[index], sandboxId));
  if (missing.length > 0)
    throw new ImageViewError(
      `the view volume(s) ${missing.join(', ')} of sandbox ${sandboxId} are gone or not its own`,
    );
  const mounts = volumes.map(
    (name): VolumeMountConfig => ({
      Type: 'volume',
      Source: name,
      Target: `${HOLD_DIR}/${name}`,
      ReadOnly: true,
      VolumeOptions: { NoCopy: true, DriverConfig: {} },
    }),
  );
  await engine.container.create(
    sandboxNames(sandboxId).hold,
    inertContainerConfig(image, { ...labels, [LABEL_ROLE]: 'hold' }, mounts),
  );
}
