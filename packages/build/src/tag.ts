import { createHash } from 'node:crypto';
import { CACHE_IMAGE_REPOSITORY } from '@ca-sandbox/docker';

/** Longest sanitised repo part of a tag (docker tags are at most 128 characters). */
export const MAX_REPO_PART = 64;

/**
 * A repo name made safe for a docker tag: lowercase `[a-z0-9._-]`, starting with `[a-z0-9]`,
 * bounded. When sanitising changed the name, 8 hex of the raw name's sha256 are appended so two
 * different names never share a tag (`Foo` vs `foo`, `a/b` vs `a-b`).
 */
export function sanitiseRepoName(raw: string): string {
  const clean = raw
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/[-._]{2,}/g, (run) => run[0] ?? '-')
    .replace(/^[^a-z0-9]+/, '')
    .replace(/[^a-z0-9]+$/, '');
  if (clean && clean === raw && clean.length <= MAX_REPO_PART) return clean;
  const suffix = createHash('sha256').update(raw, 'utf8').digest('hex').slice(0, 8);
  const head = clean.slice(0, MAX_REPO_PART - suffix.length - 1).replace(/[^a-z0-9]+$/, '');
  return `${head || 'repo'}-${suffix}`;
}

/** Hex digits of the source key in a tag: 64 bits, so two sources never meet by chance. */
export const SOURCE_KEY_LENGTH = 16;

/**
 * The part of a cache tag that names the source: a digest of its identity (URL without
 * credentials, or a local directory's realpath). Two sources with the same short name and the same
 * manifests must never share a deps image: an install is the repo's code, and its output is what
 * the next box runs.
 */
export function sourceKey(source: string): string {
  return createHash('sha256').update(source, 'utf8').digest('hex').slice(0, SOURCE_KEY_LENGTH);
}

/**
 * `ca-sbx:<sanitised repo>-<source key>-<dephash>`: always a valid, bounded docker reference,
 * keyed by the source as well as the manifests.
 */
export function imageTag(repoName: string, dephash: string, source: string): string {
  const hash =
    dephash
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 64) || 'none';
  return `${CACHE_IMAGE_REPOSITORY}:${sanitiseRepoName(repoName)}-${sourceKey(source)}-${hash}`;
}
