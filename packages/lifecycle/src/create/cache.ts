import { describeEviction, enforceCacheLimit, noteCacheUse, type PreparedImage } from '@ca-sandbox/build';
import type { CreateContext } from './context.js';

/** Notes the deps image's use as soon as the create has it (its last use orders eviction, and a
 * use in the last minutes keeps it from another create's eviction until this box has started). */
export async function noteImageUse(prepared: PreparedImage): Promise<void> {
  if (prepared.depsInstalled && prepared.image.startsWith('ca-sbx:')) await noteCacheUse(prepared.image);
}

/**
 * The image cache after a create: a create that built an image removes the least recently used ones until the cache fits
 * `cache.maxSize` (never the box's: it is in use). One line says what went. Best effort: the box
 * is ready, so a failure here is a notice, not a failed create.
 */
export async function keepImageCacheBounded(ctx: CreateContext, prepared: PreparedImage): Promise<void> {
  if (!prepared.depsInstalled || !prepared.image.startsWith('ca-sbx:') || prepared.cacheHit) return;
  try {
    const line = describeEviction(await enforceCacheLimit({ keep: [prepared.image], built: prepared.image }));
    if (line) ctx.progress.notice(line);
  } catch (error) {
    ctx.progress.notice(`image cache: not kept within cache.maxSize: ${(error as Error).message}`);
  }
}
