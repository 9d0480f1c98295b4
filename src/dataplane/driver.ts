// The dataplane driver, as Felix's InternalDataplane: messages and interface events only
// update in-memory state and mark it dirty; one apply at a time, coalescing bursts, does
// the kernel work (nftables transaction, then routes and interface settings). Nothing is
// programmed before the calc graph's InSync. The first apply compares against what was
// read back from the kernel at start, so leftovers are swept; failures retry with backoff
// after a fresh read-back; refresh timers re-read the kernel to repair drift.
import type { Config } from '../config/params.js';
import type { Logger } from '../log.js';
import { type IfaceEvent, InterfaceMonitor } from '../native/rtnl.js';
import type { ToDataplane } from '../proto/messages.js';
import { type ApplyStats, NftBackend } from './backends/nft/backend.js';
import { NftDesiredBuilder } from './backends/nft/desired-builder.js';
import { DesiredState } from './desired-state.js';
import { ConntrackManager } from './managers/conntrack-manager.js';
import { InterfaceTable } from './managers/interfaces.js';
import { RouteManager } from './managers/route-manager.js';
import { configureWorkloadInterface, writeSysctl } from './managers/sysctl.js';
import { removeFelixIptablesState } from './migration/takeover.js';
import { families } from './render/ruleset.js';

export interface ApplyReport {
  ms: number;
  nft: ApplyStats;
  routes: { added: number; removed: number };
}

export interface DriverOptions {
  config: Config;
  log: Logger;
  /** Delay that lets a burst of updates coalesce into one apply. */
  coalesceMs?: number;
  onApplied?: (r: ApplyReport) => void;
  onApplyError?: (e: Error) => void;
  onEndpointStatus?: (iface: string, up: boolean | undefined) => void;
  /** Remove Calico's iptables-mode state before the first apply (default true; see migration/takeover.ts). */
  takeOverFromFelix?: boolean;
}

export class DataplaneDriver {
  readonly state = new DesiredState();
  readonly ifaces = new InterfaceTable();
  readonly #opts: DriverOptions;
  readonly #log: Logger;
  readonly #builders: NftDesiredBuilder[];
  readonly #backend = new NftBackend();
  readonly #routes: RouteManager;
  readonly #conntrack: ConntrackManager;
  readonly #monitor: InterfaceMonitor;
  #configured = new Set<string>();
  #forwarding = false;
  #inFlight: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #refreshTimers: NodeJS.Timeout[] = [];
  #dirty = false;
  #needResync = true;
  #backoffMs = 0;
  #stopped = false;
  #loggedUp = new Map<string, boolean>();
  #applyStarted: number | undefined;
  #takeover: Promise<unknown> | undefined;

