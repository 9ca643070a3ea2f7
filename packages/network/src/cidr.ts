/** An address block: family, network bits (host bits zero) and prefix length. */
export interface Cidr {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
}

const OCTET = /^(0|[1-9][0-9]{0,2})$/;
const PREFIX = /^(0|[1-9][0-9]{0,2})$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

/** Parses a dotted-quad IPv4 address (no leading zeros: `010` would be octal elsewhere). */
export function parseIPv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

/** Parses an IPv6 address (`::` compression and a trailing embedded IPv4 allowed; no zone id). */
export function parseIPv6(text: string): bigint | undefined {
  if (text.length > 45 || !text.includes(':')) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const groups: bigint[] = [];
  const readGroups = (list: string[], isLast: boolean): bigint[] | undefined => {
    const out: bigint[] = [];
    for (let i = 0; i < list.length; i += 1) {
      const word = list[i] as string;
      if (isLast && i === list.length - 1 && word.includes('.')) {
        const v4 = parseIPv4(word);
        if (v4 === undefined) return undefined;
        out.push(v4 >> 16n, v4 & 0xffffn);
      } else if (HEXTET.test(word)) out.push(BigInt(`0x${word}`));
      else return undefined;
    }
    return out;
  };
  const headGroups = readGroups(head, halves.length === 1);
  const tailGroups = readGroups(tail, true);
  if (!headGroups || !tailGroups) return undefined;
  const count = headGroups.length + tailGroups.length;
  if (halves.length === 1) {
    if (count !== 8) return undefined;
    groups.push(...headGroups);
  } else {
    if (count > 7) return undefined;
    groups.push(...headGroups, ...Array<bigint>(8 - count).fill(0n), ...tailGroups);
  }
  return groups.reduce((acc, group) => (acc << 16n) | group, 0n);
}

function width(family: 4 | 6): number {
  return family === 4 ? 32 : 128;
}

function mask(family: 4 | 6, prefix: number): bigint {
  const total = width(family);
  return ((1n << BigInt(prefix)) - 1n) << BigInt(total - prefix);
}

/** Parses `addr` or `addr/prefix`; host bits are cleared. Undefined when not an IP or CIDR. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const prefixText = slash === -1 ? undefined : text.slice(slash + 1);
  const v4 = parseIPv4(address);
  const family: 4 | 6 | undefined = v4 !== undefined ? 4 : parseIPv6(address) !== undefined ? 6 : undefined;
  if (family === undefined) return undefined;
  const bits = (v4 ?? parseIPv6(address)) as bigint;
  let prefix = width(family);
  if (prefixText !== undefined) {
    if (!PREFIX.test(prefixText) || Number(prefixText) > width(family)) return undefined;
    prefix = Number(prefixText);
  }
  return { family, bits: bits & mask(family, prefix), prefix };
}

function formatIPv4(bits: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((bits >> shift) & 0xffn)).join('.');
}

/** RFC 5952 text: lower case, no leading zeros, the longest run (>1) of zero groups as `::`. */
function formatIPv6(bits: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((bits >> BigInt(112 - i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** `network/prefix`, always with the prefix. */
export function formatCidr(cidr: Cidr): string {
  const address = cidr.family === 4 ? formatIPv4(cidr.bits) : formatIPv6(cidr.bits);
  return `${address}/${cidr.prefix}`;
}

/** True when every address of `inner` is inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  return (inner.bits & mask(outer.family, outer.prefix)) === outer.bits;
}
