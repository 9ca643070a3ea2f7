import {
  DEPS_DIR,
  DEPS_SRC,
  ENV_NAME_PATTERN,
  IMAGE_VIEW_DIR,
  isUnderPath,
  sandboxNames,
} from './contracts.js';
import { engine } from './engine.js';
import { ImageViewError } from './errors.js';
import type { ContainerInspect, ImageInspect, VolumeInspect } from './inspect.js';
import { LABEL_ID, LABEL_ROLE } from './labels.js';

/**
 * A box's writable view of its own image, at IMAGE_VIEW_DIR: an overlay volume (the local driver's
 * `type=overlay`) whose lower layers are exactly the image's layers as the daemon reports them and
 * whose upper and work directories are two plain volumes of the sandbox. A write under it (a tool
 * writing into a dependency's folder, a file removed there) copies that one file up into the
 * sandbox's upper volume; the image is never written, the root filesystem stays read-only, and the
 * view goes with the sandbox's volumes. Every path in the mount options comes from the engine
 * (image and volume inspect), never from the box, and the gate (@ca-sandbox/run, row image-view) compares the
 * mounted volume's options with the ones derived again from the box's image (imageViewFacts).
 *
 * Only where the engine stores images with overlay2 (the Linux default); elsewhere (another storage
 * driver, the containerd image store) the box has no view and its deps stay read-only.
 */

/** The kernel takes at most one page of mount options: past this the view is not made. */
export const MAX_OPTIONS_LENGTH = 3800;
/** A layer or volume directory as overlay2 and the local driver name them: no `,` or `:` in it. */
export const DIRECTORY = /^\/[A-Za-z0-9._/-]{1,400}$/;

export type ImageViewPlan = { driverOpts: Record<string, string> } | { reason: string };

/** The overlay's driver options for a view of `image` writing to the volumes mounted at `upper`/`work`. */
export function imageViewOptions(image: ImageInspect, upper: string, work: string): ImageViewPlan {
  const { Name, Data } = image.GraphDriver;
  if (Name !== 'overlay2')
    return { reason: `the engine stores images with ${Name || 'an unknown driver'}, not overlay2` };
  const layers = [Data.UpperDir, ...(Data.LowerDir ? Data.LowerDir.split(':') : [])].filter(
    (layer): layer is string => layer !== undefined && layer !== '',
  );
  if (layers.length === 0 || ![...layers, upper, work].every((dir) => DIRECTORY.test(dir)))
    return { reason: 'the engine reported layer or volume paths the view cannot name' };
  // nosuid, nodev: nothing in the view is a device or runs with another's rights (the box has
  // no-new-privileges and no capabilities besides; these hold even without them).
  const o = `lowerdir=${layers.join(':')},upperdir=${upper},workdir=${work},nosuid,nodev`;
  if (o.length > MAX_OPTIONS_LENGTH) return { reason: `the image has too many layers (${layers.length})` };
  return { driverOpts: { type: 'overlay', device: 'overlay', o } };
}

/**
 * A plain local volume of sandbox `sandboxId`: the upper and work directories must be volumes the
 * engine made as directories of its own, never a volume whose driver options put it elsewhere
 * (`type=none,o=bind,device=…` is a bind in disguise).
 */
export function plainOwn(volume: VolumeInspect | undefined, sandboxId: string): boolean {
  return (
    volume?.Labels[LABEL_ID] === sandboxId &&
    volume.Driver === 'local' &&
    Object.keys(volume.Options).length === 0
  );
}

export async function ownVolume(
  sandboxId: string,
  name: string,
  labels: Record<string, string>,
): Promise<VolumeInspect> {
  // The engine answers a create of an existing name with that volume: only our own plain one is used.
  const volume = await engine.volume.create(name, { labels });
  if (!plainOwn(volume, sandboxId))
    throw new ImageViewError(`volume ${name} exists and is not a plain volume of sandbox ${sandboxId}`);
  return volume;
}

