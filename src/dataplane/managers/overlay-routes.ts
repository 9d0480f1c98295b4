// The routes of one overlay (VXLAN or IPIP), as Felix's routeManager computes them from
// the calc graph's RouteUpdates: a remote block in a pool of this type goes through the
// tunnel (how: the overlay says), or with `same_subnet` straight to the node over the
// underlay; each of this node's blocks is blackholed. What is ours follows Felix's route
// classes: of the routes with our protocol, those on the tunnel device, and blackholes and
// underlay routes inside a pool of this type - never another overlay's or BIRD's.
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
}

const routeKey = (r: RouteSpec) => `${r.dst}|${r.ifindex}|${r.gateway}|${r.onlink ? 1 : 0}|${r.blackhole ? 1 : 0}`;
export const isType = (r: RouteUpdate, t: number) => (r.types & t) === t;

export class OverlayRoutes {
  readonly #type: IPPoolType;
  readonly #what: string;
  readonly routes = new Map<string, RouteUpdate>();
  /** Pool CIDRs (the RouteUpdates without types) and their type. */
  readonly pools = new Map<string, IPPoolType>();

  readonly #protocol: number;

  constructor(type: IPPoolType, what: string, protocol = ROUTE_PROTOCOL) {
    this.#type = type;
    this.#what = what;
    this.#protocol = protocol;
  }

  /** Takes IPv4 RouteUpdate/RouteRemove; says whether it was one. */
  onUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'RouteUpdate') {
      if (msg.route.dst.includes(':')) return false;
      if (msg.route.types === 0 && msg.route.ipPoolType !== 'NONE') this.pools.set(msg.route.dst, msg.route.ipPoolType);
      else this.pools.delete(msg.route.dst);
      this.routes.set(msg.route.dst, msg.route);
      return true;
    }
    if (msg.type === 'RouteRemove') {
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
   * Felix's updateRoutes: local blocks blackholed; same-subnet remote routes via the node's
   * IP on the underlay; the rest as `tunnelRoute` says (undefined: not enough known yet).
   */
  desired(parentIndex: number, tunnelRoute: (r: RouteUpdate) => RouteSpec | undefined): RouteSpec[] {
    const out: RouteSpec[] = [];
    for (const r of this.routes.values()) {
      if (r.ipPoolType !== this.#type) continue;
      const remoteTunnel = isType(r, RouteType.REMOTE_TUNNEL) && (isType(r, RouteType.REMOTE_WORKLOAD) || r.borrowed);
      if (isType(r, RouteType.LOCAL_WORKLOAD) && !r.localWorkload && !r.dst.endsWith('/32')) {
        out.push({ dst: r.dst, ifindex: 0, gateway: '', onlink: false, blackhole: true });
        continue;
      }
      if (!isType(r, RouteType.REMOTE_WORKLOAD) && !remoteTunnel) continue;
      if (r.sameSubnet && r.dstNodeIp) {
        out.push({ dst: r.dst, ifindex: parentIndex, gateway: r.dstNodeIp, onlink: false, blackhole: false });
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
    const have = new Map<string, RouteSpec>();
    for (const r of await routeDump(this.#protocol)) {
      if (r.family !== 4) continue;
      const spec: RouteSpec = {
        dst: r.dst,
        ifindex: r.type === RTN_BLACKHOLE ? 0 : r.ifindex,
        gateway: r.gateway,
        onlink: (r.flags & RTNH_F_ONLINK) !== 0,
        blackhole: r.type === RTN_BLACKHOLE,
      };
      const ours =
        (tunnelIndex !== undefined && r.ifindex === tunnelIndex) ||
        (inPool(r.dst) && (spec.blackhole || (parentIndex !== undefined && r.ifindex === parentIndex && !!r.gateway)));
      if (ours) have.set(routeKey(spec), spec);
    }
    const wanted = new Map(want.map((r) => [routeKey(r), r]));
    const ops: RouteOp[] = [];
    const protocol = this.#protocol;
    for (const [k, r] of have) if (!wanted.has(k)) ops.push({ op: 'routeDelete', ...routeOpOf(r), protocol });
    for (const [k, r] of wanted) if (!have.has(k)) ops.push({ op: 'routeReplace', ...routeOpOf(r), protocol });
    await routeApplyOrThrow(ops, `${this.#what} programming`);
    return ops.length;
  }
}

function routeOpOf(r: RouteSpec): Omit<RouteOp, 'op'> {
  if (r.blackhole) return { dst: r.dst, ifindex: 0, type: 'blackhole' };
  if (!r.gateway) return { dst: r.dst, ifindex: r.ifindex };
  return { dst: r.dst, ifindex: r.ifindex, gateway: r.gateway, onlink: r.onlink, scope: 'universe' };
}
