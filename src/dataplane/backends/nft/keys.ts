// Set-element keys as the kernel stores them: addresses and ports in network byte order,
// each part of a concatenation padded to a 32-bit register, interval sets as a start
// element and an interval-end element one past the last address (none at the very top).
import { addressBytes } from '../../../model/net.js';
import type { Family } from '../../render/model.js';
import { protocolNumber } from '../../render/policy.js';
import { ELEM_INTERVAL_END } from './consts.js';
import type { ElemSpec } from './op-writer.js';

export function parseAddr(addr: string, family: Family): Buffer {
  const out = addressBytes(addr);
  if (out.length !== (family === 4 ? 4 : 16)) throw new Error(`"${addr}" is not an IPv${family} address`);
  return out;
}

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * An address's key as hex: a set of hosts holds one per workload of the cluster, and the
 * split-and-reduce parse with its Buffer cost ~350 ns an IPv4 address (a cold render's
 * 100,000 members: 35 ms). Dotted quads are read a char at a time; anything else (IPv6,
 * or text that is not a plain quad) goes through parseAddr, which refuses what is wrong.
 */
export function addrKeyHex(addr: string, family: Family): string {
  if (family === 4 && addr.length <= 15) {
    let key = '';
    let octet = 0;
    let digits = 0;
    let dots = 0;
    for (let i = 0; i <= addr.length; i++) {
      const c = i < addr.length ? addr.charCodeAt(i) : 46;
      if (c === 46) {
        if (digits === 0 || octet > 255) break;
        key += HEX_BYTE[octet];
        octet = 0;
        digits = 0;
        dots++;
      } else if (c >= 48 && c <= 57 && digits < 3) {
        octet = octet * 10 + (c - 48);
        digits++;
      } else break;
    }
    if (dots === 4 && key.length === 8) return key;
  }
  return parseAddr(addr, family).toString('hex');
}

/** [first, last] of a CIDR, as address bytes. */
export function cidrRange(cidr: string, family: Family): [Buffer, Buffer] {
  const slash = cidr.indexOf('/');
  const addr = parseAddr(slash < 0 ? cidr : cidr.slice(0, slash), family);
  const bits = addr.length * 8;
  const len = slash < 0 ? bits : Number(cidr.slice(slash + 1));
  const first = Buffer.from(addr);
  const last = Buffer.from(addr);
  for (let bit = len; bit < bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    first[byte] = (first[byte] as number) & ~mask;
    last[byte] = (last[byte] as number) | mask;
  }
  return [first, last];
}

/** b + 1 in place; false when it wrapped (b was all ones). */
function increment(b: Buffer): boolean {
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i] !== 0xff) {
      b[i] = (b[i] as number) + 1;
      return true;
    }
    b[i] = 0;
  }
  return false;
}

/** Interval elements for [first, last]. */
export function intervalElems(first: Buffer, last: Buffer): ElemSpec[] {
  const end = Buffer.from(last);
  const out: ElemSpec[] = [{ key: first.toString('hex'), flags: 0 }];
  if (increment(end)) out.push({ key: end.toString('hex'), flags: ELEM_INTERVAL_END });
  return out;
}

export const cidrElems = (cidr: string, family: Family): ElemSpec[] => intervalElems(...cidrRange(cidr, family));

export function portKey(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(port);
  return b;
}

export function portRangeElems(first: number, last: number): ElemSpec[] {
  return intervalElems(portKey(first), portKey(last));
}

/** "10.0.0.1,tcp:80" -> addr . proto . port, each part register-padded. */
export function ipPortKey(member: string, family: Family): Buffer {
  const comma = member.indexOf(',');
  const [proto, port] = member.slice(comma + 1).split(':') as [string, string];
  const addr = parseAddr(member.slice(0, comma), family);
  const out = Buffer.alloc(addr.length + 8);
  addr.copy(out, 0);
  out[addr.length] = /^\d+$/.test(proto) ? Number(proto) : protocolNumber({ name: proto });
  out.writeUInt16BE(Number(port), addr.length + 4);
  return out;
}

export const IFNAMSIZ = 16;
export function ifnameKey(name: string): Buffer {
  const b = Buffer.alloc(IFNAMSIZ);
  b.write(name, 'latin1');
  return b;
}
