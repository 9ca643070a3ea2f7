import {
  DEPS_DIR,
  DEPS_SRC,
  IMAGE_VIEW_DIR,
  isUnderPath,
  RAW_REPO_DIR,
  REPO_DIR,
  sandboxNames,
} from './contracts.js';
import { engine } from './engine.js';
import { ImageViewError } from './errors.js';
import {
  DIRECTORY,
  type ImageViewPlan,
  MAX_OPTIONS_LENGTH,
  movedDepsEnv,
  ownVolume,
  plainOwn,
  sameOptions,
} from './image-view.js';
import type { ContainerInspect, ImageInspect, VolumeInspect } from './inspect.js';
import {
  DEPS_VIEW_LABEL_VALUE,
  LABEL_CACHE_BUILDER,
  LABEL_DEPS_VIEW,
  LABEL_ID,
  LABEL_ROLE,
} from './labels.js';

/**
 * A box's repo view: the checkout at REPO_DIR as one overlay volume (the local driver's
 * `type=overlay`) whose lower is what the deps install wrote in /deps/src (the image's top layer,
 * LABEL_DEPS_VIEW) and whose upper is the sandbox's own volume. The box sees the project as a
 * developer's machine has it after the install: node_modules are real folders under the checkout,
 * so a tool that resolves real paths (vite and its `server.fs.allow`) finds every dependency
 * inside the project, and a write into a dependency's folder copies that file up into the
 * sandbox's volume. The clone writes the volume before any view of it is mounted; the box has the
 * volume itself read-only at RAW_REPO_DIR (the report and cp read what the repo and the box wrote
 * there, never the installed deps).
 *
 * Every path in the options comes from the engine (image and volume inspect), never from the box,
 * and the gate (@ca-sandbox/run, row repo-view) compares the mounted volume's options with the
 * ones derived again from the box's image and the sandbox's volumes (repoViewFacts). Options are
 * pinned: no redirects or metacopy (nothing in the upper can send a lookup elsewhere), no index.
 */

/** Why a box gets no repo view, or the overlay's driver options for `image` over `upper`. */
export function repoViewOptions(image: ImageInspect, upper: string, work: string): ImageViewPlan {
  const refused = repoViewRefusal(image);
  if (refused) return { reason: refused };
  // The install layer's own directory first: without it `/deps/src` alone would name the host's.
  const top = image.GraphDriver.Data.UpperDir ?? '';
  const lower = `${top}${DEPS_SRC}`;
  if (![top, lower, upper, work].every((dir) => DIRECTORY.test(dir)))
    return { reason: 'the engine reported layer or volume paths the view cannot name' };
  const o = `lowerdir=${lower},upperdir=${upper},workdir=${work},nosuid,nodev,redirect_dir=nofollow,metacopy=off,index=off`;
  if (o.length > MAX_OPTIONS_LENGTH) return { reason: 'the mount options are too long' };
  return { driverOpts: { type: 'overlay', device: 'overlay', o } };
}

/** Why `image` cannot be the lower of a repo view (undefined: it can). */
function repoViewRefusal(image: ImageInspect): string | undefined {
  const { Name } = image.GraphDriver;
  if (Name !== 'overlay2')
    return `the engine stores images with ${Name || 'an unknown driver'}, not overlay2`;
  if (
    image.Config.Labels?.[LABEL_DEPS_VIEW] !== DEPS_VIEW_LABEL_VALUE ||
    image.Config.Labels?.[LABEL_CACHE_BUILDER] !== 'builtin'
  )
    return 'its deps image was not built for a repo view (an older image, or not a node install)';
  return undefined;
}

/**
 * Makes (or keeps) sandbox `sandboxId`'s repo view of `image` over its volume (which the clone has
 * written: the view is made only after). A view of another image is replaced, which needs its box
 * gone. Returns the view's volume name and the image's variables (for viewEnvFor), or why there is none.
 */
export async function prepareRepoView(
  sandboxId: string,
  image: string,
  labels: Record<string, string>,
): Promise<{ volume: string; imageEnv: string[] } | { reason: string }> {
  const names = sandboxNames(sandboxId);
  const [inspected, upper, existing] = await Promise.all([
    engine.image.inspect(image),
    engine.volume.find(names.volume),
    engine.volume.find(names.repoView.view),
  ]);
  if (!inspected) return { reason: `image ${image} not found` };
  if (!plainOwn(upper, sandboxId))
    throw new ImageViewError(`volume ${names.volume} is not a plain volume of sandbox ${sandboxId}`);
  if (existing && existing.Labels[LABEL_ID] !== sandboxId)
    throw new ImageViewError(`volume ${names.repoView.view} exists and is not sandbox ${sandboxId}'s`);
  // No view of this image: none of another either (a box started early from one), no work volume.
  const none = async (reason: string) => {
    const stale = existing ? [names.repoView.view] : [];
    await Promise.all([...stale, names.repoView.work].map((name) => engine.volume.remove(name)));
    return { reason };
  };
  const refused = repoViewRefusal(inspected);
  if (refused) return none(refused);
  const work = await ownVolume(sandboxId, names.repoView.work, { ...labels, [LABEL_ROLE]: 'repo-view-work' });
  const plan = repoViewOptions(inspected, upper?.Mountpoint ?? '', work.Mountpoint ?? '');
  if ('reason' in plan) return none(plan.reason);
  if (existing) {
    if (existing.Driver === 'local' && sameOptions(existing.Options, plan.driverOpts))
      return { volume: names.repoView.view, imageEnv: inspected.Config.Env };
    await engine.volume.remove(names.repoView.view);
  }
  await engine.volume.create(names.repoView.view, {
    labels: { ...labels, [LABEL_ROLE]: 'repo-view' },
    driverOpts: plan.driverOpts,
  });
  return { volume: names.repoView.view, imageEnv: inspected.Config.Env };
}

