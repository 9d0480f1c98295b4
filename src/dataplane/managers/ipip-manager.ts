// The IP-in-IP overlay, as Felix's ipip manager and its route manager (IPv4): the `tunl0`
// device (made when the ipip module has not made it), up, its MTU (IpInIpMtu, or the
// underlay's less 20), this node's tunnel address (IpInIpTunnelAddr) as its only IPv4
// address; and, when Felix programs IPIP cluster routes (ProgramClusterRoutes Enabled or
// EnabledIPIPOnly, the default; BIRD does otherwise), a remote block in an IPIP pool via
// its node's address `onlink` on tunl0, or (CrossSubnet, same subnet) via that address on
// the underlay, and each of this node's blocks blackholed.
//
// A kernel without the ipip module (CONFIG_NET_IPIP) cannot make tunl0: that is said once,
// and IPIP pools' routes are not programmed. A tunl0 that is not an IPIP device is not ours.
import type { Logger } from '../../log.js';
import { addrChange, addrDump, type Link, linkAddIpip, linkGet } from '../../native/rtnl.js';
import type { RouteUpdate, ToDataplane } from '../../proto/messages.js';
import { IPIP_DEVICE } from '../device-names.js';
import type { InterfaceTable } from './interfaces.js';
import { interfaceHolding, settleDevice, tunnelMtu } from './overlay-device.js';
import { OverlayManager } from './overlay-manager.js';
import type { RouteSpec } from './overlay-routes.js';

const EOPNOTSUPP = 95;

export interface IpipConfig {
  hostname: string;
  /** IpInIpEnabled: undefined means "when an IP pool uses IPIP", as Felix decides. */
  enabled: boolean | undefined;
  /** IpInIpMtu; 0: the host's MTU less 20. */
  mtu: number;
  /** MTUIfacePattern: the interfaces the host's MTU is taken from. */
  mtuIfacePattern?: RegExp | undefined;
  /** IpInIpTunnelAddr (calico-node allocates it; the Node's bgp.ipv4IPIPTunnelAddr). */
  tunnelAddr: string;
  /** ProgramClusterRoutes says Felix (not BIRD) programs IPIP routes. */
  programRoutes: boolean;
  /** DeviceRouteProtocol (default 3). */
  routeProtocol?: number | undefined;
}

export class IpipManager extends OverlayManager {
  readonly name = 'ipip';
  readonly #cfg: IpipConfig;
  /** tunl0's MTU as last sized: its routes carry it too, as Felix's. */
  #mtu = 0;
  /** Node name -> its IPv4 address (HostMetadataUpdate). */
  readonly #hosts = new Map<string, string>();

  constructor(cfg: IpipConfig, ifaces: InterfaceTable, log: Logger) {
    const idle = { devices: 0, routes: 0 };
    super(
      { device: IPIP_DEVICE, type: 'IPIP', enabled: cfg.enabled, routeProtocol: cfg.routeProtocol, idle },
      ifaces,
      log,
    );
    this.#cfg = cfg;
  }

  protected onOverlayUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'HostMetadataUpdate') {
      if (msg.ipv4Addr) this.#hosts.set(msg.hostname, msg.ipv4Addr);
      else this.#hosts.delete(msg.hostname);
      return true;
    }
    if (msg.type === 'HostMetadataRemove') {
      this.#hosts.delete(msg.hostname);
      return true;
    }
    return false;
  }

  protected async applyOverlay(): Promise<Record<string, number>> {
    const existing = await linkGet(IPIP_DEVICE);
    if (existing && existing.kind !== '' && existing.kind !== 'ipip') {
      this.say(`IPIP: ${IPIP_DEVICE} exists but is a ${existing.kind} device, not IPIP; leaving it alone`);
      return this.idle();
    }
    if (!this.enabled) {
      // As Felix's cleanUpIPIPAddrs: tunl0 is the module's own device and stays, bare.
      const routes = await this.routes.sync(existing?.index, undefined, []);
      if (existing)
        for (const a of (await addrDump(existing.index)).filter((x) => !x.includes(':')))
          await addrChange(false, existing.index, a);
      return { devices: 0, routes };
    }
    const ownAddr = this.#hosts.get(this.#cfg.hostname);
    const parent = ownAddr ? interfaceHolding(this.ifaces, ownAddr) : undefined;
    if (!parent) {
      this.say(
        ownAddr
          ? `IPIP: no interface holds this node's address ${ownAddr}`
          : "IPIP: waiting for this node's address (its Node needs bgp.ipv4Address)",
      );
      return this.idle();
    }
    this.parentName = parent.name;
    const device = await this.#ensureDevice(existing);
    if (!device) return this.idle();
    // Without a tunnel address (said above) the device works for nothing: not cleared.
    if (this.#cfg.tunnelAddr) this.clearSaid();
    const routes = this.#cfg.programRoutes
      ? await this.routes.sync(
          device.index,
          parent.index,
          this.routes.desired(parent.index, (r) => this.#tunnelRoute(device.index, r)),
        )
      : 0;
    return { devices: device === existing ? 0 : 1, routes };
  }

  async #ensureDevice(existing: Link | undefined): Promise<Link | undefined> {
    const mtu = await tunnelMtu(this.#cfg.mtu, this.ifaces, this.#cfg.mtuIfacePattern, 'ipip');
    this.#mtu = mtu;
    let link = existing;
    if (!link) {
      try {
        link = await linkAddIpip(IPIP_DEVICE, mtu);
      } catch (e) {
        if ((e as { errno?: number }).errno !== EOPNOTSUPP) throw e;
        this.say(
          `IPIP: this kernel has no ipip module (CONFIG_NET_IPIP), so ${IPIP_DEVICE} cannot be made: traffic to IPIP pools' remote blocks is not routed`,
        );
        return undefined;
      }
      this.log.info({ device: IPIP_DEVICE, mtu }, 'created the IPIP device');
    }
    const addr = this.#cfg.tunnelAddr ? `${this.#cfg.tunnelAddr}/32` : '';
    if (!addr)
      this.say("IPIP: no IpInIpTunnelAddr for this node yet (calico-node sets the Node's bgp.ipv4IPIPTunnelAddr)");
    await settleDevice(link, mtu, addr);
    return link;
  }

  /** A remote block via its node's address, onlink on tunl0 (the kernel encapsulates to that address). */
  #tunnelRoute(index: number, r: RouteUpdate): RouteSpec | undefined {
    const gw = this.#hosts.get(r.dstNodeName);
    // Felix gives IPIP's routes its own protocol (80 by default), not DeviceRouteProtocol.
    return gw
      ? { dst: r.dst, ifindex: index, gateway: gw, onlink: true, blackhole: false, protocol: 'calico', mtu: this.#mtu }
      : undefined;
  }
}
