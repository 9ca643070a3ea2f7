import { type DockerEngineError, engine, inertContainerConfig, isNameConflict } from '@ca-sandbox/docker';
import { DEPS_DIR, DEPS_SRC } from '@ca-sandbox/docker/contracts';
import { DepsLayerError } from './errors.js';

/**
 * Before an image is labeled for a repo view (@ca-sandbox/docker repo-view.ts): its install
 * layer's /deps/src becomes an overlay's lowerdir, which the kernel resolves on the HOST, so a
 * link there (or at /deps) would name a host path. The engine's own stat of both, in a container
 * of the image that is created and never started: no process of the image or of the install step
 * runs, so nothing of the repo's can answer for them or change them in between (the step's own
 * last-line check is only an early failure: a process of the step might have tampered with the
 * shell that ran it). Throws DepsLayerError; the caller removes the build's images.
 */
export async function assertDepsViewLower(
  imageId: string,
  image: string,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  const config = inertContainerConfig(imageId, labels);
  await engine.container.create(name, config).catch(async (error: DockerEngineError) => {
    // A container of that name left by a killed build of the same id: ours, replaced.
    if (!isNameConflict(error)) throw error;
    await engine.container.remove(name, { force: true });
    await engine.container.create(name, config);
  });
  try {
    for (const path of [DEPS_DIR, DEPS_SRC]) {
      const seen = await engine.container.statPath(name, path);
      if (seen?.kind !== 'directory')
        throw new DepsLayerError(
          image,
          seen ? `${path} as a ${seen.kind}${seen.linkTarget ? ` to ${seen.linkTarget}` : ''}` : `no ${path}`,
        );
    }
  } finally {
    await engine.container.remove(name, { force: true });
  }
}
