// Unencapsulated cluster routes of one IP family, as Felix's noEncapManager (v3.31+, with
// ProgramClusterRoutes): a remote block of an IP pool with no encapsulation goes straight
// to its node's address over the underlay device (the interface holding this node's own
// address of the family), and each of this node's blocks in such a pool is blackholed.
// As Felix, only while no overlay of the family (nor WireGuard) is on (an overlay's own manager routes
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
import type { IfaceState, InterfaceTable } from './interfaces.js';
import { interfaceHolding } from './overlay-device.js';
import { OverlayManager } from './overlay-manager.js';

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
  /** WireguardEnabled of the family: WireGuard routes the pods then, and this manager is off, as Felix. */
  wireguard?: boolean;
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
}

export class NoEncapManager extends OverlayManager {
  readonly name: string;
  readonly #cfg: NoEncapConfig;
  /** This node's own address in the family (HostMetadataUpdate / HostMetadataV6Update). */
  #ownAddr = '';

  constructor(cfg: NoEncapConfig, ifaces: InterfaceTable, log: Logger) {
    super(
      {
        type: 'NO_ENCAP',
        what: `unencapsulated IPv${cfg.family} route`,
        enabled: undefined,
        routeProtocol: cfg.routeProtocol,
        idle: { routes: 0 },
        family: cfg.family,
      },
      ifaces,
      log,
    );
    this.#cfg = cfg;
    this.name = cfg.family === 6 ? 'noencap-v6' : 'noencap';
  }

  /** Felix creates the manager only so: ProgramClusterRoutes, and no overlay of the family. */
  override get enabled(): boolean {
    const c = this.#cfg;
    if (!c.programRoutes || (c.family === 6 && !c.ipv6) || c.wireguard) return false;
    const e = encapsulation(c, this.routes.pools);
    return c.family === 6 ? !e.vxlanV6 : !e.vxlan && !e.ipip;
  }

  /** This node's address of the family, when `msg` says it ("" when it is gone). */
  protected onOverlayUpdate(msg: ToDataplane): boolean {
    if (!('hostname' in msg) || msg.hostname !== this.#cfg.hostname) return false;
    const v6 = this.#cfg.family === 6;
    let own: string | undefined;
    if (msg.type === 'HostMetadataUpdate' && !v6) own = msg.ipv4Addr;
    else if (msg.type === 'HostMetadataV6Update' && v6) own = msg.ipv6Addr;
    else if (msg.type === (v6 ? 'HostMetadataV6Remove' : 'HostMetadataRemove')) own = '';
    if (own === undefined || own === this.#ownAddr) return false;
    this.#ownAddr = own;
    return true;
  }

  /** The underlay: the interface holding this node's own address of the family. */
  #parent(): IfaceState | undefined {
    const parent = this.#ownAddr ? interfaceHolding(this.ifaces, this.#ownAddr) : undefined;
    this.parentName = parent?.name;
    return parent;
  }

  protected async applyOverlay(): Promise<Record<string, number>> {
    const parent = this.#parent();
    if (!this.enabled) return { routes: await this.routes.sync(undefined, parent?.index, []) };
    if (!parent) {
      const f = this.#cfg.family;
      this.say(
        this.#ownAddr
          ? `unencapsulated IPv${f} routes: no interface holds this node's address ${this.#ownAddr}`
          : `unencapsulated IPv${f} routes: waiting for this node's address (its Node needs bgp.ipv${f}Address)`,
      );
      // This node's blocks are blackholed all the same: they need no underlay.
      const blackholes = this.routes.desired(0, () => undefined).filter((r) => r.blackhole);
      return { routes: await this.routes.sync(undefined, undefined, blackholes) };
    }
    const want = this.routes.desired(parent.index, () => undefined);
    const onLink = want.filter((r) => r.blackhole || onSubnetOf(parent.addrs, r.gateway));
    const beyond = want.filter((r) => !onLink.includes(r));
    if (beyond.length)
      this.say(
        `unencapsulated IPv${this.#cfg.family} routes: ${beyond.length} route(s) to nodes outside ${parent.name}'s subnets (e.g. ${beyond[0]?.dst} via ${beyond[0]?.gateway}) need BGP or an overlay; not programmed`,
      );
    else this.clearSaid();
    return { routes: await this.routes.sync(undefined, parent.index, onLink) };
  }

  async removeAll(): Promise<unknown> {
    return this.routes.sync(undefined, this.#parent()?.index, []);
  }
}
