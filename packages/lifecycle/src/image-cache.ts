import { type CacheImage, cacheLimit, listCacheImages } from '@ca-sandbox/build';
import { redactUserinfo } from './source.js';

export type { CacheImage };

/** The deps image cache as `ls --images` shows it: each image and what the cache holds. */
export interface ImageCacheListing {
  images: CacheImage[];
  /** Bytes the images hold (their own layers: what removing them frees). */
  totalBytes: number;
  /** The bound `cache.maxSize` gives (null: off). */
  limitBytes: number | null;
  limitDescribed: string;
}

/** The cache images, least recently used first (the first to go when the cache is over its bound). */
export async function listImageCache(): Promise<ImageCacheListing> {
  const [images, limit] = await Promise.all([listCacheImages(), cacheLimit()]);
  // Images built before every userinfo was masked may carry a token in the source label.
  const shown = images.map((image) => ({ ...image, source: redactUserinfo(image.source) }));
  return {
    images: shown,
    totalBytes: shown.reduce((sum, image) => sum + image.bytes, 0),
    limitBytes: limit.bytes ?? null,
    limitDescribed: limit.described,
  };
}
