import { engine } from '@ca-sandbox/docker';
import { LABEL_BUILD_ID } from './dockerfile.js';

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
