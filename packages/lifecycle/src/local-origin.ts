// The origin a local repo names, for the box's clone: a clone of a local directory is made from a
// staging copy, so its own origin would be that copy's path; the box gets the repo's real origin
// instead (as a URL clone keeps its URL), without credentials, or none at all.

import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { DirectoryScan } from './pack-local.js';

/** A `.git/config` larger than this is not read (a real one is a few KB). */
const MAX_CONFIG_BYTES = 256 * 1024;
const MAX_URL_LENGTH = 2048;
/** Network remotes only: a path or file:// URL of the host means nothing in the box. */
const NETWORK_URL = /^(?:https?|ssh|git):\/\/[^\s]+$/i;
const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$/;

/**
 * `remote.origin.url` from the text of a git config, when it is a plain network remote: the first
 * `url` of the `[remote "origin"]` section. Anything git would read differently from a plain
 * value (quotes, escapes, a comment, a control character) or that is not a network remote gives
 * undefined: the box then has no origin, as before.
 */
export function originUrlFromConfig(text: string): string | undefined {
  let inOrigin = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      inOrigin = /^\[remote "origin"\]$/i.test(line);
      continue;
    }
    if (!inOrigin) continue;
    const match = /^url\s*=\s*(.*)$/i.exec(line);
    if (!match) continue;
    const value = match[1] ?? '';
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
    if (value.length > MAX_URL_LENGTH || /["\\#;\u0000-\u001f\u007f]/.test(value)) return undefined;
    if (NETWORK_URL.test(value)) return withoutCredentials(value);
    if (SCP_LIKE.test(value) && !value.startsWith('-')) return value;
    return undefined;
  }
  return undefined;
}

/**
 * A URL without `user:token@` and without a query (`?private_token=…`, `?access_token=…`): a token
 * in a local remote never reaches the box. git appends its own path to a remote URL, so a query
 * never worked as part of one; only a token rides there. An ssh user (`git@`) names the account,
 * not a secret, and stays, as in a URL clone.
 */
function withoutCredentials(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== 'ssh:') url.username = '';
    url.password = '';
    url.search = '';
    return url.toString();
  } catch {
    return undefined;
  }
}

/**
 * The origin of a scanned local repo, read from the `.git/config` the scan saw as a regular file
 * (never through a symlink: opened with O_NOFOLLOW, so a config swapped for a link to a host file
 * fails here and the box simply gets no origin).
 */
export async function localOrigin(scan: DirectoryScan): Promise<string | undefined> {
  const entry = scan.entries.find((candidate) => candidate.path === '.git/config');
  if (!scan.gitRepo || entry?.type !== 'file' || entry.size > MAX_CONFIG_BYTES) return undefined;
  try {
    const handle = await open(join(scan.root, entry.path), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const buffer = Buffer.alloc(MAX_CONFIG_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_CONFIG_BYTES, 0);
      return originUrlFromConfig(buffer.subarray(0, bytesRead).toString('utf8'));
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}
