// What the VXLAN and IPIP managers share as managers: on when configured so, or (unset)
// when an IP pool of their type exists, as Felix decides; the pools' and blocks' routes
// (OverlayRoutes); a kernel read-back at the next apply when their tunnel device or the
// underlay it leaves from changes, or a resync is due; an apply only when something
// changed, retried whole after a failure; a condition that stops them said once, not at
// every apply.
import type { Logger } from '../../log.js';
import type { IPPoolType, ToDataplane } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import type { Manager } from './manager.js';
import { OverlayRoutes } from './overlay-routes.js';

export interface OverlayOptions {
  /** The tunnel device's name (none for unencapsulated routes). */
  device?: string;
  type: IPPoolType;
  /** VXLANEnabled / IpInIpEnabled: undefined means "when an IP pool uses this overlay". */
  enabled: boolean | undefined;
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
  /** The apply's counters, all zero: what an apply with nothing to do reports. */
  idle: Record<string, number>;
  /** The IP family of the overlay's routes (default 4). */
  family?: 4 | 6;
  /** What its routes are called in an error (default: the type). */
  what?: string;
}

export abstract class OverlayManager implements Manager {
  abstract readonly name: string;
  protected readonly routes: OverlayRoutes;
  protected readonly ifaces: InterfaceTable;
  protected readonly log: Logger;
  /** The underlay device the tunnel leaves from, once found. */
  protected parentName: string | undefined;
  readonly #opts: OverlayOptions;
  #reported = '';
  /** Something changed (or a resync is due): the next apply reads the kernel back. */
  #dirty = true;

  constructor(opts: OverlayOptions, ifaces: InterfaceTable, log: Logger) {
    this.#opts = opts;
    this.ifaces = ifaces;
    this.log = log;
    this.routes = new OverlayRoutes(opts.type, opts.what ?? opts.type, opts.routeProtocol, opts.family);
  }

  /** The overlay's own messages (VTEPs, host addresses); true when one changed what it programs. */
  protected abstract onOverlayUpdate(msg: ToDataplane): boolean;
  /** The kernel work: the device, its neighbours, the routes. */
  protected abstract applyOverlay(): Promise<Record<string, number>>;

  markResync(): void {
    this.#dirty = true;
  }

  onInterfaces(changed: ReadonlySet<string>): void {
    // The device or the underlay came, went or changed address (workload interfaces do not matter here).
    const device = this.#opts.device;
    if ((device && changed.has(device)) || this.parentName === undefined || changed.has(this.parentName))
      this.#dirty = true;
  }

  onUpdate(msg: ToDataplane): void {
    if (this.routes.onUpdate(msg)) this.#dirty = true;
    if (this.onOverlayUpdate(msg)) this.#dirty = true;
  }

  get enabled(): boolean {
    return this.#opts.enabled ?? this.routes.anyPool;
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#dirty) return this.idle();
    this.#dirty = false;
    try {
      return await this.applyOverlay();
    } catch (e) {
      this.#dirty = true;
      throw e;
    }
  }

  /** What keeps the overlay from working, said once (until it changes or clears). */
  protected say(message: string): void {
    if (this.#reported === message) return;
    this.#reported = message;
    this.log.warn(message);
  }

  /** The overlay works again: a condition that comes back is said again. */
  protected clearSaid(): void {
    this.#reported = '';
  }

  /** The apply's counters, all zero (a fresh object: callers may add to it). */
  protected idle(): Record<string, number> {
    return { ...this.#opts.idle };
  }
}
