// Typed access to the native rtnetlink code: the interface monitor (events in batches
// from its own thread) and batched route / neighbour programming.
import { addressBytes } from '../model/net.js';
import { native } from './load.js';
import type { RawIfaceEvent, RawRoute, RawRouteResult } from './raw.js';

export type IfaceEvent = RawIfaceEvent;
export type Route = RawRoute;
export type RouteResult = RawRouteResult;

export class InterfaceMonitor {
  readonly #raw;
  #running = false;

  /**
   * `exclude`: InterfaceExclude entries (exact names, or /regexp/). `rcvbuf`: the event
   * socket's buffer (default 4 MiB; tests shrink it to force the overflow path).
   */
  constructor(exclude: string[], onEvents: (events: IfaceEvent[]) => void, opts: { rcvbuf?: number } = {}) {
    this.#raw = new native.RtnlMonitor(opts.rcvbuf === undefined ? { exclude } : { exclude, rcvbuf: opts.rcvbuf }, onEvents);
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

const OP = { routeReplace: 1, routeDelete: 2, neighReplace: 3, neighDelete: 4 } as const;
const OP_SIZE = 35;

export interface RouteOp {
  op: keyof typeof OP;
  ifindex: number;
  /** "10.0.0.1/32", "fd00::1/128" */
  dst: string;
  mac?: string;
}

export function encodeRouteOps(ops: readonly RouteOp[]): Uint8Array {
  const buf = Buffer.alloc(ops.length * OP_SIZE);
  ops.forEach((o, i) => {
    const at = i * OP_SIZE;
    const [addr, len] = o.dst.split('/') as [string, string?];
    const family = addr.includes(':') ? 6 : 4;
    buf[at] = OP[o.op];
    buf.writeUInt32LE(i, at + 1);
    buf[at + 5] = family;
    buf.writeUInt32LE(o.ifindex, at + 6);
    buf[at + 10] = len === undefined ? (family === 4 ? 32 : 128) : Number(len);
    addressBytes(addr).copy(buf, at + 11);
    buf[at + 27] = ROUTE_PROTOCOL;
    buf[at + 28] = SCOPE_LINK;
    if (o.mac) o.mac.split(':').forEach((h, j) => (buf[at + 29 + j] = parseInt(h, 16)));
  });
  return buf;
}

/** Applies route/neighbour ops in order; failures carry the index of their op. */
export async function routeApply(ops: readonly RouteOp[]): Promise<RouteResult> {
  return native.routeApply(encodeRouteOps(ops));
}

export async function routeDump(protocol = ROUTE_PROTOCOL): Promise<Route[]> {
  return native.routeDump(protocol);
}