export function sameOptions(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/**
 * Makes (or keeps) sandbox `sandboxId`'s view of `image`: the upper and work volumes, then the
 * overlay volume. A view of another image (a box started early from the source's last image) is
 * replaced, which needs its box gone. Returns the view's volume name, or why there is none.
 */
export async function prepareImageView(
  sandboxId: string,
  image: string,
  labels: Record<string, string>,
): Promise<{ volume: string; env: Record<string, string> } | { reason: string }> {
  const names = sandboxNames(sandboxId).imageView;
  const inspected = await engine.image.inspect(image);
  if (!inspected) return { reason: `image ${image} not found` };
  const [upper, work, existing] = await Promise.all([
    ownVolume(sandboxId, names.upper, { ...labels, [LABEL_ROLE]: 'image-view-upper' }),
    ownVolume(sandboxId, names.work, { ...labels, [LABEL_ROLE]: 'image-view-work' }),
    engine.volume.find(names.view),
  ]);
  const plan = imageViewOptions(inspected, upper.Mountpoint ?? '', work.Mountpoint ?? '');
  if (existing && existing.Labels[LABEL_ID] !== sandboxId)
    throw new ImageViewError(`volume ${names.view} exists and is not sandbox ${sandboxId}'s`);
  if ('reason' in plan) {
    // No view of this image: none of another image either (a box started early from one).
    const stale = existing ? [names.view] : [];
    await Promise.all([...stale, names.upper, names.work].map((name) => engine.volume.remove(name)));
    return plan;
  }
  if (existing) {
    if (existing.Driver === 'local' && sameOptions(existing.Options, plan.driverOpts))
      return { volume: names.view, env: viewEnv(inspected.Config.Env) };
    await engine.volume.remove(names.view);
  }
  await engine.volume.create(names.view, {
    labels: { ...labels, [LABEL_ROLE]: 'image-view' },
    driverOpts: plan.driverOpts,
  });
  return { volume: names.view, env: viewEnv(inspected.Config.Env) };
}

export const underDeps = (path: string) => isUnderPath(path, DEPS_DIR);

/**
 * The image's variables that name paths under /deps (PATH's bins, NODE_PATH, a venv, a module
 * cache), pointed at the same paths in the view: the box reaches its deps one way only, so a
 * dependency is one instance whether a tool came to it from PATH or from node_modules.
 */
export function viewEnv(imageEnv: readonly string[]): Record<string, string> {
  return movedDepsEnv(imageEnv, (part) => (underDeps(part) ? `${IMAGE_VIEW_DIR}${part}` : part));
}

/**
 * The image's variables whose value is a list of absolute paths, one of them under /deps, with
 * each path passed through `moved` (the one walk of viewEnv and repo-view's viewEnvFor).
 */
export function movedDepsEnv(
  imageEnv: readonly string[],
  moved: (path: string) => string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of imageEnv) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    const parts = entry.slice(at + 1).split(':');
    if (at <= 0 || !ENV_NAME_PATTERN.test(name) || !parts.every((part) => part.startsWith('/'))) continue;
    if (!parts.some(underDeps)) continue;
    env[name] = parts.map(moved).join(':');
  }
  return env;
}

/** Where a box reaches the installed deps' manifests tree: through its view when it has one. */
export function depsSourceIn(inspect: ContainerInspect): string {
  const viewed = inspect.Mounts.some((m) => m.Type === 'volume' && m.Destination === IMAGE_VIEW_DIR);
  return viewed ? `${IMAGE_VIEW_DIR}${DEPS_SRC}` : DEPS_SRC;
}

/** What the gate compares for a volume mounted at IMAGE_VIEW_DIR (undefined: none is). */
export interface ImageViewFacts {
  /** The volume mounted there. */
  mounted: string;
  /** The sandbox's view volume by the naming rule. */
  expected: string;
  driver: string;
  options: Record<string, string>;
  /** The options derived again from the box's image and the sandbox's upper and work volumes. */
  derived: ImageViewPlan;
}

/** Reads what the gate's image-view row needs: the mounted volume, the box's image, the upper and work volumes. */
export async function imageViewFacts(inspect: ContainerInspect): Promise<ImageViewFacts | undefined> {
  const mount = inspect.Mounts.find((m) => m.Type === 'volume' && m.Destination === IMAGE_VIEW_DIR);
  if (!mount) return undefined;
  const sandboxId = inspect.Config.Labels[LABEL_ID] ?? '';
  const names = sandboxNames(sandboxId).imageView;
  const [volume, image, upper, work] = await Promise.all([
    mount.Name ? engine.volume.find(mount.Name) : Promise.resolve(undefined),
    engine.image.inspect(inspect.Image ?? inspect.Config.Image),
    engine.volume.find(names.upper),
    engine.volume.find(names.work),
  ]);
  const ours = (found: VolumeInspect | undefined) =>
    plainOwn(found, sandboxId) ? (found?.Mountpoint ?? '') : '';
  return {
    mounted: mount.Name ?? '',
    expected: names.view,
    driver: volume?.Driver ?? '',
    options: volume?.Labels[LABEL_ID] === sandboxId ? volume.Options : {},
    derived: image ? imageViewOptions(image, ours(upper), ours(work)) : { reason: 'the image is gone' },
  };
}

/** True when `facts` describe this sandbox's own view of the box's own image. */
export function imageViewMatches(facts: ImageViewFacts): boolean {
  return (
    facts.mounted === facts.expected &&
    facts.driver === 'local' &&
    'driverOpts' in facts.derived &&
    sameOptions(facts.options, facts.derived.driverOpts)
  );
}
