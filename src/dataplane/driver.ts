// The dataplane driver, as Felix's InternalDataplane: messages and interface events only
// update in-memory state (the desired state the rules backend renders, and each manager's
// own) and mark it dirty; one apply at a time, coalescing bursts, does the kernel work:
// the rules backend's transaction, then each manager's apply in order (routes, interface
// sysctls, conntrack). Nothing is programmed before the calc graph's InSync. The first
// apply compares against what was read back from the kernel at start, so leftovers are
// swept; failures retry with backoff after a fresh read-back; refresh timers re-read the
// kernel to repair drift.
import type { Config } from '../config/params.js';
import type { Logger } from '../log.js';
import { clusterRoutesOf, releaseOf, traitsOf } from '../model/release.js';
import { type IfaceEvent, InterfaceMonitor } from '../native/rtnl.js';
import type { ToDataplane } from '../proto/messages.js';
import { createRulesBackend } from './backends/factory.js';
import type { MembersBesideStats, RulesApplyStats, RulesBackend, RulesDrift } from './backends/rules-backend.js';
import { DesiredState } from './desired-state.js';
import { ArpManager } from './managers/arp-manager.js';
import { ConntrackManager } from './managers/conntrack-manager.js';
import { EndpointSysctlManager } from './managers/endpoint-sysctls.js';
import { InterfaceTable } from './managers/interfaces.js';
import type { Manager } from './managers/manager.js';
import { RouteManager } from './managers/route-manager.js';
import { IpipManager } from './managers/ipip-manager.js';
import { NoEncapManager } from './managers/noencap-manager.js';
import { type MtuFileConfig, MtuFileManager } from './managers/mtu-file-manager.js';
import { OverlayManager } from './managers/overlay-manager.js';
import { VxlanManager } from './managers/vxlan-manager.js';
import { WireguardManager } from './managers/wireguard-manager.js';
import { allocateMarks } from './render/marks.js';
import { KernelWireguardDevice, type WireguardDevice } from './wireguard/device.js';
import type { WgDevice } from '../native/wg.js';
import { wireguardTables } from '../model/wireguard-tables.js';
import { EndpointStatusManager, type EndpointStatusChange } from '../status/endpoint-status.js';
import { removeOtherModeState } from './migration/mode-switch.js';
import { Slicer } from './slicer.js';

/** How long a cold render or plan runs before the event loop gets a turn (issue 21: <= 20 ms). */
const APPLY_SLICE_MS = 3;

export interface ApplyReport {
  ms: number;
  rules: RulesApplyStats;
  /** Chains and sets a refresh found changed behind our back, repaired by this apply. */
  driftRepaired: number;
  /**
   * The refresh behind this apply, ms: its read-back (the kernel dump, and in a refresh
   * inside the apply its parse) and its comparison. A check (RulesBackend.check) ran
   * beside earlier applies; only its repairs are this apply's.
   */
  refresh?: { readBackMs: number; driftMs: number };
  /** Rules in our chains after this apply. */
  rulesTotal: number;
  /** Each manager's counters, by manager name ("routes": added, removed; ...). */
  managers: Record<string, Record<string, number>>;
}

/**
 * How onMessages() took a batch: "now" (no apply in flight), "held" for the next apply,
 * "beside" the apply in flight (IP-set members alone; one onMembersBeside call follows),
 * "split" (its members beside, the rest held) or "partly" (some members beside, the rest
 * held with other members).
 */
export type MessagesTaken = 'now' | 'held' | 'beside' | 'split' | 'partly';

const isIpSetMessage = (
  m: ToDataplane,
): m is Extract<ToDataplane, { type: 'IPSetUpdate' | 'IPSetDeltaUpdate' | 'IPSetRemove' }> =>
  m.type === 'IPSetUpdate' || m.type === 'IPSetDeltaUpdate' || m.type === 'IPSetRemove';

