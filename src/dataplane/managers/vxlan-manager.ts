// The VXLAN overlay of one IP family, as Felix's vxlan managers and their route managers:
// the `vxlan.calico` (IPv4) or `vxlan-v6.calico` (IPv6) device (VNI, port, the underlay
// device and address packets leave from, learning off, this node's VTEP MAC for the family,
// MTU), its tunnel address, a permanent neighbour entry (tunnel IP -> VTEP MAC: ARP or NDP)
// and FDB entry (VTEP MAC -> node IP) per remote VTEP, and the routes: a remote block via
// its node's tunnel IP `onlink` on the device, or (CrossSubnet, same subnet) via the node's
// own IP on the underlay device; a remote tunnel or borrowed address directly on the
// device; a blackhole for each of this node's blocks.
//
// What is ours: the device itself; and, of the routes with our protocol in the family,
// those on the device, and blackholes and underlay routes whose destination is inside a
// VXLAN IP pool. A device of that name that is not what we would make is replaced. Nothing
// else is touched.
import type { Logger } from '../../log.js';
import {
  type Link,
  linkAddVxlan,
  linkDelete,
  linkGet,
  neighDump,
  routeApplyOrThrow,
  type RouteOp,
} from '../../native/rtnl.js';
import { RouteType, type RouteUpdate, type ToDataplane, type VXLANTunnelEndpoint } from '../../proto/messages.js';
import { VXLAN_DEVICE, VXLAN_DEVICE_V6 } from '../device-names.js';
import type { InterfaceTable } from './interfaces.js';
import { interfaceHolding, settleDevice, tunnelMtu } from './overlay-device.js';
import { OverlayManager } from './overlay-manager.js';
import { isType, type RouteSpec } from './overlay-routes.js';

export interface VxlanConfig {
  hostname: string;
  /** VXLANEnabled (IPv4 only): undefined means "when an IP pool of the family uses VXLAN", as Felix decides. */
  enabled: boolean | undefined;
  vni: number;
  port: number;
  /** VXLANMTU / VXLANMTUV6; 0: the host's MTU less 50 (IPv6: 70). */
  mtu: number;
  /** MTUIfacePattern: the interfaces the host's MTU is taken from. */
  mtuIfacePattern?: RegExp | undefined;
  /** The overlay's family (default 4). */
  family?: 4 | 6;
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
}

/** One VTEP as this family sees it: the MAC, the tunnel address and the underlay address. */
interface FamilyVtep {
  mac: string;
  addr: string;
  parent: string;
}

export class VxlanManager extends OverlayManager {
  readonly name: string;
  readonly #cfg: VxlanConfig;
  readonly #family: 4 | 6;
  readonly #device: string;
  readonly #vteps = new Map<string, FamilyVtep>();
  /** The device's MTU as last sized: its routes carry it too, as Felix's. */
  #mtu = 0;

  constructor(cfg: VxlanConfig, ifaces: InterfaceTable, log: Logger) {
    const idle = { devices: 0, routes: 0, neighbours: 0 };
    const family = cfg.family ?? 4;
    const device = family === 6 ? VXLAN_DEVICE_V6 : VXLAN_DEVICE;
    super({ device, type: 'VXLAN', enabled: cfg.enabled, routeProtocol: cfg.routeProtocol, idle, family }, ifaces, log);
    this.name = family === 6 ? 'vxlan-v6' : 'vxlan';
    this.#cfg = cfg;
    this.#family = family;
    this.#device = device;
  }

