import { DockerNotFoundError, engine } from '@ca-sandbox/docker';

/** How often the running install's layer is measured (each look walks the layer: not too often). */
export const DEPS_SIZE_POLL_MS = 1500;

/** Bytes written in a container's layer (`SizeRw`), 0 when it is gone or the engine says nothing. */
export async function layerBytes(container: string): Promise<number> {
  const doc = await engine.container.inspect(container, { size: true }).catch(() => undefined);
  return typeof doc?.SizeRw === 'number' ? doc.SizeRw : 0;
}

/** Bytes an image adds on top of its base (`Size` of each, as `docker image inspect` reports). */
export async function depsImageBytes(image: string, baseImage: string): Promise<number> {
  const [own, base] = await Promise.all([engine.image.inspect(image), engine.image.inspect(baseImage)]);
  if (!own || !base)
    throw new DockerNotFoundError('image inspect', `No such image: ${own ? baseImage : image}`);
  if (typeof own.Size !== 'number' || typeof base.Size !== 'number') return Number.POSITIVE_INFINITY;
  return Math.max(0, own.Size - base.Size);
}

/** A running watch of one build's install layer (watchInstallLayer). */
export interface LayerWatch {
  /** Ends the watch and waits for a look in progress. */
  stop(): Promise<void>;
  /** The size that crossed the cap (0 while none did). */
  readonly written: number;
  /** The install layer's size at the last look (0 before the first). */
  readonly seen: number;
}

/**
 * Measures the install container's layer every DEPS_SIZE_POLL_MS and calls `onOverCap` once it
 * holds more than `maxDepsSize`: the install's writes land in its container's layer, so a disk
 * fill is stopped near the cap instead of running until the time limit. `stopped()` ends it early.
 */
export function watchInstallLayer(input: {
  container: string;
  maxDepsSize: number;
  stopped: () => boolean;
  onOverCap: () => void;
}): LayerWatch {
  let written = 0;
  let seen = 0;
  let watching = true;
  // The pause between looks ends at once on stop(): the build's end never waits out a poll.
  let wake: () => void = () => {};
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, DEPS_SIZE_POLL_MS);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const running = (async () => {
    while (watching && !input.stopped()) {
      await pause();
      if (!watching || input.stopped()) return;
      const looked = await layerBytes(input.container);
      // A look that found nothing (the container gone) keeps the last size.
      if (looked > 0) seen = looked;
      if (looked > input.maxDepsSize) {
        written = looked;
        input.onOverCap();
      }
    }
  })();
  return {
    async stop() {
      watching = false;
      wake();
      await running;
    },
    get written() {
      return written;
    },
    get seen() {
      return seen;
    },
  };
}