export interface DriverOptions {
  config: Config;
  log: Logger;
  /** Delay that lets a burst of updates coalesce into one apply. */
  coalesceMs?: number;
  onApplied?: (r: ApplyReport) => void;
  onApplyError?: (e: Error) => void;
  /** IP-set members programmed beside an apply in flight, one call per batch of messages taken so. */
  onMembersBeside?: (r: MembersBesideStats) => void;
  onEndpointStatus?: (iface: string, up: boolean | undefined) => void;
  /** Endpoint status changes after each apply (the datastore's status reporter). */
  onEndpointStatuses?: (changes: EndpointStatusChange[]) => void;
  /** Remove the other mode's Calico state after the first apply (default true; see migration/mode-switch.ts). */
  takeOverFromFelix?: boolean;
  /** The rules backend (default: createRulesBackend(config)); tests pass a NoopRulesBackend. */
  rules?: RulesBackend;
  /** The managers after the rules backend (default: routes, sysctls, conntrack). */
  managers?: (ifaces: InterfaceTable) => Manager[];
  /** This node's WireGuard public key changed, per family ("" for none): the datastore's Node status. */
  onWireguardKey?: (family: 4 | 6, key: string) => void;
  /** The WireGuard device kind (default: the kernel's). */
  wireguardDevice?: WireguardDevice;
  /** The interface monitor (default: the native one); tests pass a stand-in. */
  monitor?: (onEvents: (events: IfaceEvent[]) => void) => Pick<InterfaceMonitor, 'start' | 'stop' | 'resync'>;
}

/** MTUIfacePattern, compiled (the configuration checked it compiles); "" matches nothing, as Felix's nil pattern. */
function mtuPattern(cfg: Config): RegExp | undefined {
  return cfg.MTUIfacePattern ? new RegExp(cfg.MTUIfacePattern) : undefined;
}

function mtuFileConfig(cfg: Config): MtuFileConfig {
  return {
    path: cfg.MTUFilePath,
    pattern: mtuPattern(cfg),
    VXLANEnabled: cfg.VXLANEnabled,
    IpInIpEnabled: cfg.IpInIpEnabled,
    ipv6: cfg.Ipv6Support,
    wireguard: cfg.WireguardEnabled,
    wireguardV6: cfg.WireguardEnabledV6,
    mtus: {
      ipip: cfg.IpInIpMtu,
      vxlan: cfg.VXLANMTU,
      vxlanV6: cfg.VXLANMTUV6,
      wireguard: cfg.WireguardMTU,
      wireguardV6: cfg.WireguardMTUV6,
    },
  };
}

/** One WireGuard manager per family (disabled ones tidy up after a node where WireGuard was on). */
function wireguardManagers(
  cfg: Config,
  backend: string,
  ifaces: InterfaceTable,
  log: Logger,
  opts: Pick<DriverOptions, 'onWireguardKey' | 'wireguardDevice'>,
): WireguardManager[] {
  const tables = wireguardTables(cfg.RouteTableRange, cfg.RouteTableRanges);
  const mask = backend === 'nftables' ? cfg.NftablesMarkMask : cfg.IptablesMarkMask;
  const fwmark = allocateMarks(mask, cfg.WireguardEnabled || cfg.WireguardEnabledV6).wireguard;
  const device = opts.wireguardDevice ?? new KernelWireguardDevice();
  return ([4, 6] as const).map(
    (family) =>
      new WireguardManager(
        {
          family,
          hostname: cfg.FelixHostname,
          enabled: family === 4 ? cfg.WireguardEnabled : cfg.WireguardEnabledV6 && cfg.Ipv6Support,
          device: family === 4 ? cfg.WireguardInterfaceName : cfg.WireguardInterfaceNameV6,
          listenPort: family === 4 ? cfg.WireguardListeningPort : cfg.WireguardListeningPortV6,
          mtu: family === 4 ? cfg.WireguardMTU : cfg.WireguardMTUV6,
          mtuIfacePattern: mtuPattern(cfg),
          table: family === 4 ? tables.v4 : tables.v6,
          staleTable: family === 6 ? tables.spareV6 : undefined,
          rulePriority: cfg.WireguardRoutingRulePriority,
          fwmark,
          hostEncryption: cfg.WireguardHostEncryptionEnabled,
          keepalive: cfg.WireguardPersistentKeepAlive,
          threading: cfg.WireguardThreadingEnabled,
          required: cfg.WireguardRequired,
          routeProtocol: cfg.DeviceRouteProtocol,
          ...(opts.onWireguardKey ? { onPublicKey: opts.onWireguardKey } : {}),
        },
        device,
        ifaces,
        log,
      ),
  );
}

