import { type DockerInfo, formatSize, parseSize, SIZE_SYNTAX } from '@ca-sandbox/docker';
import { BOX_LIMITS } from '@ca-sandbox/docker/contracts';
import { LimitError } from './errors.js';

// The defaults and bounds live in @ca-sandbox/docker/contracts (BOX_LIMITS), where the CLI's help
// and the MCP schema read them too; here they are enforced: the CLI and the MCP server pass what
// the user gave through, and LimitError names the option.
export { BOX_LIMITS };

export interface BoxLimits {
  memory: string;
  cpus: number;
  pids: number;
}

/** Bounds that need no engine: the size syntax, docker's minimums, our pids range. */
export function checkLimits(limits: Partial<BoxLimits>): void {
  const { memory, cpus, pids } = limits;
  if (memory !== undefined) {
    const bytes = parseSize(memory);
    if (bytes === undefined) throw new LimitError('memory', `'${memory}' is not ${SIZE_SYNTAX}`);
    if (bytes < BOX_LIMITS.memory.minBytes) {
      throw new LimitError(
        'memory',
        `${memory} is below docker's minimum of ${formatSize(BOX_LIMITS.memory.minBytes)}`,
      );
    }
  }
  if (cpus !== undefined && !(cpus >= BOX_LIMITS.cpus.min)) {
    throw new LimitError('cpus', `${cpus} is below docker's minimum of ${BOX_LIMITS.cpus.min}`);
  }
  if (
    pids !== undefined &&
    !(Number.isInteger(pids) && pids >= BOX_LIMITS.pids.min && pids <= BOX_LIMITS.pids.max)
  ) {
    throw new LimitError(
      'pids',
      `${pids} is not a whole number from ${BOX_LIMITS.pids.min} to ${BOX_LIMITS.pids.max}`,
    );
  }
}

/**
 * Fits memory and cpus to the engine: a value the caller chose and the engine cannot give is a
 * usage error naming the limit (docker would accept `--memory 100000g` and fail `--cpus 99` only
 * at `docker run`); a default the engine cannot give is lowered to what it has.
 */
export function fitToEngine(
  limits: BoxLimits,
  chosen: { memory: boolean; cpus: boolean },
  engine: Pick<DockerInfo, 'cpus' | 'memTotalBytes'>,
): BoxLimits {
  const fitted = { ...limits };
  if (engine.memTotalBytes > 0 && (parseSize(limits.memory) ?? 0) > engine.memTotalBytes) {
    if (chosen.memory) {
      throw new LimitError(
        'memory',
        `${limits.memory} is more than the docker engine's memory (${formatSize(engine.memTotalBytes)})`,
      );
    }
    fitted.memory = String(engine.memTotalBytes);
  }
  if (engine.cpus > 0 && limits.cpus > engine.cpus) {
    if (chosen.cpus) {
      throw new LimitError(
        'cpus',
        `${limits.cpus} is more than the docker engine's ${engine.cpus} cpu${engine.cpus === 1 ? '' : 's'}`,
      );
    }
    fitted.cpus = engine.cpus;
  }
  return fitted;
}
