import { DockerNotFoundError, engine, mayBeBuildStep } from '@ca-sandbox/docker';

/** How often the running install's layer is measured (each look walks the layer: not too often). */
export const DEPS_SIZE_POLL_MS = 1500;

/**
 * The largest writable layer (`SizeRw`, bytes) among the running RUN containers of one build:
 * they carry its build labels (a sandbox's only with role build) and run one of the Dockerfile's RUN lines.
 */
export async function largestBuildLayer(
  buildLabels: Record<string, string>,
  dockerfile: string,
): Promise<number> {
  const labels = Object.entries(buildLabels).map(([key, value]) => `${key}=${value}`);
  const listed = await engine.container.list({ labels, all: false }).catch(() => []);
  if (listed.length === 0) return 0;
  // A container gone meanwhile is skipped; each look walks its layer (`size`).
  const docs = await Promise.all(
    listed.map((item) => engine.container.inspect(item.id, { size: true }).catch(() => undefined)),
  );
  const runLines = new Set(dockerfile.split('\n').filter((line) => line.startsWith('RUN [')));
  let largest = 0;
  for (const d of docs) {
    if (!d || !mayBeBuildStep(d.Config.Labels)) continue;
    if (!runLines.has(`RUN ${JSON.stringify(d.Config.Cmd)}`)) continue;
    if (typeof d.SizeRw === 'number' && d.SizeRw > largest) largest = d.SizeRw;
  }
  return largest;
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
 * Measures the build's running RUN layer every DEPS_SIZE_POLL_MS and calls `onOverCap` once it
 * holds more than `maxDepsSize`: the install's writes land in its RUN container's layer, so a disk
 * fill is stopped near the cap instead of running until the time limit. `stopped()` ends it early.
 */
export function watchInstallLayer(input: {
  buildLabels: Record<string, string>;
  dockerfile: string;
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
      const looked = await largestBuildLayer(input.buildLabels, input.dockerfile).catch(() => 0);
      // A look after the step ended finds no running RUN container: the last size stays.
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
