import { GITATTRIBUTES } from './autorun.js';
import type { ChangedFile } from './file-changes.js';
import { describe, isDepsLink, runsReason } from './file-changes.js';
import type { Listing } from './listing-format.js';

/** What the clone's listing says of the source as cloned. */
export interface CloneFacts {
  /** The commit checked out; null for a plain copy (no git). */
  commit: string | null;
  /** The kind of signature in the commit's header (never verified: no key is at hand). */
  signature: 'none' | 'pgp' | 'ssh' | 'x509' | 'other';
  /** Entries outside .git. */
  files: number;
  directories: number;
  symlinks: number;
  /** Bytes of the regular files outside .git, and inside it. */
  bytes: number;
  gitBytes: number;
  /** Entries already there at the clone that git or a host tool would run once copied out. */
  runs: ChangedFile[];
}

const SIGNATURE_KINDS: Record<string, CloneFacts['signature']> = {
  PGP_SIGNATURE: 'pgp',
  SSH_SIGNATURE: 'ssh',
  SIGNED_MESSAGE: 'x509',
};

export function cloneFacts(listing: Listing): CloneFacts {
  const drivers = new Set(listing.drivers ?? []);
  const facts: CloneFacts = {
    commit: listing.commit?.sha || null,
    signature: listing.commit?.signature ? (SIGNATURE_KINDS[listing.commit.signature] ?? 'other') : 'none',
    files: 0,
    directories: 0,
    symlinks: 0,
    bytes: 0,
    gitBytes: 0,
    runs: [],
  };
  for (const entry of listing.entries.values()) {
    // The clone made .git itself (copy-out withholds it): its size is said, its files not counted.
    if (entry.key === '.git' || entry.key.startsWith('.git/')) {
      if (entry.type === 'file') facts.gitBytes += entry.size;
      continue;
    }
    // A .gitattributes counts when its content selects a driver (the helper read it).
    const attributes = entry.key.split('/').at(-1) === GITATTRIBUTES;
    if (attributes ? drivers.has(entry.key) : runsReason(entry)) facts.runs.push(describe(entry));
    // The early box links node_modules beside the clone's listing: not counted as the source's.
    if (isDepsLink(entry)) continue;
    if (entry.type === 'directory') facts.directories += 1;
    else if (entry.type === 'symlink') facts.symlinks += 1;
    else if (entry.type === 'file') {
      facts.files += 1;
      facts.bytes += entry.size;
    }
  }
  facts.runs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return facts;
}
