// The kernel's WireGuard devices, natively over generic netlink (native/wg): what a
// device is and what it should become, in the shapes the UAPI client uses too (keys in
// base64, endpoints "ip:port"), so the WireGuard manager has one model for both kinds of
// device. A change crosses to C++ as one byte stream.
import { isIP } from 'node:net';

import { writeAddress } from '../model/net.js';
import { native } from './load.js';

export interface WgPeer {
  /** base64 */
  publicKey: string;
  /** "192.0.2.1:51820", "[fd00::1]:51821"; "" for none. */
  endpoint: string;
  allowedIps: string[];
  /** Seconds; 0: off. */
  persistentKeepalive: number;
  lastHandshakeSec?: number;
  rxBytes?: number;
  txBytes?: number;
}

export interface WgDevice {
  /** base64; "" when none is set. */
  privateKey: string;
  /** base64 (the kernel's; the UAPI does not say it); "" when none. */
  publicKey?: string;
  listenPort: number;
  fwmark: number;
  peers: WgPeer[];
}

export interface WgPeerChange {
  publicKey: string;
  /** Removes the peer (nothing else is read). */
  remove?: boolean;
  endpoint?: string;
  /** The peer's allowed IPs become exactly these (replace_allowed_ips). */
  allowedIps?: string[];
  persistentKeepalive?: number;
}

export interface WgChange {
  privateKey?: string;
  listenPort?: number;
  fwmark?: number;
  /** Peers not named here are removed (replace_peers). */
  replacePeers?: boolean;
  peers?: WgPeerChange[];
}

export class WgEncodeError extends Error {
  readonly code = 'EINVAL';
}

const KEY = 32;
const HEADER = 1 + KEY + 2 + 4 + 4;
const PEER = KEY + 1 + 1 + 16 + 2 + 2 + 4;
const ALLOWED = 18;

function keyBytes(b64: string, what: string): Buffer {
  const raw = typeof b64 === 'string' && /^[A-Za-z0-9+/]{43}=$/.test(b64) ? Buffer.from(b64, 'base64') : undefined;
  if (raw?.length !== KEY) throw new WgEncodeError(`${what}: not a WireGuard key: ${JSON.stringify(b64).slice(0, 60)}`);
  return raw;
}

function uint(v: number, max: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > max) throw new WgEncodeError(`${what} ${v} is out of range`);
  return v;
}

/** "1.2.3.4:51820" / "[fd00::1]:51821" -> family, address, port. */
export function parseEndpoint(ep: string): { family: 4 | 6; addr: string; port: number } {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(ep) ?? /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(ep);
  if (!m) throw new WgEncodeError(`not an endpoint (ip:port, [ipv6]:port): ${JSON.stringify(ep).slice(0, 80)}`);
  const addr = m[1] as string;
  const family = isIP(addr);
  if (!family) throw new WgEncodeError(`not an endpoint address: ${JSON.stringify(addr).slice(0, 60)}`);
  return { family: family as 4 | 6, addr, port: uint(Number(m[2]), 65535, 'endpoint port') };
}

function writeAllowed(buf: Buffer, at: number, cidr: string): void {
  const slash = cidr.indexOf('/');
  const addr = slash < 0 ? cidr : cidr.slice(0, slash);
  const family = isIP(addr);
  const bits = family === 4 ? 32 : 128;
  const prefix = slash < 0 ? bits : Number(cidr.slice(slash + 1));
  if (!family || !/^\d+$/.test(String(prefix)) || prefix > bits)
    throw new WgEncodeError(`not a CIDR: ${JSON.stringify(cidr).slice(0, 60)}`);
  buf[at] = family;
  writeAddress(buf, at + 1, addr);
  buf[at + 17] = prefix;
}

function encodePeer(p: WgPeerChange): Buffer {
  const allowed = p.remove ? [] : (p.allowedIps ?? []);
  const buf = Buffer.alloc(PEER + allowed.length * ALLOWED);
  keyBytes(p.publicKey, 'peer public key').copy(buf, 0);
  let flags = 0;
  if (p.remove) flags |= 1;
  if (!p.remove && p.allowedIps) flags |= 2;
  if (!p.remove && p.endpoint) {
    const ep = parseEndpoint(p.endpoint);
    flags |= 8;
    buf[33] = ep.family;
    writeAddress(buf, 34, ep.addr);
    buf.writeUInt16LE(ep.port, 50);
  }
  if (!p.remove && p.persistentKeepalive !== undefined) {
    flags |= 16;
    buf.writeUInt16LE(uint(p.persistentKeepalive, 65535, 'keepalive'), 52);
  }
  buf[32] = flags;
  buf.writeUInt32LE(allowed.length, 54);
  allowed.forEach((c, i) => writeAllowed(buf, PEER + i * ALLOWED, c));
  return buf;
}

/** native/wg/wg.h's change stream for `c` (exported for the tests). */
export function encodeWgChange(c: WgChange): Uint8Array {
  const head = Buffer.alloc(HEADER);
  let flags = c.replacePeers ? 1 : 0;
  if (c.privateKey !== undefined) {
    flags |= 2;
    // "" removes the key (all zeros).
    if (c.privateKey) keyBytes(c.privateKey, 'private key').copy(head, 1);
  }
  if (c.listenPort !== undefined) {
    flags |= 4;
    head.writeUInt16LE(uint(c.listenPort, 65535, 'listen port'), 33);
  }
  if (c.fwmark !== undefined) {
    flags |= 8;
    head.writeUInt32LE(uint(c.fwmark, 0xffffffff, 'fwmark'), 35);
  }
  head[0] = flags;
  const peers = (c.peers ?? []).map(encodePeer);
  head.writeUInt32LE(peers.length, 39);
  return Buffer.concat([head, ...peers]);
}

const hexToB64 = (hex: string) => (hex ? Buffer.from(hex, 'hex').toString('base64') : '');

/** The kernel device `name`, or undefined when there is none; rejects ENOTSUP without the module. */
export async function wgGet(name: string): Promise<(WgDevice & { ifindex: number }) | undefined> {
  const raw = await native.wgGet(name);
  if (!raw) return undefined;
  return {
    ifindex: raw.ifindex,
    privateKey: hexToB64(raw.privateKey),
    publicKey: hexToB64(raw.publicKey),
    listenPort: raw.listenPort,
    fwmark: raw.fwmark,
    peers: raw.peers.map((p) => ({ ...p, publicKey: hexToB64(p.publicKey) })),
  };
}

/** Applies `change` to the kernel device `name`; resolves with how many netlink messages it took. */
export async function wgSet(name: string, change: WgChange): Promise<number> {
  return (await native.wgSet(name, encodeWgChange(change))).messages;
}
