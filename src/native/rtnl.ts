// Typed access to the native rtnetlink code: the interface monitor (events in batches
// from its own thread) and batched route / neighbour programming.
import { addressBytes, writeAddress } from '../model/net.js';
import { native } from './load.js';
import type { RawIfaceEvent, RawLink, RawNeigh, RawRoute, RawRouteResult, RawRule } from './raw.js';

export type IfaceEvent = RawIfaceEvent;
export type Route = RawRoute;
export type RouteResult = RawRouteResult;
export type Neigh = RawNeigh;
export type Link = RawLink;

export class InterfaceMonitor {
  readonly #raw;
  #running = false;

  /**
   * `exclude`: InterfaceExclude entries (exact names, or /regexp/). `rcvbuf`: the event
   * socket's buffer (default 4 MiB; tests shrink it to force the overflow path).
   */
  constructor(exclude: string[], onEvents: (events: IfaceEvent[]) => void, opts: { rcvbuf?: number } = {}) {
    this.#raw = new native.RtnlMonitor(
      opts.rcvbuf === undefined ? { exclude } : { exclude, rcvbuf: opts.rcvbuf },
      onEvents,
    );
  }
  start(): void {
    this.#raw.start();
    this.#running = true;
  }
  /** Full dump; differences from what was known arrive as events. */
  resync(): void {
    if (this.#running) this.#raw.resync();
  }
  stop(): void {
    this.#raw.stop();
    this.#running = false;
  }
}

/** RTPROT_BOOT: the protocol Felix gives workload routes (DeviceRouteProtocol 3). */
export const ROUTE_PROTOCOL = 3;
export const SCOPE_LINK = 253;
export const SCOPE_UNIVERSE = 0;
export const RTN_UNICAST = 1;
export const RTN_BLACKHOLE = 6;
export const RTN_UNREACHABLE = 7;
export const RTN_THROW = 9;
/** RT_TABLE_MAIN */
export const MAIN_TABLE = 254;
export const RTNH_F_ONLINK = 4;

const OP = { routeReplace: 1, routeDelete: 2, neighReplace: 3, neighDelete: 4, fdbReplace: 5, fdbDelete: 6 } as const;
const OP_SIZE = 77;

export interface RouteOp {
  op: keyof typeof OP;
  /** The output interface (0: none, for a blackhole); for FDB ops the VXLAN device. */
  ifindex: number;
  /** "10.0.0.1/32", "fd00::1/128"; for FDB ops the remote VTEP's IP. */
  dst: string;
  /** Neighbour and FDB ops. */
  mac?: string | undefined;
  /** Routes: via this address. */
  gateway?: string | undefined;
  /** Routes: unicast (default), blackhole, unreachable, or throw (back to the next rule's table). */
  type?: RouteType;
  /** Routes: the routing table (default main). */
  table?: number | undefined;
  /** Routes: the gateway is on the link even if no route says so (RTNH_F_ONLINK). */
  onlink?: boolean;
  /** Routes: link (default, a workload route) or universe. */
  scope?: 'link' | 'universe';
  /** Routes: the protocol (default ROUTE_PROTOCOL; DeviceRouteProtocol). */
  protocol?: number | undefined;
  /** Route replaces: the preferred source address (DeviceRouteSourceAddress). */
  prefsrc?: string | undefined;
  /** Route replaces: the route's MTU (RTAX_MTU; 0 or absent: none), as Felix sets on tunnel routes. */
  mtu?: number | undefined;
}

export type RouteType = 'unicast' | 'blackhole' | 'unreachable' | 'throw';
/** RTN_* of each route type. */
export const RTN: Readonly<Record<RouteType, number>> = {
  unicast: RTN_UNICAST,
  blackhole: RTN_BLACKHOLE,
  unreachable: RTN_UNREACHABLE,
  throw: RTN_THROW,
};

/** The route type of a dumped route's RTN_* (another kind reads as unicast). */
export function routeTypeOf(rtn: number): RouteType {
  return (Object.keys(RTN) as RouteType[]).find((t) => RTN[t] === rtn) ?? 'unicast';
}

export function encodeRouteOps(ops: readonly RouteOp[]): Uint8Array {
  const buf = Buffer.alloc(ops.length * OP_SIZE);
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i] as RouteOp;
    const at = i * OP_SIZE;
    const slash = o.dst.indexOf('/');
    const addr = slash < 0 ? o.dst : o.dst.slice(0, slash);
    const family = addr.includes(':') ? 6 : 4;
    buf[at] = OP[o.op];
    buf.writeUInt32LE(i, at + 1);
    buf[at + 5] = family;
    buf.writeUInt32LE(o.ifindex, at + 6);
    buf[at + 10] = slash < 0 ? (family === 4 ? 32 : 128) : Number(o.dst.slice(slash + 1));
    writeAddress(buf, at + 11, addr);
    buf[at + 27] = o.protocol ?? ROUTE_PROTOCOL;
    const typed = o.type !== undefined && o.type !== 'unicast';
    buf[at + 28] = o.scope === 'universe' || typed ? SCOPE_UNIVERSE : SCOPE_LINK;
    if (o.mac) o.mac.split(':').forEach((h, j) => (buf[at + 29 + j] = parseInt(h, 16)));
    if (o.gateway) writeAddress(buf, at + 35, o.gateway);
    buf[at + 51] = RTN[o.type ?? 'unicast'];
    buf[at + 52] = o.onlink ? RTNH_F_ONLINK : 0;
    if (o.prefsrc) writeAddress(buf, at + 53, o.prefsrc);
    buf.writeUInt32LE(o.table ?? MAIN_TABLE, at + 69);
    buf.writeUInt32LE(o.mtu ?? 0, at + 73);
  }
  return buf;
}

