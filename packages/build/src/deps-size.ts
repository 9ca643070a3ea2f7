import { docker, SANDBOX_LABEL } from '@ca-sandbox/docker';

/** How often the running install's layer is measured (each look walks the layer: not too often). */
export const DEPS_SIZE_POLL_MS = 1500;

/**
 * The largest writable layer (`SizeRw`, bytes) among the running RUN containers of one build:
 * they carry its build labels, no sandbox label, and run one of the Dockerfile's RUN lines.
 */
export async function largestBuildLayer(
  buildLabels: Record<string, string>,
  dockerfile: string,
): Promise<number> {
  const filters = Object.entries(buildLabels).flatMap(([key, value]) => [
    '--filter',
    `label=${key}=${value}`,
  ]);
  const listed = await docker(['container', 'ls', '--no-trunc', '--quiet', ...filters], {
    allowFailure: true,
  });
  const ids = listed.stdout.split('\n').filter((id) => /^[0-9a-f]{64}$/.test(id));
  if (ids.length === 0) return 0;
  const inspected = await docker(['container', 'inspect', '--size', '--', ...ids], { allowFailure: true });
  let docs: unknown;
  try {
    docs = JSON.parse(inspected.stdout || '[]');
  } catch {
    return 0;
  }
  if (!Array.isArray(docs)) return 0;
  const runLines = new Set(dockerfile.split('\n').filter((line) => line.startsWith('RUN [')));
  let largest = 0;
  for (const doc of docs) {
    const d = doc as { SizeRw?: unknown; Config?: { Cmd?: unknown; Labels?: Record<string, string> | null } };
    if (d.Config?.Labels?.[SANDBOX_LABEL] !== undefined) continue;
    if (!runLines.has(`RUN ${JSON.stringify(d.Config?.Cmd)}`)) continue;
    if (typeof d.SizeRw === 'number' && d.SizeRw > largest) largest = d.SizeRw;
  }
  return largest;
}

/** Bytes an image adds on top of its base (`Size` of each, as `docker image inspect` reports). */
export async function depsImageBytes(image: string, baseImage: string): Promise<number> {
  const { stdout } = await docker(['image', 'inspect', '--format', '{{.Size}}', '--', image, baseImage]);
  const [own, base] = stdout
    .trim()
    .split('\n')
    .map((line) => Number(line.trim()));
  if (!Number.isFinite(own) || !Number.isFinite(base)) return Number.POSITIVE_INFINITY;
  return Math.max(0, (own as number) - (base as number));
}

/** A running watch of one build's install layer (watchInstallLayer). */
export interface LayerWatch {
  /** Ends the watch and waits for a look in progress. */
  stop(): Promise<void>;
  /** The size that crossed the cap (0 while none did). */
  readonly written: number;
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
      const seen = await largestBuildLayer(input.buildLabels, input.dockerfile).catch(() => 0);
      if (seen > input.maxDepsSize) {
        written = seen;
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
  };
}
