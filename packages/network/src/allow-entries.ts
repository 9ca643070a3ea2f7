import { quoteForMessage } from './_utils.js';
import { type Cidr, formatCidr, parseCidr } from './cidr.js';
import { InvalidAllowEntryError } from './errors.js';

const HOSTNAME =
  /^(?=.{1,253}\.?$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;
const MAX_ENTRIES = 256;

function entryError(entry: string): InvalidAllowEntryError {
  const shown = quoteForMessage(entry);
  if (entry.includes('%')) {
    return new InvalidAllowEntryError(
      entry,
      `invalid allowlist entry ${shown}: zone ids (%iface) are not allowed`,
    );
  }
  const host = entry.replace(/\/\d+$/, '');
  if (HOSTNAME.test(host) && /[a-z]/i.test(host) && !host.includes(':')) {
    return new InvalidAllowEntryError(
      entry,
      `allowlist entries must be IP addresses or CIDRs; resolve ${quoteForMessage(host)} yourself (e.g. dig +short ${host.slice(0, 80)}) and pass each address with --allow`,
    );
  }
  return new InvalidAllowEntryError(
    entry,
    `invalid allowlist entry ${shown}: expected an IPv4/IPv6 address or CIDR such as 203.0.113.7 or 2001:db8::/32`,
  );
}

/** Parses one entry to a block; InvalidAllowEntryError when it is not an address or CIDR. */
export function parseAllowEntry(entry: unknown): Cidr {
  if (typeof entry !== 'string') {
    throw new InvalidAllowEntryError(String(entry), 'invalid allowlist entry: expected a string');
  }
  const cidr = parseCidr(entry.trim());
  if (!cidr) throw entryError(entry.trim());
  return cidr;
}

/**
 * Validates `--allow` entries and returns them normalised as CIDRs (`10.1.2.3` → `10.1.2.3/32`,
 * `10.1.2.3/8` → `10.0.0.0/8`, IPv6 in RFC 5952 form), duplicates dropped, order kept.
 * A hostname is refused: resolving it here would pin whatever DNS answered once.
 */
export function parseAllowEntries(entries: readonly unknown[]): string[] {
  if (!Array.isArray(entries)) throw new InvalidAllowEntryError('', 'allowlist entries must be a list');
  if (entries.length > MAX_ENTRIES) {
    throw new InvalidAllowEntryError(
      '',
      `too many allowlist entries (${entries.length}, at most ${MAX_ENTRIES})`,
    );
  }
  const out: string[] = [];
  for (const entry of entries) {
    const normalised = formatCidr(parseAllowEntry(entry));
    if (!out.includes(normalised)) out.push(normalised);
  }
  return out;
}
