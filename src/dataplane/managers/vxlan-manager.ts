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
import type { InterfaceTable } from './interfaces.js';
import { interfaceHolding, settleDevice, tunnelMtu } from './overlay-device.js';
import { OverlayManager } from './overlay-manager.js';
import { isType, type RouteSpec } from './overlay-routes.js';

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
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
}

export class VxlanManager extends OverlayManager {
  readonly name = 'vxlan';
  readonly #cfg: VxlanConfig;
  readonly #vteps = new Map<string, VXLANTunnelEndpoint>();

  constructor(cfg: VxlanConfig, ifaces: InterfaceTable, log: Logger) {
    const idle = { devices: 0, routes: 0, neighbours: 0 };
    super(
      { device: VXLAN_DEVICE, type: 'VXLAN', enabled: cfg.enabled, routeProtocol: cfg.routeProtocol, idle },
      ifaces,
      log,
    );
    this.#cfg = cfg;
  }

  protected onOverlayUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'VXLANTunnelEndpointUpdate') {
      this.#vteps.set(msg.vtep.node, msg.vtep);
      return true;
    }
    if (msg.type === 'VXLANTunnelEndpointRemove') {
      this.#vteps.delete(msg.node);
      return true;
    }
    return false;
  }

  protected async applyOverlay(): Promise<Record<string, number>> {
    const existing = await linkGet(VXLAN_DEVICE);
    if (!this.enabled) {
      // As Felix: no VXLAN pool, no device (and its routes go with it).
      const removed = await this.routes.sync(undefined, undefined, []);
      if (existing) await linkDelete(existing.index);
      return { devices: existing ? -1 : 0, routes: removed, neighbours: 0 };
    }
    const local = this.#vteps.get(this.#cfg.hostname);
    const parent = local && interfaceHolding(this.ifaces, local.parentDeviceIp);
    if (!local || !parent) {
      this.say(
        !local
          ? "VXLAN: waiting for this node's VTEP (its Node needs bgp.ipv4Address and ipv4VXLANTunnelAddr)"
          : `VXLAN: no interface holds this node's address ${local.parentDeviceIp}`,
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

  // ---- the device ----

  async #ensureDevice(
    existing: Link | undefined,
    local: VXLANTunnelEndpoint,
    parentIndex: number,
    parentName: string,
  ): Promise<Link> {
    const mtu = await tunnelMtu(this.#cfg.mtu, parentName, VXLAN_OVERHEAD);
    const want = {
      vni: this.#cfg.vni,
      port: this.#cfg.port,
      parent: parentIndex,
      local: local.parentDeviceIp,
      mac: local.mac.toLowerCase(),
    };
    let link = existing;
    const mismatch =
      link &&
      (link.kind !== 'vxlan'
        ? `kind ${link.kind}`
        : Object.entries(want).find(([k, v]) => (link as unknown as Record<string, unknown>)[k] !== v)?.[0]);
    if (link && mismatch) {
      this.log.info({ device: VXLAN_DEVICE, differs: mismatch }, 'VXLAN device is not as configured; recreating it');
      await linkDelete(link.index);
      link = undefined;
    }
    if (!link) {
      link = await linkAddVxlan({ name: VXLAN_DEVICE, ...want, mtu });
      this.log.info(
        {
          device: VXLAN_DEVICE,
          vni: want.vni,
          port: want.port,
          parent: parentName,
          local: want.local,
          mac: want.mac,
          mtu,
        },
        'created the VXLAN device',
      );
    }
    await settleDevice(link, mtu, `${local.ipv4Addr}/32`);
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
      if (!have.some((n) => n.family === 4 && n.dst === w.arp && n.mac === w.mac))
        ops.push({ op: 'neighReplace', ifindex: index, dst: w.arp, mac: w.mac });
      if (!have.some((n) => n.family === 7 && n.dst === w.fdb && n.mac === w.mac))
        ops.push({ op: 'fdbReplace', ifindex: index, dst: w.fdb, mac: w.mac });
    }
    await routeApplyOrThrow(ops, 'VXLAN programming');
    return ops.length;
  }

  // ---- routes ----

  /**
   * A remote block through the tunnel via its VTEP, onlink; a remote tunnel or borrowed address straight on the device.
   */
  #tunnelRoute(vxlanIndex: number, r: RouteUpdate): RouteSpec | undefined {
    if (isType(r, RouteType.REMOTE_TUNNEL) && (isType(r, RouteType.REMOTE_WORKLOAD) || r.borrowed))
      return { dst: r.dst, ifindex: vxlanIndex, gateway: '', onlink: false, blackhole: false };
    const vtep = this.#vteps.get(r.dstNodeName);
    return vtep?.ipv4Addr
      ? { dst: r.dst, ifindex: vxlanIndex, gateway: vtep.ipv4Addr, onlink: true, blackhole: false }
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
