import { engine } from '@ca-sandbox/docker';
import { InvariantError } from '@ca-sandbox/docker/contracts';
import { PROXY_BUILD_ARGS } from './build-argv.js';
import { envValue } from './dockerfile.js';
import { LABEL_TOOLCHAIN, parseToolchain, type Toolchain } from './toolchain.js';

/** An image's toolchain label; {} when it has none (an official image not seeded here). */
export async function imageToolchain(image: string): Promise<Toolchain> {
  const inspect = await engine.image.inspect(image).catch(() => undefined);
  return parseToolchain((inspect?.Config.Labels[LABEL_TOOLCHAIN] ?? '').trim());
}

const LABEL_KEY = /^[a-z0-9][a-z0-9._-]{0,127}$/;
const IMAGE_ID = /^sha256:[0-9a-f]{64}$/;

/**
 * One LABEL instruction for every label: the legacy builder commits a step per instruction (and
 * per `--label` flag). Values are quoted and escaped as ENV values are (no `$` substitution); a
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

/**
 * Tags a built deps image, untagged until now, as `tag` with its labels (the cache labels and the
 * toolchain the build's probe found, known only once the build ran): a second, instruction-only
 * build of one LABEL step (no RUN, no network, no context: the Dockerfile comes on stdin). The tag
 * appears only on the complete image. On failure the caller removes the build's images.
 */
export async function labelImage(
  imageId: string,
  tag: string,
  labels: Record<string, string>,
): Promise<void> {
  if (!IMAGE_ID.test(imageId))
    throw new InvariantError(`invalid image id ${JSON.stringify(imageId.slice(0, 100))}`);
  const dockerfile = `FROM ${imageId}\n${labelInstruction(labels)}\n`;
  const blankProxies = PROXY_BUILD_ARGS.flatMap((name) => ['--build-arg', `${name}=`]);
  await engine.image.build(['build', '--quiet', '--network', 'none', ...blankProxies, '--tag', tag, '-'], {
    input: dockerfile,
  });
}