/** Applies route/neighbour ops in order; failures carry the index of their op. */
export async function routeApply(ops: readonly RouteOp[]): Promise<RouteResult> {
  return native.routeApply(encodeRouteOps(ops));
}

/**
 * Applies route/neighbour ops and throws `<what> failed: ...` naming each op the kernel
 * refused; a delete of what is already gone (ENOENT, ESRCH) is what was wanted anyway.
 */
export async function routeApplyOrThrow(ops: readonly RouteOp[], what: string): Promise<void> {
  if (!ops.length) return;
  const res = await routeApply(ops);
  const real = res.failures.filter((f) => !(ops[f.tag]?.op.endsWith('Delete') && (f.errno === 2 || f.errno === 3)));
  if (real.length)
    throw new Error(
      `${what} failed: ${real.map((f) => `${ops[f.tag]?.op} ${ops[f.tag]?.dst} (errno ${f.errno})`).join('; ')}`,
    );
}

/** One table's (default main) routes of one protocol (-1: of every protocol). */
export async function routeDump(protocol = ROUTE_PROTOCOL, table = MAIN_TABLE): Promise<Route[]> {
  return native.routeDump(protocol, table);
}

/** One interface's neighbour (family 4/6) and FDB (family 7) entries. */
export async function neighDump(ifindex: number): Promise<Neigh[]> {
  return native.neighDump(ifindex);
}

// ---- links and addresses (the VXLAN device) ----

export interface VxlanLinkSpec {
  name: string;
  vni: number;
  port: number;
  /** The underlay device's ifindex. */
  parent: number;
  /** The underlay address packets leave from. */
  local: string;
  mac?: string | undefined;
  /** 0: the kernel's default. */
  mtu: number;
}

const macBytes = (mac: string) => Uint8Array.from(mac.split(':').map((h) => parseInt(h, 16)));

/** The link of this name, or undefined. */
export function linkGet(name: string): Promise<Link | undefined> {
  return native.linkGet(name);
}

/**
 * Creates a VXLAN device (learning off), as Felix's vxlan manager does; rejects (ELINK, errno) if the kernel refuses.
 */
export function linkAddVxlan(spec: VxlanLinkSpec): Promise<Link> {
  const local = Buffer.alloc(16);
  if (spec.local) addressBytes(spec.local).copy(local);
  return native.linkAddVxlan({
    name: spec.name,
    vni: spec.vni,
    port: spec.port,
    parent: spec.parent,
    localFamily: spec.local ? (spec.local.includes(':') ? 6 : 4) : 0,
    local,
    mac: spec.mac ? macBytes(spec.mac) : undefined,
    mtu: spec.mtu,
  });
}

/**
 * Creates an IP-in-IP device (tunl0 when the ipip module made none); rejects (ELINK, errno EOPNOTSUPP) without the
 * module.
 */
export function linkAddIpip(name: string, mtu: number): Promise<Link> {
  return native.linkAdd(name, 'ipip', mtu);
}

/** Creates a kernel WireGuard device; rejects (ELINK, errno EOPNOTSUPP) without the wireguard module. */
export function linkAddWireguard(name: string, mtu: number): Promise<Link> {
  return native.linkAdd(name, 'wireguard', mtu);
}

export function linkSet(index: number, mtu: number, up: boolean): Promise<undefined> {
  return native.linkSet(index, mtu, up);
}

export function linkDelete(index: number): Promise<undefined> {
  return native.linkDelete(index);
}

/** Adds (or replaces) or deletes an address ("10.65.0.1/32") on an interface. */
export function addrChange(add: boolean, index: number, cidr: string): Promise<undefined> {
  const [addr, len] = cidr.split('/') as [string, string?];
  const v6 = addr.includes(':');
  return native.addrChange(
    add,
    index,
    v6 ? 6 : 4,
    addressBytes(addr),
    len === undefined ? (v6 ? 128 : 32) : Number(len),
  );
}

/** An interface's addresses ("10.65.0.1/32"). */
export function addrDump(index: number): Promise<string[]> {
  return native.addrDump(index);
}

// ---- policy-routing rules (WireGuard's "not fwmark X lookup T") ----

export type Rule = RawRule;

/** A rule to add or delete: a dumped rule's fields (see RawRule) less its action. */
export type RuleOp = { op: 'add' | 'delete' } & Omit<Rule, 'action'>;

const RULE_OP_SIZE = 23;

export function encodeRuleOps(ops: readonly RuleOp[]): Uint8Array {
  const buf = Buffer.alloc(ops.length * RULE_OP_SIZE);
  ops.forEach((o, i) => {
    const at = i * RULE_OP_SIZE;
    buf[at] = o.op === 'add' ? 1 : 2;
    buf.writeUInt32LE(i, at + 1);
    buf[at + 5] = o.family;
    buf[at + 6] = o.invert ? 1 : 0;
    buf.writeUInt32LE(o.priority >>> 0, at + 7);
    buf.writeUInt32LE(o.table >>> 0, at + 11);
    buf.writeUInt32LE(o.mark >>> 0, at + 15);
    buf.writeUInt32LE(o.mask >>> 0, at + 19);
  });
  return buf;
}

/** Applies rule ops in order; each failed op is named with its errno (EEXIST, ENOENT...). */
export function ruleApply(ops: readonly RuleOp[]): Promise<RouteResult> {
  return native.ruleApply(encodeRuleOps(ops));
}

/** Both families' policy-routing rules. */
export function ruleDump(): Promise<Rule[]> {
  return native.ruleDump();
}
