import { engine } from '@ca-sandbox/docker';
import { InvariantError } from '@ca-sandbox/docker/contracts';
import { envValue } from './dockerfile.js';
import { LABEL_TOOLCHAIN, parseToolchain, type Toolchain } from './toolchain.js';

/** An image's toolchain label; {} when it has none (an official image not seeded here). */
export async function imageToolchain(image: string): Promise<Toolchain> {
  const inspect = await engine.image.inspect(image).catch(() => undefined);
  return parseToolchain((inspect?.Config.Labels[LABEL_TOOLCHAIN] ?? '').trim());
}

const LABEL_KEY = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/**
 * One LABEL instruction for every label (the Claude Code image's): the legacy builder commits a
 * step per instruction (and per `--label` flag). Values are quoted and escaped as ENV values are (no `$` substitution); a
 * control character, which no Dockerfile line can hold, is refused.
 */
export function labelInstruction(labels: Record<string, string>): string {
  const pairs = Object.entries(labels).map(([key, value]) => {
    if (!LABEL_KEY.test(key))
      throw new InvariantError(`invalid label name ${JSON.stringify(key.slice(0, 100))}`);
    return `${key}=${envValue({ name: key, value })}`;
  });
  if (pairs.length === 0) throw new InvariantError('no label to set');
  return `LABEL ${pairs.join(' ')}`;
}
