// The VXLAN overlay, as Felix's vxlan manager and its route manager (IPv4): the
// `vxlan.calico` device (VNI, port, the underlay device and address packets leave from,
// learning off, this node's VTEP MAC, MTU), its tunnel address, a permanent ARP entry
// (tunnel IP -> VTEP MAC) and FDB entry (VTEP MAC -> node IP) per remote VTEP, and the
// routes: a remote block via its node's tunnel IP `onlink` on the device, or (CrossSubnet,
// same subnet) via the node's own IP on the underlay device; a remote tunnel or borrowed
// address directly on the device; a blackhole for each of this node's blocks.
//
// What is ours: the device itself; and, of the routes with our protocol, those on the
// device, and blackholes and underlay routes whose destination is inside a VXLAN IP pool.
// A device of that name that is not what we would make is replaced. Nothing else is touched.
import type { Logger } from '../../log.js';
import { cidrContains, parseCidr } from '../../model/net.js';
import {
  addrChange,
  addrDump,
  type Link,
  linkAddVxlan,
  linkDelete,
  linkGet,
  linkSet,
  neighDump,
  ROUTE_PROTOCOL,
  RTN_BLACKHOLE,
  RTNH_F_ONLINK,
  routeApplyOrThrow,
  routeDump,
  type RouteOp,
} from '../../native/rtnl.js';
import { RouteType, type RouteUpdate, type ToDataplane, type VXLANTunnelEndpoint } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import type { Manager } from './manager.js';

export const VXLAN_DEVICE = 'vxlan.calico';
/** Felix's allowance for the VXLAN header when the MTU is derived from the underlay's. */
const VXLAN_OVERHEAD = 50;

export interface VxlanConfig {
  hostname: string;
  /** VXLANEnabled: undefined means "when an IP pool uses VXLAN", as Felix decides. */
  enabled: boolean | undefined;
  vni: number;
  port: number;
  /** VXLANMTU; 0: the underlay's MTU less 50. */
  mtu: number;
}

interface RouteSpec {
  dst: string;
  ifindex: number;
  gateway: string;
  onlink: boolean;
  blackhole: boolean;
}

const routeKey = (r: RouteSpec) => `${r.dst}|${r.ifindex}|${r.gateway}|${r.onlink ? 1 : 0}|${r.blackhole ? 1 : 0}`;
const isType = (r: RouteUpdate, t: number) => (r.types & t) === t;

export class VxlanManager implements Manager {
  readonly name = 'vxlan';
  readonly #cfg: VxlanConfig;
  readonly #ifaces: InterfaceTable;
  readonly #log: Logger;
  readonly #vteps = new Map<string, VXLANTunnelEndpoint>();
  readonly #routes = new Map<string, RouteUpdate>();
  /** Pool CIDRs (RouteUpdates without types) and whether they use VXLAN. */
  readonly #pools = new Map<string, boolean>();
  #reported = '';
  /** Something changed (or a resync is due): the next apply reads the kernel back. */
  #dirty = true;
  #parentName: string | undefined;

  constructor(cfg: VxlanConfig, ifaces: InterfaceTable, log: Logger) {
    this.#cfg = cfg;
    this.#ifaces = ifaces;
    this.#log = log;
  }

  markResync(): void {
    this.#dirty = true;
  }

