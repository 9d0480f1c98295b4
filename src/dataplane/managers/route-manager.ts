// Workload routes, as Felix's route table: `<ip>/32` (or /128) dev <cali iface> scope link
// protocol DeviceRouteProtocol (3), with DeviceRouteSourceAddress as the preferred source
// when set (and to its floating addresses with FloatingIPs Enabled or on OpenStack), plus a
// permanent neighbour entry from the endpoint's MAC, only while the
// interface is up. Owned routes are recognised by protocol and interface prefix. Routes of
// other protocols on our workload interfaces are removed when RemoveExternalRoutes (the
// default, as Felix: a workload interface routes only what Calico says); routes on any
// other interface are never touched.
import type { Logger } from '../../log.js';
import { neighDump, routeApplyOrThrow, routeDump, type RouteOp } from '../../native/rtnl.js';
import type { ToDataplane, WorkloadEndpoint } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import { LocalEndpoints, type Manager } from './manager.js';

interface RouteSpec {
  dst: string;
  ifindex: number;
  mac?: string | undefined;
}

const key = (r: { dst: string; ifindex: number }) => `${r.dst}@${r.ifindex}`;
/** NUD_PERMANENT: the state of the neighbour entries we program. */
const NUD_PERMANENT = 0x80;

export interface WorkloadRouteOptions {
  /** DeviceRouteProtocol. */
  protocol: number;
  /** DeviceRouteSourceAddress / DeviceRouteSourceAddressIPv6 ("" for none). */
  sourceV4: string;
  sourceV6: string;
  /** RemoveExternalRoutes. */
  removeExternal: boolean;
  /** FloatingIPs Enabled: each endpoint's floating addresses are routed to it too (OpenStack's always are). */
  floatingIPs: boolean;
}

export class RouteManager implements Manager {
  readonly name = 'routes';
  readonly #endpoints = new LocalEndpoints();
  #programmed = new Map<string, RouteSpec>();
  #want = new Map<string, RouteSpec>();
  #resync = true;
  /** Routes of other protocols found on our interfaces at the last read-back. */
  #external: Array<{ dst: string; ifindex: number; protocol: number }> = [];
  /** The first apply replaces every wanted route: one programmed before may lack today's source address. */
  #first = true;
  readonly #o: WorkloadRouteOptions;

  constructor(
    readonly interfacePrefixes: string[],
    readonly ifaces: InterfaceTable,
    readonly log: Logger,
    o: Partial<WorkloadRouteOptions> = {},
  ) {
    this.#o = { protocol: 3, sourceV4: '', sourceV6: '', removeExternal: true, floatingIPs: false, ...o };
  }

  onUpdate(msg: ToDataplane): void {
    this.#endpoints.onUpdate(msg);
  }

  ours(ifaceName: string): boolean {
    return this.interfacePrefixes.some((p) => ifaceName.startsWith(p));
  }

  /** Read the kernel back at the next apply (start, refresh timer, after an error). */
  markResync(): void {
    this.#resync = true;
  }

  /** Whether a route we programmed and still want is this one. */
  wanted(dst: string, ifindex: number): boolean {
    return this.#want.has(key({ dst, ifindex }));
  }

