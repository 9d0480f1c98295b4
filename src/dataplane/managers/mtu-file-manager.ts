// The pods' MTU in /var/lib/calico/mtu, as Felix writes it at start (writeMTUFile): Calico's
// CNI plugin gives new pods that MTU when its own is 0. The encapsulations in use follow the
// IP pools as the overlay managers decide them; the host's MTU is found again at each
// resync, so an interface's new MTU or a new overlay rewrites the file (Felix restarts
// for either).
import type { Logger } from '../../log.js';
import { encapsulation } from '../../model/encapsulation.js';
import type { ToDataplane } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import type { Manager } from './manager.js';
import { type Encap, findHostMtu, podMtu, writeMtuFile } from './mtu.js';

export interface MtuFileConfig {
  /** MTUFilePath; "" writes none. */
  path: string;
  pattern: RegExp | undefined;
  VXLANEnabled: boolean | undefined;
  IpInIpEnabled: boolean | undefined;
  ipv6: boolean;
  wireguard: boolean;
  wireguardV6: boolean;
  /** The configured MTUs (0: the host's less the overhead). */
  mtus: Record<Encap, number>;
}

export class MtuFileManager implements Manager {
  readonly name = 'mtu';
  readonly #cfg: MtuFileConfig;
  readonly #ifaces: InterfaceTable;
  readonly #log: Logger;
  /** IP pools' encapsulations (their RouteUpdates), as the overlay managers see them. */
  readonly #pools = new Map<string, 'VXLAN' | 'IPIP'>();
  #dirty = true;
  #written = 0;
  #failed = '';
  #unmatchedSaid = false;

  readonly #mtuOf: ((name: string) => Promise<number | undefined>) | undefined;

  /** `mtuOf`: an interface's MTU (default: the kernel's, over rtnetlink). */
  constructor(
    cfg: MtuFileConfig,
    ifaces: InterfaceTable,
    log: Logger,
    mtuOf?: (name: string) => Promise<number | undefined>,
  ) {
    this.#cfg = cfg;
    this.#ifaces = ifaces;
    this.#log = log;
    this.#mtuOf = mtuOf;
  }

  onUpdate(msg: ToDataplane): void {
    if (msg.type === 'RouteUpdate' && msg.route.types === 0) {
      const t = msg.route.ipPoolType;
      const was = this.#pools.get(msg.route.dst);
      if (t === 'VXLAN' || t === 'IPIP') this.#pools.set(msg.route.dst, t);
      else this.#pools.delete(msg.route.dst);
      if (was !== this.#pools.get(msg.route.dst)) this.#dirty = true;
    } else if (msg.type === 'RouteRemove' && this.#pools.delete(msg.dst)) this.#dirty = true;
  }

  markResync(): void {
    this.#dirty = true;
  }

  /** An interface the host's MTU is taken from came, went or went up or down. */
  onInterfaces(changed: ReadonlySet<string>): void {
    const p = this.#cfg.pattern;
    if (p) for (const name of changed) if (p.test(name)) this.#dirty = true;
  }

  /** The encapsulations in use, as Felix's determinePodMTU lists them. */
  #inUse(): Encap[] {
    const e = encapsulation(this.#cfg, this.#pools);
    const on: Array<[boolean, Encap]> = [
      [e.ipip, 'ipip'],
      [e.vxlan, 'vxlan'],
      [this.#cfg.ipv6 && e.vxlanV6, 'vxlanV6'],
      [this.#cfg.wireguard, 'wireguard'],
      [this.#cfg.ipv6 && this.#cfg.wireguardV6, 'wireguardV6'],
    ];
    return on.filter(([yes]) => yes).map(([, encap]) => encap);
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#cfg.path || !this.#dirty) return { written: 0 };
    this.#dirty = false;
    const host = await findHostMtu(this.#ifaces, this.#cfg.pattern, this.#mtuOf);
    // Said once while it lasts, not at every interface refresh.
    const unmatched = !host.from.length;
    if (unmatched && !this.#unmatchedSaid)
      this.#log.warn(
        { mtu: host.mtu },
        "Failed to auto-detect host MTU - no interfaces matched the MTU interface pattern. To use auto-MTU, set mtuIfacePattern to match your host's interfaces",
      );
    this.#unmatchedSaid = unmatched;
    const mtu = podMtu(
      this.#inUse().map((encap) => ({ encap, configured: this.#cfg.mtus[encap] })),
      host.mtu,
    );
    try {
      if (!writeMtuFile(this.#cfg.path, mtu)) return { written: 0 };
    } catch (e) {
      // The file is advice to the CNI plugin: the dataplane goes on without it, said once per cause.
      const why = (e as Error).message;
      if (why !== this.#failed) this.#log.error({ path: this.#cfg.path, err: why }, 'Unable to write the MTU file');
      this.#failed = why;
      this.#dirty = true;
      return { written: 0 };
    }
    this.#failed = '';
    if (mtu !== this.#written) this.#log.info({ mtu, hostMTU: host.mtu, from: host.from }, 'Determined pod MTU');
    this.#written = mtu;
    return { written: 1 };
  }
}
