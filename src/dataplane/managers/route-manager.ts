// Workload routes, as Felix's route table: `<ip>/32` (or /128) dev <cali iface> scope link
// protocol 3, plus a permanent neighbour entry from the endpoint's MAC, only while the
// interface is up. Owned routes are recognised by protocol and interface prefix, so a
// route anyone else made (another protocol, another interface) is never touched.
import type { Logger } from '../../log.js';
import { ROUTE_PROTOCOL, routeApplyOrThrow, routeDump, type RouteOp } from '../../native/rtnl.js';
import type { ToDataplane } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import { LocalEndpoints, type Manager } from './manager.js';

interface RouteSpec {
  dst: string;
  ifindex: number;
  mac?: string | undefined;
}

const key = (r: { dst: string; ifindex: number }) => `${r.dst}@${r.ifindex}`;

export class RouteManager implements Manager {
  readonly name = 'routes';
  readonly #endpoints = new LocalEndpoints();
  #programmed = new Map<string, RouteSpec>();
  #want = new Map<string, RouteSpec>();
  #resync = true;

  constructor(
    readonly interfacePrefixes: string[],
    readonly ifaces: InterfaceTable,
    readonly log: Logger,
  ) {}

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
    for (const ep of this.#endpoints.values()) {
      const iface = this.ifaces.byName.get(ep.name);
      if (!iface?.up) continue;
      for (const net of [...ep.ipv4Nets, ...ep.ipv6Nets]) {
        const r: RouteSpec = { dst: net, ifindex: iface.index, mac: !net.includes(':') && ep.mac ? ep.mac : undefined };
        out.set(key(r), r);
      }
    }
    return out;
  }

  async apply(): Promise<{ added: number; removed: number }> {
    const ifaces = this.ifaces;
    if (this.#resync) {
      const names = new Map([...ifaces.byName.values()].map((i) => [i.index, i.name]));
      this.#programmed.clear();
      for (const r of await routeDump(ROUTE_PROTOCOL)) {
        const name = names.get(r.ifindex);
        if (r.scope === 253 && name && this.ours(name)) this.#programmed.set(key(r), { dst: r.dst, ifindex: r.ifindex });
      }
      this.#resync = false;
    }
    const want = this.desired();
    const present = new Set([...ifaces.byName.values()].map((i) => i.index));
    const ops: RouteOp[] = [];
    const removed: string[] = [];
    for (const [k, r] of this.#programmed) {
      if (want.has(k)) continue;
      // Only while the interface still exists: its routes go with it otherwise.
      if (present.has(r.ifindex)) {
        ops.push({ op: 'routeDelete', dst: r.dst, ifindex: r.ifindex });
        if (!r.dst.includes(':')) ops.push({ op: 'neighDelete', dst: r.dst, ifindex: r.ifindex });
      }
      removed.push(k);
    }
    let added = 0;
    for (const [k, r] of want) {
      const had = this.#programmed.get(k);
      if (had && had.mac === r.mac) continue;
      ops.push({ op: 'routeReplace', dst: r.dst, ifindex: r.ifindex });
      if (r.mac) ops.push({ op: 'neighReplace', dst: r.dst, ifindex: r.ifindex, mac: r.mac });
      added++;
    }
    try {
      await routeApplyOrThrow(ops, 'route programming');
    } catch (e) {
      this.#resync = true;
      throw e;
    }
    for (const k of removed) this.#programmed.delete(k);
    for (const [k, r] of want) this.#programmed.set(k, r);
    this.#want = want;
    return { added, removed: removed.length };
  }

  /** --cleanup: every route of ours, on interfaces of ours. */
  async removeAll(): Promise<number> {
    this.#endpoints.byId.clear();
    this.markResync();
    const r = await this.apply();
    return r.removed;
  }
}
