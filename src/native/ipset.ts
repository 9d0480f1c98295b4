// Typed access to the native IP sets (native/ipset): one batch of commands per call,
// encoded as the op stream native/ipset/ipset.h reads; members travel as fixed-size
// records, so a million of them cross the boundary as one buffer.
import { addressBytes, parseIp } from '../model/net.js';
import { native } from './load.js';
import type { RawIpset, RawIpsetResult } from './raw.js';

export type IpsetType = 'hash:ip' | 'hash:net' | 'hash:ip,port';
export type IpsetFamily = 4 | 6;
export type ListedIpset = RawIpset;
export type IpsetResult = RawIpsetResult;

const OP = { create: 1, destroy: 2, flush: 3, swap: 4, add: 5, del: 6 } as const;
const TYPE: Record<IpsetType, number> = { 'hash:ip': 1, 'hash:net': 2, 'hash:ip,port': 3 };
const PROTO: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, udplite: 136 };
const MEMBER_SIZE = 20;
export const MAX_SET_NAME = 31;

export type IpsetOp =
  /** `hashsize`: the hash's initial buckets (0 or absent: the kernel's 1,024, grown as it fills). */
  | { op: 'create'; name: string; type: IpsetType; family: IpsetFamily; maxelem: number; hashsize?: number }
  | { op: 'destroy' | 'flush'; name: string }
  | { op: 'swap'; name: string; other: string }
  /** Members as ipset writes them: "10.0.0.1", "10.0.0.0/8", "10.0.0.1,tcp:80". */
  | { op: 'add' | 'del'; name: string; type: IpsetType; family: IpsetFamily; members: readonly string[] };

/**
 * The buckets a set created with `members` starts with: as many as members (rounded up to
 * a power of two, as the kernel rounds it), at most as many as it may ever hold. The
 * kernel starts a hash at 1,024 buckets and grows it as it fills, rehashing every member
 * each time, and a bucket holds up to 12 before: 1,000,000 members went into a set of the
 * default size in 1.1-1.3 s, into one of a million buckets in 0.63-0.68 s, which then
 * takes 29 MB of kernel memory where the grown one took 25 MB. 0 (the kernel's default)
 * for a set of up to 1,024.
 */
export function initialHashsize(members: number, maxelem: number): number {
  const n = Math.min(members, maxelem);
  if (n <= 1024) return 0;
  return 2 ** Math.ceil(Math.log2(n));
}

function nameBytes(name: string): Buffer {
  const b = Buffer.from(name, 'latin1');
  if (b.length === 0 || b.length > MAX_SET_NAME || !/^[\x21-\x7e]+$/.test(name))
    throw new Error(`invalid IP set name "${name}"`);
  return Buffer.concat([Buffer.from([b.length]), b]);
}

/**
 * Writes a dotted-quad IPv4 address at `at` without allocating (the hot path: a million
 * members is a million calls); false if `s[from, to)` is not one.
 */
function putV4(s: string, from: number, to: number, out: Buffer, at: number): boolean {
  let octet = 0;
  let digits = 0;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || n === 3) return false;
      out[at + n++] = octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && digits < 3) {
      octet = octet * 10 + (c - 48);
      if (octet > 255) return false;
      digits++;
    } else return false;
  }
  if (digits === 0 || n !== 3) return false;
  out[at + 3] = octet;
  return true;
}

/** One member as its fixed-size record: address, prefix, protocol, port. */
function memberBytes(member: string, type: IpsetType, family: IpsetFamily, out: Buffer, at: number): void {
  if (family === 4 && type === 'hash:ip' && putV4(member, 0, member.length, out, at)) {
    out[at + 16] = 32;
    return;
  }
  let addr = member;
  let prefix = family === 4 ? 32 : 128;
  let proto = 0;
  let port = 0;
  if (type === 'hash:ip,port') {
    const m = /^(.+),(tcp|udp|sctp|udplite):(\d+)$/.exec(member);
    if (!m) throw new Error(`invalid ${type} member "${member}"`);
    [addr, proto, port] = [m[1] as string, PROTO[m[2] as string] as number, Number(m[3])];
    if (port > 65535) throw new Error(`invalid ${type} member "${member}": port out of range`);
  } else if (member.includes('/')) {
    const [a, p] = member.split('/') as [string, string];
    [addr, prefix] = [a, /^\d{1,3}$/.test(p) ? Number(p) : -1];
    if (prefix < (type === 'hash:net' ? 1 : family === 4 ? 32 : 128) || prefix > (family === 4 ? 32 : 128))
      throw new Error(`invalid ${type} member "${member}"`);
  }
  const ip = parseIp(addr);
  if (!ip || ip.version !== family) throw new Error(`member "${member}" is not an IPv${family} ${type} member`);
  const bytes = addressBytes(ip.address);
  bytes.copy(out, at);
  out[at + 16] = prefix;
  out[at + 17] = proto;
  out.writeUInt16LE(port, at + 18);
}

export function encodeIpsetOps(ops: readonly IpsetOp[]): Uint8Array {
  const steps = encodeIpsetOpsSteps(ops);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Members encoded between two turns of the event loop. */
const ENCODE_CHUNK = 8192;

/** encodeIpsetOps() in steps (a yield every 8,192 members): a cold node's sets hold 100,000 members and more. */
export function* encodeIpsetOpsSteps(ops: readonly IpsetOp[]): Generator<void, Uint8Array, undefined> {
  const parts: Buffer[] = [];
  for (let tag = 0; tag < ops.length; tag++) {
    const o = ops[tag] as IpsetOp;
    const head = Buffer.alloc(5);
    head[0] = OP[o.op];
    head.writeUInt32LE(tag, 1);
    parts.push(head, nameBytes(o.name));
    if (o.op === 'create') {
      const b = Buffer.alloc(10);
      b[0] = TYPE[o.type];
      b[1] = o.family;
      b.writeUInt32LE(o.maxelem, 2);
      b.writeUInt32LE(o.hashsize ?? 0, 6);
      parts.push(b);
    } else if (o.op === 'swap') {
      parts.push(nameBytes(o.other));
    } else if (o.op === 'add' || o.op === 'del') {
      const b = Buffer.alloc(6 + o.members.length * MEMBER_SIZE);
      b[0] = o.family;
      b[1] = TYPE[o.type];
      b.writeUInt32LE(o.members.length, 2);
      for (let i = 0; i < o.members.length; i++) {
        if ((i & (ENCODE_CHUNK - 1)) === ENCODE_CHUNK - 1) yield;
        memberBytes(o.members[i] as string, o.type, o.family, b, 6 + i * MEMBER_SIZE);
      }
      parts.push(b);
    }
    yield;
  }
  return Buffer.concat(parts);
}

/** Runs the commands in order; failures carry the index of their op (and member). */
export function ipsetApply(ops: readonly IpsetOp[]): Promise<IpsetResult> {
  return native.ipsetApply(encodeIpsetOps(ops));
}

/** ipsetApply() of commands already encoded (encodeIpsetOpsSteps, run in a caller's slices). */
export function ipsetApplyEncoded(encoded: Uint8Array): Promise<IpsetResult> {
  return native.ipsetApply(encoded);
}

/** Every set whose name starts with `prefix`, with its members. */
export function ipsetList(prefix: string): Promise<ListedIpset[]> {
  return native.ipsetList(prefix);
}