/**
 * The image's variables that name paths under /deps, for a box with a repo view: /deps/src and
 * /deps/node_modules (a link to src/node_modules) as the same paths under REPO_DIR, so a
 * dependency is one instance whether a tool came to it from PATH, NODE_PATH or node_modules; any
 * other /deps path (the package manager, the pinned runtime) through the image view when the box
 * has one (`imageView`), as viewEnv.
 */
export function viewEnvFor(imageEnv: readonly string[], imageView: boolean): Record<string, string> {
  const linked = `${DEPS_DIR}/node_modules`;
  return movedDepsEnv(imageEnv, (part) => {
    if (isUnderPath(part, DEPS_SRC)) return `${REPO_DIR}${part.slice(DEPS_SRC.length)}`;
    if (isUnderPath(part, linked)) return `${REPO_DIR}/node_modules${part.slice(linked.length)}`;
    return imageView && isUnderPath(part, DEPS_DIR) ? `${IMAGE_VIEW_DIR}${part}` : part;
  });
}

/** True when a box has a repo view: its own volume is mounted read-only at RAW_REPO_DIR. */
export function hasRepoView(inspect: ContainerInspect): boolean {
  return inspect.Mounts.some((m) => m.Type === 'volume' && m.Destination === RAW_REPO_DIR);
}

/** What the gate compares for the volumes at REPO_DIR and RAW_REPO_DIR (undefined: no repo view). */
export interface RepoViewFacts {
  /** The volume mounted at REPO_DIR. */
  mounted: string;
  /** The sandbox's repo view volume by the naming rule. */
  expected: string;
  driver: string;
  options: Record<string, string>;
  /** The options derived again from the box's image and the sandbox's own and work volumes. */
  derived: ImageViewPlan;
  /** The volume at RAW_REPO_DIR, whether it is the sandbox's own plain volume, and read-only. */
  raw: { mounted: string; own: boolean; readOnly: boolean };
}

/** Reads what the gate's repo-view row needs, for a box with a volume at RAW_REPO_DIR. */
export async function repoViewFacts(inspect: ContainerInspect): Promise<RepoViewFacts | undefined> {
  const raw = inspect.Mounts.find((m) => m.Type === 'volume' && m.Destination === RAW_REPO_DIR);
  if (!raw) return undefined;
  const mount = inspect.Mounts.find((m) => m.Type === 'volume' && m.Destination === REPO_DIR);
  const sandboxId = inspect.Config.Labels[LABEL_ID] ?? '';
  const names = sandboxNames(sandboxId);
  const [volume, image, upper, work] = await Promise.all([
    mount?.Name ? engine.volume.find(mount.Name) : Promise.resolve(undefined),
    engine.image.inspect(inspect.Image ?? inspect.Config.Image),
    engine.volume.find(names.volume),
    engine.volume.find(names.repoView.work),
  ]);
  const ours = (found: VolumeInspect | undefined) =>
    plainOwn(found, sandboxId) ? (found?.Mountpoint ?? '') : '';
  return {
    mounted: mount?.Name ?? '',
    expected: names.repoView.view,
    driver: volume?.Driver ?? '',
    options: volume?.Labels[LABEL_ID] === sandboxId ? volume.Options : {},
    derived: image ? repoViewOptions(image, ours(upper), ours(work)) : { reason: 'the image is gone' },
    raw: {
      mounted: raw.Name ?? '',
      own: raw.Name === names.volume && plainOwn(upper, sandboxId),
      readOnly: raw.RW === false,
    },
  };
}

/** True when `facts` describe this sandbox's own repo view of the box's own image, its volume read-only beside. */
export function repoViewMatches(facts: RepoViewFacts): boolean {
  return (
    facts.mounted === facts.expected &&
    facts.driver === 'local' &&
    'driverOpts' in facts.derived &&
    sameOptions(facts.options, facts.derived.driverOpts) &&
    facts.raw.own &&
    facts.raw.readOnly
  );
}