  /** Felix's parseMacForIPVersion and friends: this family's half of a VTEP, if it has one. */
  #half(v: VXLANTunnelEndpoint): FamilyVtep | undefined {
    const h =
      this.#family === 6
        ? { mac: v.macV6, addr: v.ipv6Addr, parent: v.parentDeviceIpv6 }
        : { mac: v.mac, addr: v.ipv4Addr, parent: v.parentDeviceIp };
    return h.addr && h.parent && h.mac ? { ...h, mac: h.mac.toLowerCase() } : undefined;
  }

  protected onOverlayUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'VXLANTunnelEndpointUpdate') {
      const half = this.#half(msg.vtep);
      if (half) this.#vteps.set(msg.vtep.node, half);
      else this.#vteps.delete(msg.vtep.node);
      return true;
    }
    if (msg.type === 'VXLANTunnelEndpointRemove') return this.#vteps.delete(msg.node);
    return false;
  }

  protected async applyOverlay(): Promise<Record<string, number>> {
    const existing = await linkGet(this.#device);
    if (!this.enabled) {
      // As Felix: no VXLAN pool, no device (and its routes go with it).
      const removed = await this.routes.sync(undefined, undefined, []);
      if (existing) await linkDelete(existing.index);
      return { devices: existing ? -1 : 0, routes: removed, neighbours: 0 };
    }
    const local = this.#vteps.get(this.#cfg.hostname);
    const parent = local && interfaceHolding(this.ifaces, local.parent);
    if (!local || !parent) {
      const v = this.#family === 6 ? 'ipv6' : 'ipv4';
      this.say(
        !local
          ? `${this.#what}: waiting for this node's VTEP (its Node needs bgp.${v}Address and ${v}VXLANTunnelAddr)`
          : `${this.#what}: no interface holds this node's address ${local.parent}`,
      );
      return this.idle();
    }
    this.clearSaid();
    this.parentName = parent.name;
    const device = await this.#ensureDevice(existing, local, parent.index, parent.name);
    const neighbours = await this.#syncNeighbours(device.index);
    const routes = await this.#syncRoutes(device.index, parent.index);
    return { devices: device === existing ? 0 : 1, routes, neighbours };
  }

  get #what(): string {
    return this.#family === 6 ? 'IPv6 VXLAN' : 'VXLAN';
  }

  // ---- the device ----

  async #ensureDevice(
    existing: Link | undefined,
    local: FamilyVtep,
    parentIndex: number,
    parentName: string,
  ): Promise<Link> {
    const mtu = await tunnelMtu(
      this.#cfg.mtu,
      this.ifaces,
      this.#cfg.mtuIfacePattern,
      this.#family === 6 ? 'vxlanV6' : 'vxlan',
    );
    this.#mtu = mtu;
    const want = {
      vni: this.#cfg.vni,
      port: this.#cfg.port,
      parent: parentIndex,
      local: local.parent,
      mac: local.mac,
    };
    let link = existing;
    const mismatch =
      link &&
      (link.kind !== 'vxlan'
        ? `kind ${link.kind}`
        : Object.entries(want).find(([k, v]) => (link as unknown as Record<string, unknown>)[k] !== v)?.[0]);
    if (link && mismatch) {
      this.log.info(
        { device: this.#device, differs: mismatch },
        `${this.#what} device is not as configured; recreating it`,
      );
      await linkDelete(link.index);
      link = undefined;
    }
    if (!link) {
      link = await linkAddVxlan({ name: this.#device, ...want, mtu });
      this.log.info(
        {
          device: this.#device,
          vni: want.vni,
          port: want.port,
          parent: parentName,
          local: want.local,
          mac: want.mac,
          mtu,
        },
        `created the ${this.#what} device`,
      );
    }
    await settleDevice(link, mtu, `${local.addr}/${this.#family === 6 ? 128 : 32}`, this.#family);
    return link;
  }

  // ---- neighbour (ARP or NDP) and FDB entries for the remote VTEPs ----

  async #syncNeighbours(index: number): Promise<number> {
    const want = new Map<string, { arp: string; fdb: string; mac: string }>();
    for (const [node, v] of this.#vteps) {
      if (node === this.#cfg.hostname) continue;
      want.set(v.mac, { arp: v.addr, fdb: v.parent, mac: v.mac });
    }
    const have = await neighDump(index);
    const ops: RouteOp[] = [];
    const PERMANENT = 0x80;
    const fam = this.#family;
    for (const n of have) {
      if (!(n.state & PERMANENT) || (n.family !== fam && n.family !== 7)) continue;
      const w = [...want.values()].find((x) =>
        n.family === 7 ? x.mac === n.mac && x.fdb === n.dst : x.arp === n.dst && x.mac === n.mac,
      );
      if (w) continue;
      ops.push(
        n.family === 7
          ? { op: 'fdbDelete', ifindex: index, dst: n.dst, mac: n.mac }
          : { op: 'neighDelete', ifindex: index, dst: n.dst },
      );
    }
    for (const w of want.values()) {
      if (!have.some((n) => n.family === fam && n.dst === w.arp && n.mac === w.mac))
        ops.push({ op: 'neighReplace', ifindex: index, dst: w.arp, mac: w.mac });
      if (!have.some((n) => n.family === 7 && n.dst === w.fdb && n.mac === w.mac))
        ops.push({ op: 'fdbReplace', ifindex: index, dst: w.fdb, mac: w.mac });
    }
    await routeApplyOrThrow(ops, `${this.#what} programming`);
    return ops.length;
  }

  // ---- routes ----

  /**
   * A remote block through the tunnel via its VTEP, onlink; a remote tunnel or borrowed address straight on the device.
   */
  #tunnelRoute(vxlanIndex: number, r: RouteUpdate): RouteSpec | undefined {
    const mtu = this.#mtu;
    if (isType(r, RouteType.REMOTE_TUNNEL) && (isType(r, RouteType.REMOTE_WORKLOAD) || r.borrowed))
      return { dst: r.dst, ifindex: vxlanIndex, gateway: '', onlink: false, blackhole: false, mtu };
    const vtep = this.#vteps.get(r.dstNodeName);
    return vtep
      ? { dst: r.dst, ifindex: vxlanIndex, gateway: vtep.addr, onlink: true, blackhole: false, mtu }
      : undefined;
  }

  async #syncRoutes(vxlanIndex: number, parentIndex: number): Promise<number> {
    return this.routes.sync(
      vxlanIndex,
      parentIndex,
      this.routes.desired(parentIndex, (r) => this.#tunnelRoute(vxlanIndex, r)),
    );
  }
}
