import { docker, SANDBOX_LABEL } from '@ca-sandbox/docker';
import { LABEL_BUILD_ID } from './dockerfile.js';

/** How long a stopped build's RUN containers are waited for (the daemon removes them asynchronously). */
const CLEANUP_WAIT_MS = 15_000;

/** Removes a cache image (tests and `prune --images`); absent is fine. */
export async function removeImage(image: string): Promise<void> {
  await docker(['image', 'rm', '--force', '--', image], { allowFailure: true });
}

/**
 * Removes every image of one build (intermediate ones included), newest first so no image is
 * refused for having a child. The build id label is in our Dockerfile alone: nothing else has it.
 */
export async function removeBuildImages(buildId: string): Promise<void> {
  for (let pass = 0; pass < 5; pass++) {
    const listed = await docker(
      ['image', 'ls', '--all', '--quiet', '--no-trunc', '--filter', `label=${LABEL_BUILD_ID}=${buildId}`],
      { allowFailure: true },
    );
    const ids = [...new Set(listed.stdout.split('\n').filter((id) => /^sha256:[0-9a-f]{64}$/.test(id)))];
    if (ids.length === 0) return;
    // `image ls` lists newest first; a parent is removed with its last child.
    for (const id of ids) await docker(['image', 'rm', '--force', '--', id], { allowFailure: true });
  }
}

/**
 * Removes what is left of a stopped build: containers descending from the base image, created
 * since the build started, whose command is one of this Dockerfile's RUN instructions. Build
 * containers carry no label of ours, and nothing the build printed is trusted to name them, so
 * the three checks together keep every other container (boxes, other builds) out of reach.
 */
export async function removeBuildContainers(
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<void> {
  const deadline = Date.now() + CLEANUP_WAIT_MS;
  for (;;) {
    const ids = await leftoverBuildContainers(baseImage, dockerfile, startedAt);
    if (ids.length === 0) return;
    if (Date.now() > deadline) return;
    await docker(['rm', '--force', '--', ...ids], { allowFailure: true });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function leftoverBuildContainers(
  baseImage: string,
  dockerfile: string,
  startedAt: number,
): Promise<string[]> {
  const listed = await docker(['ps', '--all', '--no-trunc', '--quiet', '--filter', `ancestor=${baseImage}`], {
    allowFailure: true,
  });
  const ids = listed.stdout.split('\n').filter((id) => /^[0-9a-f]{64}$/.test(id));
  if (ids.length === 0) return [];
  const inspected = await docker(['container', 'inspect', '--', ...ids], { allowFailure: true });
  let docs: unknown;
  try {
    docs = JSON.parse(inspected.stdout || '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(docs)) return [];
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
      d.Config?.Labels?.[SANDBOX_LABEL] === undefined;
    return ours ? [d.Id as string] : [];
  });
}