  constructor(opts: DriverOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'int_dataplane' });
    const cfg = opts.config;
    this.#builders = families(cfg).map((f) => new NftDesiredBuilder(cfg, f));
    this.#routes = new RouteManager(cfg.InterfacePrefix, this.#log);
    this.#conntrack = new ConntrackManager(this.#log);
    this.#monitor = new InterfaceMonitor(cfg.InterfaceExclude, (events) => this.onIfaceEvents(events));
  }

  start(): void {
    if (this.#opts.takeOverFromFelix ?? true) this.#takeover = removeFelixIptablesState(this.#log);
    this.#monitor.start();
    const cfg = this.#opts.config;
    const every = (seconds: number, f: () => void) => {
      if (seconds > 0) this.#refreshTimers.push(setInterval(f, seconds * 1000).unref());
    };
    // nftables mode: our IP sets live in our tables, so either refresh re-reads both.
    every(cfg.NftablesRefreshInterval, () => this.#refresh('rules'));
    every(cfg.IpsetsRefreshInterval, () => this.#refresh('IP sets'));
    every(cfg.RouteRefreshInterval, () => {
      this.#routes.markResync();
      this.#schedule();
    });
    every(cfg.InterfaceRefreshInterval, () => {
      this.#monitor.resync();
      // Felix writes interface sysctls only when an interface appears; we also put back any
      // that someone changed since (proxy_arp off breaks the pod's gateway, rp_filter off
      // lets it spoof), on the same timer as the interface resync.
      this.#configured.clear();
      this.#forwarding = false;
      this.#schedule();
    });
  }

  /** Stops watching and applying; leaves the programmed dataplane in place. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const t of this.#refreshTimers) clearInterval(t);
    this.#monitor.stop();
    await this.#inFlight;
  }

  onMessages(msgs: ToDataplane[]): void {
    this.state.apply(msgs);
    this.#schedule();
  }

  onIfaceEvents(events: IfaceEvent[]): void {
    if (events.some((e) => e.type === 'ifaceOverflow')) this.#log.warn('interface events overflowed the socket; resynchronised with a full dump');
    // A workload route removed behind our back (not by an apply of ours) is put back.
    if (events.some((e) => e.type === 'routeDeleted' && this.#routes.wanted(e.dst, e.index))) this.#routes.markResync();
    for (const name of this.ifaces.apply(events)) {
      const iface = this.ifaces.byName.get(name);
      if (!iface) for (const s of [true, false]) this.#configured.delete(`${name}/${s}`);
    }
    // Host endpoints resolve against the host's own interfaces and their addresses.
    const prefixes = this.#opts.config.InterfacePrefix;
    const host = new Map<string, string[]>();
    for (const i of this.ifaces.byName.values()) if (!prefixes.some((p) => i.name.startsWith(p))) host.set(i.name, i.addrs);
    this.state.setHostInterfaces(host);
    this.#schedule();
  }

  /** An apply is running and has been for longer than `ms` (the liveness check). */
  stuckFor(ms: number): boolean {
    return this.#applyStarted !== undefined && performance.now() - this.#applyStarted > ms;
  }

  #refresh(what: string): void {
    this.#log.debug({ what }, 'refresh: re-reading the kernel');
    this.#needResync = true;
    this.#schedule();
  }

  #schedule(delay = this.#opts.coalesceMs ?? 1): void {
    this.#dirty = true;
    if (this.#stopped || this.#timer || this.#inFlight || !this.state.inSync) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#inFlight = this.#apply().finally(() => {
        this.#inFlight = undefined;
        if (this.#dirty) this.#schedule(this.#backoffMs || undefined);
      });
    }, delay);
  }

  async #apply(): Promise<void> {
    this.#dirty = false;
    const t0 = performance.now();
    this.#applyStarted = t0;
    try {
      if (this.#needResync) {
        await this.#takeover;
        const started = performance.now();
        await this.#backend.resync(this.#builders.map((b) => b.family));
        for (const b of this.#builders) b.rebuild(this.state);
        this.state.takeDirty();
        this.#routes.markResync();
        this.#needResync = false;
        this.#log.info({ ms: Math.round(performance.now() - started) }, 'read back our nftables tables; comparing everything');
      } else {
        const dirty = this.state.takeDirty();
        for (const b of this.#builders) b.update(this.state, dirty);
      }
      const nft = await this.#backend.apply(this.#builders.map((b) => b.desired));
      await this.#configureInterfaces();
      const routes = await this.#routes.apply(this.state, this.ifaces);
      await this.#conntrack.apply(this.state);
      this.#logEndpointStatus();
      this.#backoffMs = 0;
      const report: ApplyReport = { ms: performance.now() - t0, nft, routes };
      if (nft.ops || routes.added || routes.removed) this.#log.debug({ ...report.nft, routes, ms: Math.round(report.ms * 1000) / 1000 }, 'applied');
      this.#opts.onApplied?.(report);
    } catch (e) {
      this.#backoffMs = Math.min(Math.max(this.#backoffMs * 2, 100), 5000);
      this.#needResync = true;
      this.#dirty = true;
      this.#log.error({ error: (e as Error).message, retryInMs: this.#backoffMs }, 'dataplane apply failed; will re-read the kernel and retry');
      this.#opts.onApplyError?.(e as Error);
    } finally {
      this.#applyStarted = undefined;
    }
  }

  async #configureInterfaces(): Promise<void> {
    // As Felix with IPForwarding Enabled: IPv4 forwarding, and IPv6's when IPv6 is on.
    if (!this.#forwarding && this.#opts.config.IPForwarding === 'Enabled') {
      const v4 = await writeSysctl('net/ipv4/ip_forward', '1', this.#log);
      const v6 = !this.#opts.config.Ipv6Support || (await writeSysctl('net/ipv6/conf/all/forwarding', '1', this.#log));
      this.#forwarding = v4 && v6;
    }
    for (const ep of this.state.weps.values()) {
      const iface = this.ifaces.byName.get(ep.name);
      const spoofing = this.#opts.config.WorkloadSourceSpoofing === 'Any' && ep.allowSpoofedSourcePrefixes.length > 0;
      const want = `${ep.name}/${spoofing}`;
      if (!iface || this.#configured.has(want)) continue;
      await configureWorkloadInterface(ep.name, this.#opts.config.Ipv6Support, this.#log, spoofing);
      this.#configured.delete(`${ep.name}/${!spoofing}`);
      this.#configured.add(want);
    }
  }

  #logEndpointStatus(): void {
    for (const ep of this.state.weps.values()) {
      const up = !!this.ifaces.byName.get(ep.name)?.up && ep.state === 'active';
      if (this.#loggedUp.get(ep.name) === up) continue;
      this.#loggedUp.set(ep.name, up);
      this.#log.info({ iface: ep.name, status: up ? 'up' : 'down' }, 'workload endpoint status');
      this.#opts.onEndpointStatus?.(ep.name, up);
    }
    const present = new Set([...this.state.weps.values()].map((ep) => ep.name));
    for (const name of [...this.#loggedUp.keys()]) {
      if (present.has(name)) continue;
      this.#loggedUp.delete(name);
      this.#opts.onEndpointStatus?.(name, undefined);
    }
  }

  /** --cleanup: our nftables tables and our routes, nothing else. */
  async cleanup(): Promise<void> {
    this.#monitor.start();
    await new Promise((r) => setTimeout(r, 200));
    const removed = await this.#routes.removeAll(this.ifaces);
    const fams = this.#builders.map((b) => b.family);
    await this.#backend.removeTables(fams);
    this.#monitor.stop();
    this.#log.info({ routes: removed, families: fams }, 'removed palisade state');
  }
}
