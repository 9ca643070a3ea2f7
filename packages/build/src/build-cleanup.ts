import { engine, mayBeBuildStep } from '@ca-sandbox/docker';
import { LABEL_BUILD_ID } from './dockerfile.js';

/** How long a stopped build's RUN containers are waited for (the daemon removes them asynchronously). */
const CLEANUP_WAIT_MS = 15_000;

/** Removes a cache image (tests and `prune --images`); absent is fine. */
export async function removeImage(image: string): Promise<void> {
  await engine.image.remove(image, { force: true }).catch(() => false);
}

/**
 * Removes every image of one build (intermediate ones included), newest first so no image is
 * refused for having a child. The build id label is in our Dockerfile alone: nothing else has it.
 */
export async function removeBuildImages(buildId: string): Promise<void> {
  for (let pass = 0; pass < 5; pass++) {
    const listed = await engine.image
      .list({ all: true, labels: [`${LABEL_BUILD_ID}=${buildId}`] })
      .catch(() => []);
    const ids = [...new Set(listed.map((image) => image.id))];
    if (ids.length === 0) return;
    // The engine lists newest first; a parent is removed with its last child.
    for (const id of ids) await engine.image.remove(id, { force: true }).catch(() => false);
  }
}

/**
 * Removes what is left of a stopped build: containers carrying this build's id (the Dockerfile's
 * first LABEL, inherited by every RUN container after it), descending from the base image, created
 * since the build started, whose command is one of this Dockerfile's RUN instructions. The id is
 * what keeps other builds out of reach: two builds on one base run identical RUN lines (the setuid
 * strip, the toolchain probe), and removing another build's step container fails that build
 * ("removal of container … is already in progress"). Nothing the build printed names them.
 */
export async function removeBuildContainers(
  buildId: string,
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<void> {
  const deadline = Date.now() + CLEANUP_WAIT_MS;
  for (;;) {
    const ids = await leftoverBuildContainers(buildId, baseImage, dockerfile, startedAt);
    if (ids.length === 0) return;
    if (Date.now() > deadline) return;
    for (const id of ids) await engine.container.remove(id, { force: true }).catch(() => false);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export async function leftoverBuildContainers(
  buildId: string,
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<string[]> {
  const listed = await engine.container
    .list({ all: true, labels: [`${LABEL_BUILD_ID}=${buildId}`], filters: { ancestor: [baseImage] } })
    .catch(() => []);
  if (listed.length === 0) return [];
  // A container removed meanwhile is skipped.
  const docs = (
    await Promise.all(listed.map((item) => engine.container.inspect(item.id).catch(() => undefined)))
  ).filter((doc) => doc !== undefined);
  const runLines = new Set(dockerfile.split('\n').filter((line) => line.startsWith('RUN [')));
  // Slack for a daemon whose clock is a little behind ours.
  const since = startedAt - 60_000;
  return docs.flatMap((doc) => {
    const d = doc as {
      Id?: unknown;
      Created?: unknown;
      Config?: { Cmd?: unknown; Labels?: Record<string, string> | null };
    };
    const cmd = d.Config?.Cmd;
    const created = typeof d.Created === 'string' ? Date.parse(d.Created) : Number.NaN;
    const ours =
      typeof d.Id === 'string' &&
      Array.isArray(cmd) &&
      runLines.has(`RUN ${JSON.stringify(cmd)}`) &&
      created >= since &&
      d.Config?.Labels?.[LABEL_BUILD_ID] === buildId &&
      mayBeBuildStep(d.Config?.Labels ?? {});
    return ours ? [d.Id as string] : [];
  });
}
