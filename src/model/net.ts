// CIDR parsing and normalisation, as Calico's cnet.ParseCIDROrIP + Network(): a bare
// address is a /32 (or /128), and host bits are masked off ("10.0.0.5/8" -> "10.0.0.0/8").
import { isIPv4, isIPv6 } from 'node:net';

export interface Cidr {
  version: 4 | 6;
  /** Network address, canonical text form. */
  address: string;
  prefix: number;
  /** `${address}/${prefix}` */
  text: string;
}

function v4ToInt(a: string): number {
  return a.split('.').reduce((n, p) => n * 256 + Number(p), 0);
}

function intToV4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

function v6ToBig(a: string): bigint {
  let head = a;
  let tail = '';
  const dbl = a.indexOf('::');
  if (dbl >= 0) {
    head = a.slice(0, dbl);
    tail = a.slice(dbl + 2);
  }
  const parse = (s: string): number[] => {
    if (s === '') return [];
    const out: number[] = [];
    for (const part of s.split(':')) {
      if (part.includes('.')) {
        const v4 = v4ToInt(part);
        out.push((v4 >>> 16) & 0xffff, v4 & 0xffff);
      } else {
        out.push(parseInt(part, 16));
      }
    }
    return out;
  };
  const h = parse(head);
  const t = parse(tail);
  const groups = dbl >= 0 ? [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t] : h;
  return groups.reduce((n, g) => (n << 16n) | BigInt(g), 0n);
}

// RFC 5952 text: lower case, longest run (>= 2) of zero groups as "::".
function bigToV6(n: bigint): string {
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/**
 * Where `text` starts with a canonical dotted quad (four octets 0-255 without leading
 * zeros) the index just past it, else -1: the quick test for the endpoint addresses
 * that make up nearly every CIDR a node parses (isIPv4 is a regular expression).
 */
function dottedQuadEnd(text: string): number {
  let i = 0;
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (text.charCodeAt(i) !== 46 /* . */) return -1;
      i++;
    }
    const start = i;
    let value = 0;
    for (let c = text.charCodeAt(i); c >= 48 && c <= 57 && i - start < 3; c = text.charCodeAt(++i))
      value = value * 10 + c - 48;
    const len = i - start;
    if (len === 0 || value > 255 || (len > 1 && text.charCodeAt(start) === 48)) return -1;
  }
  return i;
}

/**
 * True when `text` is an IPv4 host CIDR already in canonical form ("10.0.0.1/32"), what
 * the CNI plugin writes for every pod: it is then its own normal form, and parsing it
 * into a Cidr would only make garbage.
 */
export function isCanonicalV4Host(text: string): boolean {
  return slash32After(text, dottedQuadEnd(text));
}

// The text is a dotted quad ending at `end` (dottedQuadEnd's answer), then "/32".
function slash32After(text: string, end: number): boolean {
  return end > 0 && end === text.length - 3 && text.endsWith('/32');
}

/** Parses "a.b.c.d[/n]" or an IPv6 address with optional prefix; undefined if invalid. */
export function parseCidr(text: string): Cidr | undefined {
  // A host address, bare or /32, in canonical form: nothing to mask or rewrite.
  const end = dottedQuadEnd(text);
  if (end === text.length) return { version: 4, address: text, prefix: 32, text: `${text}/32` };
  if (slash32After(text, end)) return { version: 4, address: text.slice(0, end), prefix: 32, text };
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1);
  const version = isIPv4(addr) ? 4 : isIPv6(addr) && !addr.includes('%') ? 6 : 0;
  if (version === 0) return undefined;
  const bits = version === 4 ? 32 : 128;
  let prefix = bits;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) return undefined;
    prefix = Number(prefixText);
    if (prefix > bits) return undefined;
  }
  // Node's isIPv4 admits no leading zeros, so a valid host address is already canonical
  // (its prefix text may not be: "/032").
  if (version === 4 && prefix === 32) return { version, address: addr, prefix, text: `${addr}/32` };
  let address: string;
  if (version === 4) {
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    address = intToV4((v4ToInt(addr) & mask) >>> 0);
  } else {
    const mask = prefix === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - prefix)) - 1n);
    address = bigToV6(v6ToBig(addr) & mask);
  }
  return { version, address, prefix, text: `${address}/${prefix}` };
}

/** An address ("10.0.0.1", "fd00::1") as an unsigned integer: 32 bits for IPv4, 128 for IPv6. */
export function addressToBigInt(addr: string): bigint {
  return addr.includes(':') ? v6ToBig(addr) : BigInt(v4ToInt(addr));
}

/** An address in network byte order: 4 bytes for IPv4, 16 for IPv6. */
/**
 * Writes an already-validated address's bytes at `at` (4 for IPv4, 16 for IPv6) without
 * allocating: route batches encode tens of thousands of them per apply.
 */
export function writeAddress(buf: Uint8Array, at: number, addr: string): void {
  if (addr.includes(':')) {
    buf.set(addressBytes(addr), at);
    return;
  }
  let octet = 0;
  let k = at;
  for (let i = 0; i < addr.length; i++) {
    const c = addr.charCodeAt(i);
    if (c === 46) {
      buf[k++] = octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 48);
    }
  }
  buf[k] = octet;
}

export function addressBytes(addr: string): Buffer {
  const v6 = addr.includes(':');
  const out = Buffer.alloc(v6 ? 16 : 4);
  if (v6) {
    const n = v6ToBig(addr);
    for (let i = 0; i < 8; i++) out.writeUInt16BE(Number((n >> BigInt((7 - i) * 16)) & 0xffffn), i * 2);
  } else {
    out.writeUInt32BE(v4ToInt(addr));
  }
  return out;
}

/** Parses a bare IP address (no prefix); undefined if invalid. */
export function parseIp(text: string): { version: 4 | 6; address: string } | undefined {
  if (text.includes('/')) return undefined;
  const c = parseCidr(text);
  return c && { version: c.version, address: c.address };
}

/** The address of "192.0.2.1/24" or "192.0.2.1" (a host's own address, not its network); undefined if invalid. */
export function hostAddress(text: string): string | undefined {
  return parseIp(text.split('/')[0] as string)?.address;
}

/** An unsigned integer as an address of `version` (the inverse of addressToBigInt). */
export function bigIntToAddress(n: bigint, version: 4 | 6): string {
  return version === 4 ? intToV4(Number(n & 0xffffffffn)) : bigToV6(n);
}

/** Whether `cidr` contains `address` (same family). */
export function cidrContains(cidr: Cidr, address: string): boolean {
  if (address.includes(':') !== (cidr.version === 6)) return false;
  const bits = cidr.version === 4 ? 32n : 128n;
  const shift = bits - BigInt(cidr.prefix);
  return addressToBigInt(address) >> shift === addressToBigInt(cidr.address) >> shift;
}

/**
 * Every CIDR containing `cidr`, from /0 down to itself, in canonical form (the candidates
 * of a longest-prefix walk). IPv4 by integer masking; IPv6 through parseCidr.
 */
export function containingCidrs(cidr: Cidr): string[] {
  const out: string[] = [];
  if (cidr.version === 4) {
    const n = v4ToInt(cidr.address);
    for (let len = 0; len <= cidr.prefix; len++) {
      const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
      out.push(`${intToV4((n & mask) >>> 0)}/${len}`);
    }
    return out;
  }
  for (let len = 0; len <= cidr.prefix; len++) out.push(parseCidr(`${cidr.address}/${len}`)?.text as string);
  return out;
}
