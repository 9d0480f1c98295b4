// The routes of one overlay (VXLAN, IPIP, or none) in one IP family, as Felix's
// routeManager computes them from the calc graph's RouteUpdates: a remote block in a pool
// of this type goes through the tunnel (how: the overlay says), or with `same_subnet` (or
// with no overlay at all) straight to the node over the underlay; each of this node's
// blocks is blackholed. What is ours follows Felix's route classes: of the routes with our
// protocols in this family, those on the tunnel device, and blackholes and underlay routes
// inside a pool of this type - never another overlay's or BIRD's.
//
// Two protocols, as Felix's calculateRouteProtocol: routes onto a tunnel device (VXLAN's)
// carry DeviceRouteProtocol; blackholes, underlay routes and IPIP's carry 80 while
// DeviceRouteProtocol is its default 3 (boot, which other programs use too), else it.
import { cidrContains, parseCidr } from '../../model/net.js';
import {
  ROUTE_PROTOCOL,
  RTN_BLACKHOLE,
  RTNH_F_ONLINK,
  routeApplyOrThrow,
  routeDump,
  type RouteOp,
} from '../../native/rtnl.js';
import { type IPPoolType, RouteType, type RouteUpdate, type ToDataplane } from '../../proto/messages.js';

export interface RouteSpec {
  dst: string;
  ifindex: number;
  gateway: string;
  onlink: boolean;
  blackhole: boolean;
  /** Felix's route protocol for it: 'device' (DeviceRouteProtocol) or 'calico' (80 for the default). */
  protocol?: 'device' | 'calico';
  /** The route's MTU (RTAX_MTU): the tunnel's, on tunnel routes, as Felix sets it; 0 or absent: none. */
  mtu?: number | undefined;
}

/** Felix's DefaultRouteProto: what its own routes carry while DeviceRouteProtocol is boot. */
export const CALICO_ROUTE_PROTOCOL = 80;
const RTPROT_BOOT = 3;

/** Felix's calculateRouteProtocol. */
export const calicoRouteProtocol = (deviceProtocol: number) =>
  deviceProtocol === RTPROT_BOOT ? CALICO_ROUTE_PROTOCOL : deviceProtocol;

const routeKey = (r: RouteSpec, protocol: number) =>
  `${r.dst}|${r.ifindex}|${r.gateway}|${r.onlink ? 1 : 0}|${r.blackhole ? 1 : 0}|${protocol}|${r.mtu ?? 0}`;
export const isType = (r: RouteUpdate, t: number) => (r.types & t) === t;

export class OverlayRoutes {
  readonly #type: IPPoolType;
  readonly #what: string;
  readonly routes = new Map<string, RouteUpdate>();
  /** Pool CIDRs (the RouteUpdates without types) and their type. */
  readonly pools = new Map<string, IPPoolType>();

  /** DeviceRouteProtocol, and Felix's protocol for its other routes. */
  readonly #protocols: { device: number; calico: number };
  readonly family: 4 | 6;

  constructor(type: IPPoolType, what: string, protocol = ROUTE_PROTOCOL, family: 4 | 6 = 4) {
    this.#type = type;
    this.#what = what;
    this.#protocols = { device: protocol, calico: calicoRouteProtocol(protocol) };
    this.family = family;
  }