export class DataplaneDriver {
  readonly state = new DesiredState();
  readonly ifaces = new InterfaceTable();
  readonly #opts: DriverOptions;
  readonly #log: Logger;
  readonly #rules: RulesBackend;
  #postWriteTimer: NodeJS.Timeout | undefined;
  #postWriteSecs = 0;
  /** The rules backend's name ("nftables", "iptables-nft", ...): what the metrics are about. */
  get rulesBackend(): string {
    return this.#rules.name;
  }
  /** Each WireGuard manager's state after its last apply (for metrics and status). */
  wireguardStates(): Array<{ family: 4 | 6; usable: boolean; publicKey: string; peers: number; blocked: string[] }> {
    return this.#wireguard().map((m) => ({ family: m.family, ...m.state }));
  }
  /** The WireGuard devices palisade runs, as the kernel has them now (Felix's WireGuard metrics). */
  async wireguardDevices(): Promise<Array<{ iface: string; device: WgDevice }>> {
    const out: Array<{ iface: string; device: WgDevice }> = [];
    for (const m of this.#wireguard()) {
      const device = await m.readDevice();
      if (device) out.push({ iface: m.device, device });
    }
    return out;
  }
  #wireguard(): WireguardManager[] {
    return this.#managers.filter((m): m is WireguardManager => m instanceof WireguardManager);
  }
  readonly #routes: RouteManager | undefined;
  readonly #sysctls: EndpointSysctlManager | undefined;
  readonly #statuses: EndpointStatusManager | undefined;
  /** The overlays' route managers (VXLAN, IPIP, unencapsulated), refreshed with the routes. */
  readonly #overlays: OverlayManager[];
  /** The MTU file's manager, refreshed with the interfaces. */
  readonly #mtuFile: MtuFileManager | undefined;
  readonly #managers: Manager[];
  readonly #monitor: Pick<InterfaceMonitor, 'start' | 'stop' | 'resync'>;
  #inFlight: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #refreshTimers: NodeJS.Timeout[] = [];
  #dirty = false;
  #needResync = true;
  /** A refresh timer fired: read the kernel back and compare everything, without re-rendering. */
  #needRefresh = false;
  /** A refresh running beside applies (RulesBackend.check), and what it found for the next apply's report. */
  #checking: Promise<void> | undefined;
  #checked: { repaired: number; readBackMs: number; driftMs: number } | undefined;
  #backoffMs = 0;
  #stopped = false;
  #loggedUp = new Map<string, boolean>();
  /** A workload endpoint or an interface changed since the endpoints' statuses were last said. */
  #statusStale = true;
  #applyStarted: number | undefined;
  /** Messages that arrived during an apply, taken when it ends. */
  readonly #held: ToDataplane[][] = [];
  /** IP sets with a message among them: their member changes are held too, in order. */
  readonly #heldSets = new Set<string>();
  /** The other mode's state is still to be removed: after the first apply that commits ours. */
  #otherModePending = false;

  constructor(opts: DriverOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'int_dataplane' });
    const cfg = opts.config;
    // Felix's or BIRD's, as the cluster's release reads ProgramClusterRoutes (D32).
    const clusterRoutes = clusterRoutesOf(cfg.ProgramClusterRoutes, releaseOf(cfg.CalicoVersion));
    if (clusterRoutes.problem) this.#log.warn({ param: 'ProgramClusterRoutes' }, clusterRoutes.problem);
    this.#rules = opts.rules ?? createRulesBackend(cfg, this.#log);
    this.#managers = opts.managers?.(this.ifaces) ?? [
      new RouteManager(cfg.InterfacePrefix, this.ifaces, this.#log, {
        protocol: cfg.DeviceRouteProtocol,
        sourceV4: cfg.DeviceRouteSourceAddress,
        sourceV6: cfg.DeviceRouteSourceAddressIPv6,
        removeExternal: cfg.RemoveExternalRoutes,
        floatingIPs: cfg.FloatingIPs === 'Enabled',
      }),
      ...([4, 6] as const).map(
        (family) =>
          new VxlanManager(
            {
              hostname: cfg.FelixHostname,
              // IPv6 VXLAN has no setting: on while an IPv6 pool uses it (and IPv6 is programmed).
              enabled: family === 4 ? cfg.VXLANEnabled : cfg.Ipv6Support ? undefined : false,
              vni: cfg.VXLANVNI,
              port: cfg.VXLANPort,
              mtu: family === 4 ? cfg.VXLANMTU : cfg.VXLANMTUV6,
              mtuIfacePattern: mtuPattern(cfg),
              routeProtocol: cfg.DeviceRouteProtocol,
              family,
            },
            this.ifaces,
            this.#log,
          ),
      ),
      new IpipManager(
        {
          hostname: cfg.FelixHostname,
          enabled: cfg.IpInIpEnabled,
          mtu: cfg.IpInIpMtu,
          mtuIfacePattern: mtuPattern(cfg),
          tunnelAddr: cfg.IpInIpTunnelAddr,
          programRoutes: clusterRoutes.ipip,
          routeProtocol: cfg.DeviceRouteProtocol,
        },
        this.ifaces,
        this.#log,
      ),
      ...([4, 6] as const).map(
        (family) =>
          new NoEncapManager(
            {
              hostname: cfg.FelixHostname,
              family,
              programRoutes: clusterRoutes.noEncap,
              ipv6: cfg.Ipv6Support,
              VXLANEnabled: cfg.VXLANEnabled,
              IpInIpEnabled: cfg.IpInIpEnabled,
              wireguard: family === 4 ? cfg.WireguardEnabled : cfg.WireguardEnabledV6,
              routeProtocol: cfg.DeviceRouteProtocol,
            },
            this.ifaces,
            this.#log,
          ),
      ),
      ...wireguardManagers(cfg, this.#rules.name, this.ifaces, this.#log, opts),
      new MtuFileManager(mtuFileConfig(cfg), this.ifaces, this.#log),
      new EndpointSysctlManager(cfg, this.ifaces, this.#log),
      new ConntrackManager(this.#log),
      new ArpManager({ enabled: traitsOf(releaseOf(cfg.CalicoVersion)).arpTable }, this.#log),
      // Last: an endpoint is up only once its rules, routes and sysctls are in.
      new EndpointStatusManager(
        {
          pathPrefix: cfg.EndpointStatusPathPrefix,
          ...(opts.onEndpointStatuses ? { onChanges: opts.onEndpointStatuses } : {}),
        },
        this.ifaces,
        this.#log,
      ),
    ];
    // The managers the refresh timers and route events address directly (when present).
    this.#routes = this.#managers.find((m): m is RouteManager => m instanceof RouteManager);
    this.#sysctls = this.#managers.find((m): m is EndpointSysctlManager => m instanceof EndpointSysctlManager);
    this.#statuses = this.#managers.find((m): m is EndpointStatusManager => m instanceof EndpointStatusManager);
    this.#overlays = this.#managers.filter((m): m is OverlayManager => m instanceof OverlayManager);
    this.#mtuFile = this.#managers.find((m): m is MtuFileManager => m instanceof MtuFileManager);
    const onEvents = (events: IfaceEvent[]) => this.onIfaceEvents(events);
    this.#monitor = opts.monitor?.(onEvents) ?? new InterfaceMonitor(cfg.InterfaceExclude, onEvents);
  }

  start(): void {
    this.#otherModePending = this.#opts.takeOverFromFelix ?? true;
    this.#monitor.start();
    const cfg = this.#opts.config;
    const every = (seconds: number, f: () => void) => {
      if (seconds > 0) this.#refreshTimers.push(setInterval(f, seconds * 1000).unref());
    };
    if (this.#rules.name === 'nftables') {
      // Our IP sets live in our tables: one read-back serves both refreshes, so one timer
      // at the shorter interval (two would re-read the whole table twice in a row every
      // time their periods meet, seconds each at 250,000 set elements).
      const periods = [cfg.NftablesRefreshInterval, cfg.IpsetsRefreshInterval].filter((s) => s > 0);
      every(periods.length ? Math.min(...periods) : 0, () => this.#refresh('rules and IP sets'));
    } else {
      every(cfg.IptablesRefreshInterval, () => this.#refresh('rules'));
      every(cfg.IpsetsRefreshInterval, () => this.#refresh('IP sets'));
    }
    every(cfg.RouteRefreshInterval, () => {
      this.#routes?.markResync();
      for (const o of this.#overlays) o.markResync();
      this.#schedule();
    });
    every(cfg.InterfaceRefreshInterval, () => {
      this.#monitor.resync();
      // Interface sysctls are written again too (managers/endpoint-sysctls.ts), and the
      // endpoint status directory is read back and repaired.
      this.#sysctls?.markResync();
      this.#statuses?.markResync();
      // The host's MTU is found again (Felix checks it every 30 s and restarts on a change).
      this.#mtuFile?.markResync();
      this.#schedule();
    });
  }

  /** Stops watching and applying; leaves the programmed dataplane in place. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#postWriteTimer);
    for (const t of this.#refreshTimers) clearInterval(t);
    this.#monitor.stop();
    await this.#inFlight;
    await this.#checking;
  }

  /** Takes a batch of the calc graph's messages (how: MessagesTaken). */
  onMessages(msgs: ToDataplane[]): MessagesTaken {
    // As Felix's dataplane reads its channel only between applies: a sliced render must
    // not see the state move under it. Only IP-set members may go beside an apply.
    if (!this.#inFlight) {
      this.#take(msgs);
      return 'now';
    }
    const { beside, held } = this.#splitBeside(msgs);
    if (held.length) {
      this.#held.push(held);
      this.#dirty = true;
    }
    if (!beside.length) return 'held';
    this.#takeBeside(beside);
    if (!held.length) return 'beside';
    return held.some(isIpSetMessage) ? 'partly' : 'split';
  }

  /**
   * While the apply in flight waits for the kernel to take its rules
   * (RulesBackend.canTakeMembersBeside), member changes of sets already programmed are
   * programmed now rather than after that commit and the next apply's. Felix's order
   * holds: members ahead of the rules that came with them (the calc graph's flush sends
   * them first too). A set with a change held is held from then on, so no change of a set
   * overtakes another of the same set.
   */
  #splitBeside(msgs: ToDataplane[]): { beside: ToDataplane[]; held: ToDataplane[] } {
    const rules = this.#rules;
    if (!rules.canTakeMembersBeside || !rules.applyMembersBeside) return { beside: [], held: msgs };
    const beside: ToDataplane[] = [];
    const held: ToDataplane[] = [];
    for (const m of msgs) {
      const now =
        m.type === 'IPSetDeltaUpdate' &&
        !this.#heldSets.has(m.id) &&
        this.state.membersOnly(m.id) &&
        rules.canTakeMembersBeside([m.id]);
      if (now) beside.push(m);
      else {
        held.push(m);
        if (isIpSetMessage(m)) this.#heldSets.add(m.id);
      }
    }
    return { beside, held };
  }

  #takeBeside(msgs: ToDataplane[]): void {
    this.state.apply(msgs);
    for (const m of this.#managers) for (const msg of msgs) m.onUpdate(msg);
    const ids = new Set<string>();
    for (const m of msgs) if (m.type === 'IPSetDeltaUpdate') ids.add(m.id);
    // The apply in flight fails with a failure of these (and everything is read back).
    this.#rules.applyMembersBeside?.(this.state.takeMemberDeltas(ids)).then(
      (r) => this.#opts.onMembersBeside?.(r),
      () => {},
    );
  }

  #take(msgs: ToDataplane[]): void {
    this.state.apply(msgs);
    if (!this.#statusStale)
      this.#statusStale = msgs.some((m) => m.type === 'WorkloadEndpointUpdate' || m.type === 'WorkloadEndpointRemove');
    for (const m of this.#managers) for (const msg of msgs) m.onUpdate(msg);
    this.#schedule();
  }

  onIfaceEvents(events: IfaceEvent[]): void {
    if (events.some((e) => e.type === 'ifaceOverflow'))
      this.#log.warn('interface events overflowed the socket; resynchronised with a full dump');
    // A workload route removed behind our back (not by an apply of ours) is put back.
    const routes = this.#routes;
    if (routes && events.some((e) => e.type === 'routeDeleted' && routes.wanted(e.dst, e.index))) routes.markResync();
    const changed = this.ifaces.apply(events);
    if (changed.size) this.#statusStale = true;
    for (const m of this.#managers) m.onInterfaces?.(changed);
    // Host endpoints resolve against the host's own interfaces and their addresses.
    const prefixes = this.#opts.config.InterfacePrefix;
    const host = new Map<string, string[]>();
    for (const i of this.ifaces.byName.values())
      if (!prefixes.some((p) => i.name.startsWith(p))) host.set(i.name, i.addrs);
    this.state.setHostInterfaces(host);
    this.#schedule();
  }

  /** An apply is running and has been for longer than `ms` (the liveness check). */
  stuckFor(ms: number): boolean {
    return this.#applyStarted !== undefined && performance.now() - this.#applyStarted > ms;
  }

  #refresh(what: string): void {
    this.#log.debug({ what }, 'refresh: re-reading the kernel');
    if (this.#rules.check && this.state.inSync && !this.#needResync) {
      if (this.#checking) return;
      for (const m of this.#managers) m.markResync?.();
      this.#checking = this.#check().finally(() => (this.#checking = undefined));
    } else this.#needRefresh = true;
    this.#schedule();
  }

  /**
   * A refresh beside applies: updates keep flowing while our tables are read back and
   * compared; the next apply repairs what drifted. A lost table, or a check that fails,
   * falls back to a refresh inside an apply.
   */
  async #check(): Promise<void> {
    try {
      const r = await this.#rules.check!(new Slicer(APPLY_SLICE_MS));
      if (r.outcome === 'lost') {
        this.#log.warn('a table of ours is gone; reading everything back');
        this.#needRefresh = true;
      }
      const drift = r.drift.filter((d) => d.chains.length || d.sets.length);
      const repaired = drift.reduce((n, d) => n + d.chains.length + d.sets.length, 0);
      if (repaired) this.#warnDrift(drift);
      this.#checked = {
        repaired: (this.#checked?.repaired ?? 0) + repaired,
        readBackMs: r.dumpMs,
        driftMs: r.compareMs,
      };
    } catch (e) {
      this.#log.error({ error: (e as Error).message }, 'refresh failed; reading everything back in the next apply');
      this.#needRefresh = true;
    }
    this.#schedule();
  }

  #warnDrift(drift: RulesDrift[]): void {
    this.#log.warn(
      { drift: drift.map((d) => ({ family: d.family, chains: d.chains.slice(0, 10), sets: d.sets.slice(0, 10) })) },
      'our kernel state was changed behind our back; repairing it',
    );
  }

  // After a failure nothing runs before its backoff: not the held messages' apply, not a refresh.
  #schedule(): void {
    this.#dirty = true;
    if (this.#stopped || this.#timer || this.#inFlight || !this.state.inSync) return;
    const delay = Math.max(this.#opts.coalesceMs ?? 1, this.#backoffMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#inFlight = this.#apply().finally(() => {
        this.#inFlight = undefined;
        this.#heldSets.clear();
        for (const msgs of this.#held.splice(0)) this.#take(msgs);
        if (this.#dirty) this.#schedule();
      });
    }, delay);
  }

  async #apply(): Promise<void> {
    this.#dirty = false;
    const t0 = performance.now();
    this.#applyStarted = t0;
    for (const m of this.#managers) m.beginApply?.();
    try {
      let driftRepaired = 0;
      let refresh: ApplyReport['refresh'];
      const slicer = new Slicer(APPLY_SLICE_MS);
      // A check's drift is adopted by this apply's rules transaction (a read-back here supersedes it).
      const checked = this.#checked;
      this.#checked = undefined;
      if (this.#needResync) await this.#resyncAll(slicer);
      else if (this.#needRefresh) ({ repaired: driftRepaired, ...refresh } = await this.#refreshAll(slicer));
      else {
        this.#rules.update(this.state, this.state.takeDirty());
        if (checked) ({ repaired: driftRepaired, ...refresh } = checked);
      }
      const rules = await this.#rules.apply(slicer);
      if (rules.ops > 0) this.#wrote();
      const managers: ApplyReport['managers'] = {};
      for (const m of this.#managers) managers[m.name] = await m.apply();
      await this.#removeOtherMode();
      this.#logEndpointStatus();
      this.#backoffMs = 0;
      const report: ApplyReport = {
        ms: performance.now() - t0,
        rules,
        managers,
        driftRepaired,
        rulesTotal: this.#rules.ruleCount(),
        ...(refresh ? { refresh } : {}),
      };
      const changedAny = rules.ops > 0 || Object.values(managers).some((c) => Object.values(c).some((n) => n > 0));
      if (changedAny) this.#log.debug({ ...rules, ...managers, ms: Math.round(report.ms * 1000) / 1000 }, 'applied');
      this.#opts.onApplied?.(report);
    } catch (e) {
      this.#backoffMs = Math.min(Math.max(this.#backoffMs * 2, 100), 5000);
      this.#needResync = true;
      this.#dirty = true;
      this.#log.error(
        { error: (e as Error).message, retryInMs: this.#backoffMs },
        'dataplane apply failed; will re-read the kernel and retry',
      );
      this.#opts.onApplyError?.(e as Error);
    } finally {
      this.#applyStarted = undefined;
    }
  }

  // As Felix's iptables Table: after a write, read back after IptablesPostWriteCheckIntervalSecs,
  // then after twice that, and so on while nothing new is written, up to the refresh
  // interval: another program restoring over our rules (an old kube-proxy without
  // --noflush) is caught soon, without re-reading every second.
  #wrote(): void {
    const cfg = this.#opts.config;
    if (!this.#rules.name.startsWith('iptables') || cfg.IptablesPostWriteCheckIntervalSecs <= 0 || this.#stopped)
      return;
    this.#postWriteSecs = cfg.IptablesPostWriteCheckIntervalSecs;
    this.#armPostWrite();
  }

  #armPostWrite(): void {
    clearTimeout(this.#postWriteTimer);
    const limit = this.#opts.config.IptablesRefreshInterval || Number.POSITIVE_INFINITY;
    if (this.#postWriteSecs > limit || this.#stopped) return;
    this.#postWriteTimer = setTimeout(() => {
      this.#postWriteSecs *= 2;
      this.#refresh('rules, after a write');
      this.#armPostWrite();
    }, this.#postWriteSecs * 1000).unref();
  }

  /**
   * A refresh (timers, the post-write check): read the kernel back; the rendering is kept
   * and compared against it, as Felix's tables re-read without recalculating. Drift is
   * repaired by the same apply, which (where the backend can) writes only what drifted
   * and what changed rather than comparing everything a second time.
   */
  async #refreshAll(slicer: Slicer): Promise<{ repaired: number; readBackMs: number; driftMs: number }> {
    this.#needRefresh = false;
    for (const m of this.#managers) m.markResync?.();
    const t0 = performance.now();
    await this.#rules.resync(slicer);
    const t1 = performance.now();
    // Before this apply's own changes: what differs now is what someone else changed.
    const drift = (await this.#rules.drift(slicer)).filter((d) => d.chains.length || d.sets.length);
    const t2 = performance.now();
    const repaired = drift.reduce((n, d) => n + d.chains.length + d.sets.length, 0);
    if (repaired) this.#warnDrift(drift);
    this.#rules.update(this.state, this.state.takeDirty());
    this.#rules.repairOnly?.(drift);
    return { repaired, readBackMs: t1 - t0, driftMs: t2 - t1 };
  }

  /** Start, after a failure: read the kernel back, render everything again, compare everything. */
  async #resyncAll(slicer: Slicer): Promise<void> {
    const started = performance.now();
    for (const m of this.#managers) m.markResync?.();
    await this.#rules.resync(slicer);
    // Taken first: what changes while the render is sliced (host interfaces) stays dirty
    // for the next apply.
    this.state.takeDirty();
    await this.#rules.rebuild(this.state, slicer);
    this.#needResync = false;
    this.#needRefresh = false;
    this.#log.info(
      { backend: this.#rules.name, ms: Math.round(performance.now() - started), pauses: slicer.pauses },
      'read back our rules; comparing everything',
    );
  }

  // Only once our own rules are committed and hooked: until then the other mode's rules
  // (Felix's, or an earlier run's) are all that enforces policy on this node, and removing
  // them first left it open for as long as the first apply took (issue 51 D2: 0.1-1.74 s).
  // Meanwhile both enforce, each traversal on its own, so a packet must pass both.
  async #removeOtherMode(): Promise<void> {
    if (!this.#otherModePending) return;
    this.#otherModePending = false;
    await removeOtherModeState(this.#rules, this.#log);
  }

  // Walks the local endpoints only when one of them or an interface changed: an apply
  // under churn of remote endpoints runs some 40 times a second.
  #logEndpointStatus(): void {
    if (!this.#statusStale) return;
    this.#statusStale = false;
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

  /** --cleanup: our rules (tables, or chains and IP sets) of both modes and our routes, nothing else. */
  async cleanup(): Promise<void> {
    this.#monitor.start();
    await new Promise((r) => setTimeout(r, 200));
    const removed = (await this.#routes?.removeAll()) ?? 0;
    for (const m of this.#managers) if (m !== this.#routes) await m.removeAll?.();
    await this.#rules.removeAll();
    // And whatever the other dataplane mode left (an earlier run in it, or Felix's), as at start.
    if (this.#opts.takeOverFromFelix ?? true) await removeOtherModeState(this.#rules, this.#log);
    this.#monitor.stop();
    this.#log.info(
      { routes: removed, backend: this.#rules.name, families: this.#rules.families },
      'removed palisade state',
    );
  }
}