  onInterfaces(changed: ReadonlySet<string>): void {
    // The device or the underlay came, went or changed address (workload interfaces do not matter here).
    if (changed.has(VXLAN_DEVICE) || this.#parentName === undefined || changed.has(this.#parentName)) this.#dirty = true;
  }

  onUpdate(msg: ToDataplane): void {
    if (msg.type === 'VXLANTunnelEndpointUpdate' || msg.type === 'VXLANTunnelEndpointRemove' || msg.type === 'RouteUpdate' || msg.type === 'RouteRemove') this.#dirty = true;
    switch (msg.type) {
      case 'VXLANTunnelEndpointUpdate':
        this.#vteps.set(msg.vtep.node, msg.vtep);
        break;
      case 'VXLANTunnelEndpointRemove':
        this.#vteps.delete(msg.node);
        break;
      case 'RouteUpdate':
        if (msg.route.dst.includes(':')) return;
        if (msg.route.types === 0 && msg.route.ipPoolType !== 'NONE') this.#pools.set(msg.route.dst, msg.route.ipPoolType === 'VXLAN');
        else this.#pools.delete(msg.route.dst);
        this.#routes.set(msg.route.dst, msg.route);
        break;
      case 'RouteRemove':
        this.#routes.delete(msg.dst);
        this.#pools.delete(msg.dst);
        break;
    }
  }

  get enabled(): boolean {
    return this.#cfg.enabled ?? [...this.#pools.values()].some(Boolean);
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#dirty) return { devices: 0, routes: 0, neighbours: 0 };
    this.#dirty = false;
    try {
      return await this.#apply();
    } catch (e) {
      this.#dirty = true;
      throw e;
    }
  }

  async #apply(): Promise<Record<string, number>> {
    const existing = await linkGet(VXLAN_DEVICE);
    if (!this.enabled) {
      // As Felix: no VXLAN pool, no device (and its routes go with it).
      const removed = await this.#sweepRoutes(undefined, undefined, []);
      if (existing) await linkDelete(existing.index);
      return { devices: existing ? -1 : 0, routes: removed, neighbours: 0 };
    }
    const local = this.#vteps.get(this.#cfg.hostname);
    const parent = local && [...this.#ifaces.byName.values()].find((i) => i.addrs.some((a) => a.split('/')[0] === local.parentDeviceIp));
    if (!local || !parent) {
      this.#say(!local ? 'VXLAN: waiting for this node\'s VTEP (its Node needs bgp.ipv4Address and ipv4VXLANTunnelAddr)' : `VXLAN: no interface holds this node's address ${local.parentDeviceIp}`);
      return { devices: 0, routes: 0, neighbours: 0 };
    }
    this.#reported = '';
    this.#parentName = parent.name;
    const device = await this.#ensureDevice(existing, local, parent.index, parent.name);
    const neighbours = await this.#syncNeighbours(device.index);
    const routes = await this.#syncRoutes(device.index, parent.index);
    return { devices: device === existing ? 0 : 1, routes, neighbours };
  }

  #say(message: string): void {
    if (this.#reported === message) return;
    this.#reported = message;
    this.#log.warn(message);
  }

  // ---- the device ----

  async #ensureDevice(existing: Link | undefined, local: VXLANTunnelEndpoint, parentIndex: number, parentName: string): Promise<Link> {
    const mtu = this.#cfg.mtu || Math.max(0, ((await linkGet(parentName))?.mtu ?? 1500) - VXLAN_OVERHEAD);
    const want = { vni: this.#cfg.vni, port: this.#cfg.port, parent: parentIndex, local: local.parentDeviceIp, mac: local.mac.toLowerCase() };
    let link = existing;
    const mismatch = link && (link.kind !== 'vxlan' ? `kind ${link.kind}` : Object.entries(want).find(([k, v]) => (link as unknown as Record<string, unknown>)[k] !== v)?.[0]);
    if (link && mismatch) {
      this.#log.info({ device: VXLAN_DEVICE, differs: mismatch }, 'VXLAN device is not as configured; recreating it');
      await linkDelete(link.index);
      link = undefined;
    }
    if (!link) {
      link = await linkAddVxlan({ name: VXLAN_DEVICE, ...want, mtu });
      this.#log.info({ device: VXLAN_DEVICE, vni: want.vni, port: want.port, parent: parentName, local: want.local, mac: want.mac, mtu }, 'created the VXLAN device');
    }
    if (link.mtu !== mtu || !link.up) await linkSet(link.index, mtu === link.mtu ? 0 : mtu, true);
    const addrs = (await addrDump(link.index)).filter((a) => !a.includes(':'));
    const addr = `${local.ipv4Addr}/32`;
    for (const a of addrs) if (a !== addr) await addrChange(false, link.index, a);
    if (!addrs.includes(addr)) await addrChange(true, link.index, addr);
    return link;
  }

  // ---- ARP and FDB entries for the remote VTEPs ----

  async #syncNeighbours(index: number): Promise<number> {
    const want = new Map<string, { arp: string; fdb: string; mac: string }>();
    for (const v of this.#vteps.values()) {
      if (v.node === this.#cfg.hostname || !v.ipv4Addr) continue;
      want.set(v.mac.toLowerCase(), { arp: v.ipv4Addr, fdb: v.parentDeviceIp, mac: v.mac.toLowerCase() });
    }
    const have = await neighDump(index);
    const ops: RouteOp[] = [];
    const PERMANENT = 0x80;
    for (const n of have) {
      if (!(n.state & PERMANENT) || n.family === 6) continue;
      const w = [...want.values()].find((x) => (n.family === 7 ? x.mac === n.mac && x.fdb === n.dst : x.arp === n.dst && x.mac === n.mac));
      if (w) continue;
      ops.push(n.family === 7 ? { op: 'fdbDelete', ifindex: index, dst: n.dst, mac: n.mac } : { op: 'neighDelete', ifindex: index, dst: n.dst });
    }
    for (const w of want.values()) {
      if (!have.some((n) => n.family === 4 && n.dst === w.arp && n.mac === w.mac)) ops.push({ op: 'neighReplace', ifindex: index, dst: w.arp, mac: w.mac });
      if (!have.some((n) => n.family === 7 && n.dst === w.fdb && n.mac === w.mac)) ops.push({ op: 'fdbReplace', ifindex: index, dst: w.fdb, mac: w.mac });
    }
    await routeApplyOrThrow(ops, 'VXLAN programming');
    return ops.length;
  }

  // ---- routes ----

  /** Felix's updateRoutes: same-subnet via the node's IP on the underlay, else through the tunnel; local blocks blackholed. */
  #desiredRoutes(vxlanIndex: number, parentIndex: number): RouteSpec[] {
    const out: RouteSpec[] = [];
    for (const r of this.#routes.values()) {
      if (r.ipPoolType !== 'VXLAN') continue;
      const remoteTunnel = isType(r, RouteType.REMOTE_TUNNEL) && (isType(r, RouteType.REMOTE_WORKLOAD) || r.borrowed);
      if (isType(r, RouteType.LOCAL_WORKLOAD) && !r.localWorkload && !r.dst.endsWith('/32')) {
        out.push({ dst: r.dst, ifindex: 0, gateway: '', onlink: false, blackhole: true });
        continue;
      }
      if (!isType(r, RouteType.REMOTE_WORKLOAD) && !remoteTunnel) continue;
      if (r.sameSubnet && r.dstNodeIp) {
        out.push({ dst: r.dst, ifindex: parentIndex, gateway: r.dstNodeIp, onlink: false, blackhole: false });
      } else if (remoteTunnel) {
        out.push({ dst: r.dst, ifindex: vxlanIndex, gateway: '', onlink: false, blackhole: false });
      } else {
        const vtep = this.#vteps.get(r.dstNodeName);
        if (vtep?.ipv4Addr) out.push({ dst: r.dst, ifindex: vxlanIndex, gateway: vtep.ipv4Addr, onlink: true, blackhole: false });
      }
    }
    return out;
  }