  #protocolOf(r: RouteSpec): number {
    return this.#protocols[r.protocol ?? 'device'];
  }

  #ours(dst: string): boolean {
    return dst.includes(':') === (this.family === 6);
  }

  /** Takes this family's RouteUpdate/RouteRemove; says whether it was one. */
  onUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'RouteUpdate') {
      if (!this.#ours(msg.route.dst)) return false;
      if (msg.route.types === 0 && msg.route.ipPoolType !== 'NONE') this.pools.set(msg.route.dst, msg.route.ipPoolType);
      else this.pools.delete(msg.route.dst);
      this.routes.set(msg.route.dst, msg.route);
      return true;
    }
    if (msg.type === 'RouteRemove') {
      if (!this.#ours(msg.dst)) return false;
      this.routes.delete(msg.dst);
      this.pools.delete(msg.dst);
      return true;
    }
    return false;
  }

  /** A pool of this overlay's type exists. */
  get anyPool(): boolean {
    return [...this.pools.values()].some((t) => t === this.#type);
  }

  /**
   * Felix's updateRoutes: local blocks blackholed; same-subnet remote routes (every remote
   * route, with no overlay) via the node's IP on the underlay; the rest as `tunnelRoute`
   * says (undefined: not enough known yet).
   */
  desired(parentIndex: number, tunnelRoute: (r: RouteUpdate) => RouteSpec | undefined): RouteSpec[] {
    const out: RouteSpec[] = [];
    const exact = this.family === 6 ? '/128' : '/32';
    const direct = (r: RouteUpdate) => (r.sameSubnet || this.#type === 'NO_ENCAP') && !!r.dstNodeIp;
    for (const r of this.routes.values()) {
      if (r.ipPoolType !== this.#type) continue;
      const remoteTunnel = isType(r, RouteType.REMOTE_TUNNEL) && (isType(r, RouteType.REMOTE_WORKLOAD) || r.borrowed);
      if (isType(r, RouteType.LOCAL_WORKLOAD) && !r.localWorkload && !r.dst.endsWith(exact)) {
        out.push({ dst: r.dst, ifindex: 0, gateway: '', onlink: false, blackhole: true, protocol: 'calico' });
        continue;
      }
      if (!isType(r, RouteType.REMOTE_WORKLOAD) && !remoteTunnel) continue;
      if (direct(r)) {
        out.push({
          dst: r.dst,
          ifindex: parentIndex,
          gateway: r.dstNodeIp,
          onlink: false,
          blackhole: false,
          protocol: 'calico',
        });
        continue;
      }
      const t = tunnelRoute(r);
      if (t) out.push(t);
    }
    return out;
  }

  /** Deletes our routes that are not wanted and programs the wanted ones that are missing; returns the ops. */
  async sync(tunnelIndex: number | undefined, parentIndex: number | undefined, want: RouteSpec[]): Promise<number> {
    const pools = [...this.pools]
      .filter(([, t]) => t === this.#type)
      .map(([p]) => parseCidr(p))
      .filter((p) => p !== undefined);
    const inPool = (dst: string) => {
      const c = parseCidr(dst);
      return !!c && pools.some((p) => p.version === c.version && p.prefix <= c.prefix && cidrContains(p, c.address));
    };
    const have = new Map<string, { spec: RouteSpec; protocol: number }>();
    // A dump per protocol, filtered in the addon: every protocol's routes (BIRD's on a BGP
    // node, tens of thousands) would otherwise all be made into objects to be thrown away.
    const dumped = [];
    for (const p of new Set(Object.values(this.#protocols))) dumped.push(...(await routeDump(p)));
    for (const r of dumped) {
      if (r.family !== this.family) continue;
      const spec: RouteSpec = {
        dst: r.dst,
        ifindex: r.type === RTN_BLACKHOLE ? 0 : r.ifindex,
        gateway: r.gateway,
        onlink: (r.flags & RTNH_F_ONLINK) !== 0,
        blackhole: r.type === RTN_BLACKHOLE,
        mtu: r.mtu,
      };
      const ours =
        (tunnelIndex !== undefined && r.ifindex === tunnelIndex) ||
        (inPool(r.dst) && (spec.blackhole || (parentIndex !== undefined && r.ifindex === parentIndex && !!r.gateway)));
      if (ours) have.set(routeKey(spec, r.protocol), { spec, protocol: r.protocol });
    }
    const wanted = new Map(want.map((r) => [routeKey(r, this.#protocolOf(r)), r]));
    const ops: RouteOp[] = [];
    // A route wanted otherwise (another MTU, gateway or protocol) is replaced in place, not
    // deleted first: the replace is the only op its destination sees.
    const replaced = new Set([...wanted].filter(([k]) => !have.has(k)).map(([, r]) => r.dst));
    for (const [k, { spec, protocol }] of have)
      if (!wanted.has(k) && !replaced.has(spec.dst)) ops.push({ op: 'routeDelete', ...routeOpOf(spec), protocol });
    for (const [k, r] of wanted)
      if (!have.has(k)) ops.push({ op: 'routeReplace', ...routeOpOf(r), protocol: this.#protocolOf(r) });
    await routeApplyOrThrow(ops, `${this.#what} programming`);
    return ops.length;
  }
}

function routeOpOf(r: RouteSpec): Omit<RouteOp, 'op'> {
  if (r.blackhole) return { dst: r.dst, ifindex: 0, type: 'blackhole' };
  const mtu = r.mtu ? { mtu: r.mtu } : {};
  if (!r.gateway) return { dst: r.dst, ifindex: r.ifindex, ...mtu };
  return { dst: r.dst, ifindex: r.ifindex, gateway: r.gateway, onlink: r.onlink, scope: 'universe', ...mtu };
}
