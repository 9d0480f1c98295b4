// Unencapsulated cluster routes of one IP family, as Felix's noEncapManager (v3.31+, with
// ProgramClusterRoutes): a remote block of an IP pool with no encapsulation goes straight
// to its node's address over the underlay device (the interface holding this node's own
// address of the family), and each of this node's blocks in such a pool is blackholed.
// As Felix, only while no overlay of the family is on (an overlay's own manager routes
// same-subnet blocks then) and, for IPv6, while IPv6 is programmed; otherwise it removes
// what it programmed. A block of a node outside the underlay's subnets cannot be reached
// this way (the kernel takes no gateway off the link; BGP's recursive routes do that): it
// is said once and left out, where Felix's route table retries it and logs at every try.
//
// What is ours: of the routes with our protocol in the family, blackholes and underlay
// routes inside an unencapsulated pool. Nothing else is touched.
import type { Logger } from '../../log.js';
import { encapsulation } from '../../model/encapsulation.js';
import { cidrContains, parseCidr } from '../../model/net.js';
import type { ToDataplane } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import type { Manager } from './manager.js';
import { interfaceHolding } from './overlay-device.js';
import { OverlayRoutes } from './overlay-routes.js';

/** Whether `gateway` is inside a subnet of one of `addrs` ("10.0.0.1/24"): the kernel takes no other gateway. */
function onSubnetOf(addrs: readonly string[], gateway: string): boolean {
  return addrs.some((a) => {
    const c = parseCidr(a);
    return !!c && gateway.includes(':') === (c.version === 6) && cidrContains(c, gateway);
  });
}

export interface NoEncapConfig {
  hostname: string;
  family: 4 | 6;
  /** ProgramClusterRoutes says palisade (not BIRD) programs unencapsulated pools' routes. */
  programRoutes: boolean;
  /** Ipv6Support (the IPv6 manager does nothing without it). */
  ipv6: boolean;
  /** VXLANEnabled / IpInIpEnabled: an overlay of the family turns this manager off, as Felix. */
  VXLANEnabled: boolean | undefined;
  IpInIpEnabled: boolean | undefined;
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
}

export class NoEncapManager implements Manager {
  readonly name: string;
  readonly #cfg: NoEncapConfig;
  readonly #routes: OverlayRoutes;
  readonly #ifaces: InterfaceTable;
  readonly #log: Logger;
  /** This node's own address in the family (HostMetadataUpdate / HostMetadataV6Update). */
  #ownAddr = '';
  #parentName: string | undefined;
  #dirty = true;
  #said = '';

  constructor(cfg: NoEncapConfig, ifaces: InterfaceTable, log: Logger) {
    this.#cfg = cfg;
    this.name = cfg.family === 6 ? 'noencap-v6' : 'noencap';
    this.#routes = new OverlayRoutes(
      'NO_ENCAP',
      `unencapsulated IPv${cfg.family} route`,
      cfg.routeProtocol,
      cfg.family,
    );
    this.#ifaces = ifaces;
    this.#log = log;
  }

  /** Felix creates the manager only so: ProgramClusterRoutes, and no overlay of the family. */
  get active(): boolean {
    const c = this.#cfg;
    if (!c.programRoutes || (c.family === 6 && !c.ipv6)) return false;
    const e = encapsulation(c, this.#routes.pools);
    return c.family === 6 ? !e.vxlanV6 : !e.vxlan && !e.ipip;
  }

  onUpdate(msg: ToDataplane): void {
    if (this.#routes.onUpdate(msg)) this.#dirty = true;
    const own = this.#ownAddressIn(msg);
    if (own !== undefined && own !== this.#ownAddr) {
      this.#ownAddr = own;
      this.#dirty = true;
    }
  }

  /** This node's address of the family, when `msg` says it ("" when it is gone). */
  #ownAddressIn(msg: ToDataplane): string | undefined {
    if (!('hostname' in msg) || msg.hostname !== this.#cfg.hostname) return undefined;
    const v6 = this.#cfg.family === 6;
    if (msg.type === 'HostMetadataUpdate' && !v6) return msg.ipv4Addr;
    if (msg.type === 'HostMetadataV6Update' && v6) return msg.ipv6Addr;
    if (msg.type === (v6 ? 'HostMetadataV6Remove' : 'HostMetadataRemove')) return '';
    return undefined;
  }

  onInterfaces(changed: ReadonlySet<string>): void {
    if (this.#parentName === undefined || changed.has(this.#parentName)) this.#dirty = true;
  }

  markResync(): void {
    this.#dirty = true;
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#dirty) return { routes: 0 };
    this.#dirty = false;
    try {
      return { routes: await this.#apply() };
    } catch (e) {
      this.#dirty = true;
      throw e;
    }
  }

  async #apply(): Promise<number> {
    const parent = this.#ownAddr ? interfaceHolding(this.#ifaces, this.#ownAddr) : undefined;
    this.#parentName = parent?.name;
    if (!this.active) return this.#routes.sync(undefined, parent?.index, []);
    if (!parent) {
      const f = this.#cfg.family;
      this.#say(
        this.#ownAddr
          ? `unencapsulated IPv${f} routes: no interface holds this node's address ${this.#ownAddr}`
          : `unencapsulated IPv${f} routes: waiting for this node's address (its Node needs bgp.ipv${f}Address)`,
      );
      // This node's blocks are blackholed all the same: they need no underlay.
      const blackholes = this.#routes.desired(0, () => undefined).filter((r) => r.blackhole);
      return this.#routes.sync(undefined, undefined, blackholes);
    }
    const want = this.#routes.desired(parent.index, () => undefined);
    const onLink = want.filter((r) => r.blackhole || onSubnetOf(parent.addrs, r.gateway));
    const beyond = want.filter((r) => !onLink.includes(r));
    if (beyond.length)
      this.#say(
        `unencapsulated IPv${this.#cfg.family} routes: ${beyond.length} route(s) to nodes outside ${parent.name}'s subnets (e.g. ${beyond[0]?.dst} via ${beyond[0]?.gateway}) need BGP or an overlay; not programmed`,
      );
    else this.#said = '';
    return this.#routes.sync(undefined, parent.index, onLink);
  }

  #say(message: string): void {
    if (this.#said === message) return;
    this.#said = message;
    this.#log.warn(message);
  }

  async removeAll(): Promise<unknown> {
    const parent = this.#ownAddr ? interfaceHolding(this.#ifaces, this.#ownAddr) : undefined;
    return this.#routes.sync(undefined, parent?.index, []);
  }
}
