// The per-interface kernel settings of Felix's endpoint manager: IP forwarding once, and
// for each local workload interface that exists the sysctls of configureWorkloadInterface
// (proxy ARP, rp_filter, ...), written once per interface and spoofing setting. markResync
// (the interface refresh timer) writes them all again: Felix writes them only when an
// interface appears, and a value changed behind our back would otherwise stay wrong.
import type { Config } from '../../config/params.js';
import type { Logger } from '../../log.js';
import type { ToDataplane } from '../../proto/messages.js';
import type { InterfaceTable } from './interfaces.js';
import { LocalEndpoints, type Manager } from './manager.js';
import { configureWorkloadInterface, writeSysctl } from './sysctl.js';

export class EndpointSysctlManager implements Manager {
  readonly name = 'sysctls';
  readonly #endpoints = new LocalEndpoints();
  /** "<iface>/<spoofing>" already written. */
  readonly #configured = new Set<string>();
  #forwarding = false;
  /** An endpoint or interface changed, or a resync: the endpoints are walked again. */
  #pending = true;

  constructor(
    readonly config: Pick<Config, 'IPForwarding' | 'Ipv6Support' | 'WorkloadSourceSpoofing'>,
    readonly ifaces: InterfaceTable,
    readonly log: Logger,
    private readonly configure: typeof configureWorkloadInterface = configureWorkloadInterface,
  ) {}

  onUpdate(msg: ToDataplane): void {
    if (this.#endpoints.onUpdate(msg)) this.#pending = true;
  }

  /** An interface that went away is configured afresh if it comes back. */
  onInterfaces(changed: ReadonlySet<string>): void {
    if (changed.size) this.#pending = true;
    for (const name of changed)
      if (!this.ifaces.byName.has(name)) for (const s of [true, false]) this.#configured.delete(`${name}/${s}`);
  }

  markResync(): void {
    this.#configured.clear();
    this.#forwarding = false;
    this.#pending = true;
  }

  async apply(): Promise<{ interfaces: number }> {
    // As Felix with IPForwarding Enabled: IPv4 forwarding, and IPv6's when IPv6 is on.
    if (!this.#forwarding && this.config.IPForwarding === 'Enabled') {
      const v4 = await writeSysctl('net/ipv4/ip_forward', '1', this.log);
      const v6 = !this.config.Ipv6Support || (await writeSysctl('net/ipv6/conf/all/forwarding', '1', this.log));
      this.#forwarding = v4 && v6;
    }
    // Under churn of remote endpoints nothing here changes between most applies.
    if (!this.#pending) return { interfaces: 0 };
    this.#pending = false;
    try {
      return { interfaces: await this.#configureAll() };
    } catch (e) {
      this.#pending = true;
      throw e;
    }
  }

  async #configureAll(): Promise<number> {
    let configured = 0;
    for (const ep of this.#endpoints.values()) {
      const spoofing = this.config.WorkloadSourceSpoofing === 'Any' && ep.allowSpoofedSourcePrefixes.length > 0;
      const want = `${ep.name}/${spoofing}`;
      if (!this.ifaces.byName.has(ep.name) || this.#configured.has(want)) continue;
      await this.configure(ep.name, this.config.Ipv6Support, this.log, spoofing);
      this.#configured.delete(`${ep.name}/${!spoofing}`);
      this.#configured.add(want);
      configured++;
    }
    return configured;
  }
}
