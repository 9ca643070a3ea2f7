import { createHash } from 'node:crypto';
import type { ManifestFile } from './manifests.js';

/** What besides the manifests decides the dependency image. */
export interface DepHashKey {
  builder: string;
  builderVersion: string;
  /** `docker image inspect` Id of the resolved base image. */
  baseImageId: string;
  /** What the image gets besides the deps (`claude-code@<version>`): a distinct cache entry. */
  addOns?: readonly string[];
  /** The digest of the user's CA bundle the image trusts (ExtraCa.hash): a distinct cache entry. */
  ca?: string | undefined;
  /**
   * The provider a manifest-less root's source files chose (root-sources.ts): it selects the base
   * image, so it is a distinct cache entry.
   */
  rootProvider?: string | undefined;
}

/** Hex characters of the dephash: 96 bits, short enough for a readable tag. */
export const DEPHASH_LENGTH = 24;

function field(hash: ReturnType<typeof createHash>, value: string | Buffer): void {
  // Length-prefixed fields: no two different inputs concatenate to the same byte string.
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  hash.update(`${bytes.length}:`);
  hash.update(bytes);
}

/**
 * The dependency hash: sha256 over the builder, its version, the base image id and every
 * manifest's path and content, in path order. Independent of the input order, mtimes and modes
 * (they are not inputs); adding, removing, renaming or editing a manifest changes it.
 */
export function computeDepHash(files: readonly ManifestFile[], key: DepHashKey): string {
  const entries = files.map((file) => ({
    path: file.path,
    digest: createHash('sha256').update(file.content).digest('hex'),
  }));
  entries.sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : a.digest < b.digest ? -1 : a.digest > b.digest ? 1 : 0,
  );
  const hash = createHash('sha256');
  field(hash, 'ca-sandbox-dephash-v1');
  field(hash, key.builder);
  field(hash, key.builderVersion);
  field(hash, key.baseImageId);
  field(hash, String(entries.length));
  for (const entry of entries) {
    field(hash, entry.path);
    field(hash, entry.digest);
  }
  // Only when there are add-ons: every existing key keeps its hash.
  if (key.addOns?.length) {
    field(hash, 'add-ons');
    for (const addOn of [...key.addOns].sort()) field(hash, addOn);
  }
  // Only with a bundle: keys without one keep their hash.
  if (key.ca) {
    field(hash, 'ca');
    field(hash, key.ca);
  }
  // Only for a root chosen by its source files: every other key keeps its hash.
  if (key.rootProvider) {
    field(hash, 'root-provider');
    field(hash, key.rootProvider);
  }
  return hash.digest('hex').slice(0, DEPHASH_LENGTH);
}
