import { CACHE_LABEL, CACHE_LABEL_REPO, CACHE_LABEL_SOURCE, engine } from '@ca-sandbox/docker';
import { LABEL_TOOLCHAIN } from './toolchain.js';

export const LABEL_CACHE_PROVIDER = 'ca.sandbox.cache.provider';
export const LABEL_CACHE_BUILDER = 'ca.sandbox.cache.builder';

/** More cache images of one repo than this are not looked at (the newest come first). */
const MAX_CACHED_TAGS = 64;

/**
 * Our cache images of one (sanitised) repo built from one source, by `name:tag`, with their
 * toolchain label: one `docker image ls` filtered by the cache labels (an image merely tagged
 * ca-sbx:* by someone else, or built from another source, is no hit), then an inspect of each of
 * those tags, side by side. Source key and dephash are in the tag itself.
 */
export async function cachedImages(repoPart: string, source: string): Promise<Map<string, string>> {
  const images = await engine.image.list({
    labels: [`${CACHE_LABEL}=1`, `${CACHE_LABEL_REPO}=${repoPart}`, `${CACHE_LABEL_SOURCE}=${source}`],
  });
  const tags = [...new Set(images.flatMap((image) => image.tags))].slice(0, MAX_CACHED_TAGS);
  const out = new Map<string, string>();
  // A tag removed meanwhile: no labels, still a hit (as before).
  const inspected = await Promise.all(tags.map((tag) => engine.image.inspect(tag).catch(() => undefined)));
  for (const [i, tag] of tags.entries()) out.set(tag, inspected[i]?.Config.Labels[LABEL_TOOLCHAIN] ?? '');
  return out;
}
