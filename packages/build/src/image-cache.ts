import { CACHE_LABEL, CACHE_LABEL_REPO, CACHE_LABEL_SOURCE, docker } from '@ca-sandbox/docker';
import { LABEL_TOOLCHAIN } from './toolchain.js';

export const LABEL_CACHE_PROVIDER = 'ca.sandbox.cache.provider';
export const LABEL_CACHE_BUILDER = 'ca.sandbox.cache.builder';

/** More cache images of one repo than this are not looked at (the newest come first). */
const MAX_CACHED_TAGS = 64;

/**
 * Our cache images of one (sanitised) repo built from one source, by `name:tag`, with their
 * toolchain label: one `docker image ls` filtered by the cache labels (an image merely tagged
 * ca-sbx:* by someone else, or built from another source, is no hit), then one `image inspect` of
 * those tags. Source key and dephash are in the tag itself.
 */
export async function cachedImages(repoPart: string, source: string): Promise<Map<string, string>> {
  const { stdout } = await docker([
    'image',
    'ls',
    '--filter',
    `label=${CACHE_LABEL}=1`,
    '--filter',
    `label=${CACHE_LABEL_REPO}=${repoPart}`,
    '--filter',
    `label=${CACHE_LABEL_SOURCE}=${source}`,
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]);
  const tags = [
    ...new Set(
      stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line && !line.endsWith(':<none>')),
    ),
  ].slice(0, MAX_CACHED_TAGS);
  const out = new Map<string, string>();
  if (tags.length === 0) return out;
  const inspected = await docker(
    ['image', 'inspect', '--format', `{{ index .Config.Labels "${LABEL_TOOLCHAIN}" }}`, '--', ...tags],
    { allowFailure: true },
  );
  const values = inspected.stdout.split('\n');
  // One line per tag, in order; a tag removed meanwhile makes inspect fail: no labels, still a hit.
  for (const [i, tag] of tags.entries()) out.set(tag, inspected.exitCode === 0 ? (values[i] ?? '') : '');
  return out;
}