  async #syncRoutes(vxlanIndex: number, parentIndex: number): Promise<number> {
    return this.#sweepRoutes(vxlanIndex, parentIndex, this.#desiredRoutes(vxlanIndex, parentIndex));
  }

  /** Deletes our routes that are not wanted and programs the wanted ones that are missing; returns the ops. */
  async #sweepRoutes(vxlanIndex: number | undefined, parentIndex: number | undefined, want: RouteSpec[]): Promise<number> {
    // Blackholes and underlay routes are ours only inside VXLAN pools: those in IPIP or
    // unencapsulated pools belong to their own route managers (as Felix's route classes).
    const pools = [...this.#pools].filter(([, vxlan]) => vxlan).map(([p]) => parseCidr(p)).filter((p) => p !== undefined);
    const inPool = (dst: string) => {
      const c = parseCidr(dst);
      return !!c && pools.some((p) => p.version === c.version && p.prefix <= c.prefix && cidrContains(p, c.address));
    };
    const have = new Map<string, RouteSpec>();
    for (const r of await routeDump(ROUTE_PROTOCOL)) {
      if (r.family !== 4) continue;
      const spec: RouteSpec = { dst: r.dst, ifindex: r.type === RTN_BLACKHOLE ? 0 : r.ifindex, gateway: r.gateway, onlink: (r.flags & RTNH_F_ONLINK) !== 0, blackhole: r.type === RTN_BLACKHOLE };
      const ours = (vxlanIndex !== undefined && r.ifindex === vxlanIndex) || (inPool(r.dst) && (spec.blackhole || (parentIndex !== undefined && r.ifindex === parentIndex && !!r.gateway)));
      if (ours) have.set(routeKey(spec), spec);
    }
    const wanted = new Map(want.map((r) => [routeKey(r), r]));
    const ops: RouteOp[] = [];
    for (const [k, r] of have) {
      if (!wanted.has(k)) ops.push({ op: 'routeDelete', ...this.#routeOp(r) });
    }
    for (const [k, r] of wanted) {
      if (!have.has(k)) ops.push({ op: 'routeReplace', ...this.#routeOp(r) });
    }
    await routeApplyOrThrow(ops, 'VXLAN programming');
    return ops.length;
  }

  #routeOp(r: RouteSpec): Omit<RouteOp, 'op'> {
    if (r.blackhole) return { dst: r.dst, ifindex: 0, type: 'blackhole' };
    if (!r.gateway) return { dst: r.dst, ifindex: r.ifindex };
    return { dst: r.dst, ifindex: r.ifindex, gateway: r.gateway, onlink: r.onlink, scope: 'universe' };
  }
}