  desired(): Map<string, RouteSpec> {
    const out = new Map<string, RouteSpec>();
    for (const [id, ep] of this.#endpoints.byId) {
      const iface = this.ifaces.byName.get(ep.name);
      if (!iface?.up) continue;
      for (const net of [...ep.ipv4Nets, ...ep.ipv6Nets, ...this.#floating(id, ep)]) {
        // Lower case, as the kernel's MACs are read back.
        const mac = !net.includes(':') && ep.mac ? ep.mac.toLowerCase() : undefined;
        const r: RouteSpec = { dst: net, ifindex: iface.index, mac };
        out.set(key(r), r);
      }
    }
    return out;
  }

  /** The floating addresses routed to an endpoint, as Felix's endpoint manager adds them. */
  #floating(id: string, ep: WorkloadEndpoint): string[] {
    if (!this.#o.floatingIPs && !id.startsWith('openstack/')) return [];
    return [...ep.ipv4Nat.map((n) => `${n.extIp}/32`), ...ep.ipv6Nat.map((n) => `${n.extIp}/128`)];
  }

  async apply(): Promise<{ added: number; removed: number }> {
    if (this.#resync) await this.#readBack();
    const want = this.desired();
    const present = new Set([...this.ifaces.byName.values()].map((i) => i.index));
    const ops: RouteOp[] = [];
    const removed: string[] = [];
    const protocol = this.#o.protocol;
    for (const [k, r] of this.#programmed) {
      if (want.has(k)) continue;
      // Only while the interface still exists: its routes go with it otherwise.
      if (present.has(r.ifindex)) {
        ops.push({ op: 'routeDelete', dst: r.dst, ifindex: r.ifindex, protocol });
        if (!r.dst.includes(':')) ops.push({ op: 'neighDelete', dst: r.dst, ifindex: r.ifindex });
      }
      removed.push(k);
    }
    for (const r of this.#external) {
      this.log.info(
        { dst: r.dst, ifindex: r.ifindex, protocol: r.protocol },
        'removing a route another program put on a workload interface (RemoveExternalRoutes)',
      );
      ops.push({ op: 'routeDelete', dst: r.dst, ifindex: r.ifindex, protocol: r.protocol });
    }
    this.#external = [];
    let added = 0;
    for (const [k, r] of want) {
      const had = this.#programmed.get(k);
      if (had && had.mac === r.mac && !this.#first) continue;
      const prefsrc = (r.dst.includes(':') ? this.#o.sourceV6 : this.#o.sourceV4) || undefined;
      ops.push({ op: 'routeReplace', dst: r.dst, ifindex: r.ifindex, protocol, prefsrc });
      if (r.mac) ops.push({ op: 'neighReplace', dst: r.dst, ifindex: r.ifindex, mac: r.mac });
      added++;
    }
    try {
      await routeApplyOrThrow(ops, 'route programming');
    } catch (e) {
      this.#resync = true;
      throw e;
    }
    this.#first = false;
    for (const k of removed) this.#programmed.delete(k);
    for (const [k, r] of want) this.#programmed.set(k, r);
    this.#want = want;
    return { added, removed: removed.length };
  }

  /**
   * Our routes (protocol, scope link, our interfaces), each with the MAC of its permanent
   * neighbour entry, and, with RemoveExternalRoutes, others' routes on our interfaces.
   * Without the MACs every IPv4 route would look changed, and be replaced with its
   * neighbour entry, after every refresh.
   */
  async #readBack(): Promise<void> {
    const names = new Map([...this.ifaces.byName.values()].map((i) => [i.index, i.name]));
    this.#programmed.clear();
    this.#external = [];
    const withV4 = new Set<number>();
    for (const r of await routeDump(this.#o.removeExternal ? -1 : this.#o.protocol)) {
      const name = names.get(r.ifindex);
      if (!name || !this.ours(name)) continue;
      if (r.protocol === this.#o.protocol) {
        const v6 = r.dst.includes(':');
        // The kernel reports every IPv6 route with scope universe, whatever it was given.
        if (!v6 && r.scope !== 253) continue;
        this.#programmed.set(key(r), { dst: r.dst, ifindex: r.ifindex });
        if (!v6) withV4.add(r.ifindex);
        // The kernel's own routes (protocol kernel: the interface's addresses) are not routes to remove.
      } else if (r.protocol !== 2) this.#external.push({ dst: r.dst, ifindex: r.ifindex, protocol: r.protocol });
    }
    await Promise.all([...withV4].map((ifindex) => this.#readNeighbours(ifindex)));
    this.#resync = false;
  }

  // Only a permanent entry is ours: one the kernel learned is replaced by ours.
  async #readNeighbours(ifindex: number): Promise<void> {
    for (const n of await neighDump(ifindex)) {
      if (n.family !== 4 || !(n.state & NUD_PERMANENT) || !n.mac) continue;
      const r = this.#programmed.get(key({ dst: `${n.dst}/32`, ifindex }));
      if (r) r.mac = n.mac;
    }
  }

  /** --cleanup: every route of ours, on interfaces of ours. */
  async removeAll(): Promise<number> {
    this.#endpoints.byId.clear();
    this.markResync();
    const r = await this.apply();
    return r.removed;
  }
}
