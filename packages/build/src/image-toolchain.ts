import { engine } from '@ca-sandbox/docker';
import { PROXY_BUILD_ARGS } from './build-argv.js';
import { removeImage } from './build-cleanup.js';
import { formatToolchain, LABEL_TOOLCHAIN, parseToolchain, type Toolchain } from './toolchain.js';

/** An image's toolchain label; {} when it has none (an official image not seeded here). */
export async function imageToolchain(image: string): Promise<Toolchain> {
  const inspect = await engine.image.inspect(image).catch(() => undefined);
  return parseToolchain((inspect?.Config.Labels[LABEL_TOOLCHAIN] ?? '').trim());
}

/**
 * The toolchain is known only once the build ran: a second, instruction-only build adds it as a
 * label (no RUN, no network, no context: the Dockerfile comes on stdin). On failure the image goes.
 */
export async function labelToolchain(image: string, toolchain: Toolchain): Promise<void> {
  const dockerfile = `FROM ${image}\nLABEL ${LABEL_TOOLCHAIN}=${JSON.stringify(formatToolchain(toolchain))}\n`;
  const blankProxies = PROXY_BUILD_ARGS.flatMap((name) => ['--build-arg', `${name}=`]);
  const argv = ['build', '--quiet', '--network', 'none', ...blankProxies, '--tag', image, '-'];
  try {
    await engine.image.build(argv, { input: dockerfile });
  } catch (error) {
    await removeImage(image);
    throw error;
  }
}
