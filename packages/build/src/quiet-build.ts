import { engine } from '@ca-sandbox/docker';
import { ImageBuildError, ImageBuildTimeoutError } from './errors.js';
import { meaningfulLines } from './install-log.js';

export interface QuietBuildInput {
  argv: string[];
  /** The image it makes, as the errors name it. */
  image: string;
  timeoutMs: number;
  /** The build's memory limit, for the error's out-of-memory hint. */
  memory: string;
  signal?: AbortSignal;
  /** Removes what the build made (its step images, a tag): run before any error is thrown. */
  cleanup: () => Promise<void>;
}

/** Lines of output read for the failure's meaningful lines. */
const TAIL_LINES = 200;

/**
 * A short build of ours whose output matters only when it fails (the prep image, Claude Code's
 * image; the deps build is supervised line by line in run-build.ts): killed by its time limit or
 * the abort signal, or failed, it leaves nothing (`cleanup`) and says why.
 */
export async function runQuietBuild(input: QuietBuildInput): Promise<void> {
  const result = await engine.image
    .build(input.argv, {
      allowFailure: true,
      timeoutMs: input.timeoutMs,
      ...(input.signal ? { signal: input.signal } : {}),
    })
    .catch(async (error: unknown) => {
      await input.cleanup();
      if (input.signal?.aborted) throw error;
      throw new ImageBuildTimeoutError(input.image, input.timeoutMs, String((error as Error).message));
    });
  if (result.exitCode === 0) return;
  await input.cleanup();
  const output = `${result.stdout}\n${result.stderr}`;
  const details = meaningfulLines(output.split('\n').slice(-TAIL_LINES));
  throw new ImageBuildError(input.image, result.exitCode, output, input.memory, { details });
}
