// The node agent's lifecycle, as Felix's daemon: the health server up with the local
// configuration (so liveness answers while the datastore is read), the control plane
// started, and only when the datastore's configuration is resolved (the first flush after
// in-sync) is the dataplane driver built, from the final configuration, and the metrics
// server started, the health server moved if the datastore changed where it listens. A
// configuration palisade cannot run with, or a change that needs a restart, ends the run
// with its exit code; a signal ends it with 0 and leaves the dataplane as programmed.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';

import { CONFIG_EXIT_CODE, type ConfigProblem, type ConfigResolver, RESTART_EXIT_CODE } from '../config/config.js';
import type { Config } from '../config/params.js';
import { kubeProxyNftablesAsync } from '../dataplane/backends/mode.js';
import { DataplaneDriver } from '../dataplane/driver.js';
import { createSyncer, datastoreProblem, etcdClient, wireguardKeyStore } from '../datastore/index.js';
import { StatusReporter } from '../status/status-reporter.js';
import { WireguardKeyPublisher } from '../status/wireguard-key.js';
import { VERSION } from '../version.js';
import { HealthAggregator, serveHealth } from '../health/health.js';
import type { ServerTls } from '../health/http.js';
import type { Logger } from '../log.js';
import { AgentMetrics, RESYNC_STATE, serveMetrics } from '../metrics/metrics.js';
import { WireguardMetrics } from '../metrics/wireguard-metrics.js';
import { MarkMaskError } from '../dataplane/render/marks.js';
import { ControlPlane } from './control-plane.js';
import { KUBE_IPVS_DEVICE, kubeIpvsChanged, resolveKubeIpvs } from './kube-proxy-ipvs.js';
import { type MemoryReducer, startMemoryReducer } from './memory-reducer.js';
import { applyGcThreshold, turnOffPretenuring, warnUncappedYoungGeneration } from './runtime-setup.js';
import { refusal } from '../config/refusal.js';
import { describeRelease, releaseOf, traitsOf } from '../model/release.js';

/** Felix's metrics TLS: on when a certificate and its key are configured. */
function metricsTls(cfg: Config): ServerTls | undefined {
  if (!cfg.PrometheusMetricsCertFile && !cfg.PrometheusMetricsKeyFile) return undefined;
  if (!cfg.PrometheusMetricsCertFile || !cfg.PrometheusMetricsKeyFile)
    throw new Error('PrometheusMetricsCertFile and PrometheusMetricsKeyFile go together');
  return {
    cert: readFileSync(cfg.PrometheusMetricsCertFile),
    key: readFileSync(cfg.PrometheusMetricsKeyFile),
    ca: cfg.PrometheusMetricsCAFile ? readFileSync(cfg.PrometheusMetricsCAFile) : undefined,
    clientAuth: cfg.PrometheusMetricsClientAuth,
  };
}

/** How long the datastore may be out of sync (unreachable, resyncing) before readiness fails. */
export const DATASTORE_GRACE_MS = Number(process.env.PALISADE_DATASTORE_GRACE_MS) || 30_000;

export class NodeAgent {
  readonly metrics = new AgentMetrics();
  readonly health = new HealthAggregator();
  readonly #config: ConfigResolver;
  readonly #log: Logger;
  #driver: DataplaneDriver | undefined;
  #reporter: StatusReporter | undefined;
  #wireguardKeys: WireguardKeyPublisher | undefined;
  #plane: ControlPlane | undefined;
  #healthServer: { server: Server; host: string; port: number } | undefined;
  #metricsServer: Server | undefined;
  #kubeProxyWatch: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #memoryReducer: MemoryReducer | undefined;
  #inSync = false;
  /** The configuration the dataplane runs with (KubeIPVSSupport resolved). */
  #driverConfig: Config | undefined;
  /** The syncer's own word on a datastore that stopped answering while it stays in sync (Kubernetes). */
  #lostContact: (() => { since: number; reason: string } | undefined) | undefined;
  #blocked: (() => string | undefined) | undefined;
  /** When the datastore last stopped being in sync (undefined while it is). */
  #outOfSyncSince: number | undefined = Date.now();
  #status = 'wait-for-datastore';
  #applied = false;
  #done = false;
  #resolve: (code: number) => void = () => {};

  constructor(config: ConfigResolver, log: Logger) {
    this.#config = config;
    this.#log = log;
    this.health.register('calc_graph', { live: true, ready: true, timeoutMs: 60_000 });
    this.health.register('int_dataplane', { live: true, ready: true, timeoutMs: 90_000 });
  }

  /** Runs until a signal (0), a needed restart (129), a refused configuration (3) or a failure (1). */
  async run(): Promise<number> {
    const early = refusal(this.#config.config, 'local') ?? (await datastoreProblem(this.#config.config));
    if (early) return this.#refuse(early);
    if (!(await this.#serveHealth(this.#config.config))) return 1;
    const exit = new Promise<number>((resolve) => (this.#resolve = resolve));
    const onSignal = () => this.#finish(0);
    const onHangup = () => this.#log.warn('SIGHUP ignored: palisade agent stops on SIGTERM or SIGINT');
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onHangup);
    await this.#startControlPlane();
    const code = await exit;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onHangup);
    return code;
  }

  async #startControlPlane(): Promise<void> {
    const cfg = this.#config.config;
    const syncer = await createSyncer(cfg, this.#log);
    this.#lostContact = 'deliversModel' in syncer ? undefined : syncer.lostContact?.bind(syncer);
    this.#blocked = 'deliversModel' in syncer ? undefined : syncer.blocked?.bind(syncer);
    this.#plane = new ControlPlane({
      syncer,
      config: this.#config,
      log: this.#log,
      onConfigResolved: (fatal) => this.#onConfigResolved(fatal),
      onMessages: (msgs) => this.#driver?.onMessages(msgs),
      onRestartNeeded: () => this.#finish(RESTART_EXIT_CODE),
      onInvalid: (kind, outcome) => this.metrics.invalidUpdates.inc({ kind, outcome }),
      onStatus: (status) => {
        this.#log.info({ status }, 'datastore sync status');
        this.metrics.resyncState.set(RESYNC_STATE[status]);
        this.#inSync ||= status === 'in-sync';
        this.#status = status;
        if (status === 'in-sync') this.#outOfSyncSince = undefined;
        else this.#outOfSyncSince ??= Date.now();
        this.health.report('calc_graph', this.#calcGraphHealth());
      },
      onFlushTime: (s) => this.metrics.calcGraphUpdateTime.observe(s),
    });
    // Heartbeats: a stalled event loop stops them (liveness goes stale); a dataplane apply
    // stuck beyond its timeout stops the dataplane's.
    this.#heartbeat = setInterval(() => {
      // (The interface monitor never reports it: Felix's default InterfaceExclude names it.)
      if (this.#driverConfig && kubeIpvsChanged(this.#driverConfig, this.#config.config)) {
        const ipvs = this.#driverConfig.KubeIPVSSupport === 'Enabled';
        this.#log.warn(
          { ipvsIfacePresent: !ipvs, ipvsSupport: ipvs },
          `kube-proxy mode changed (${KUBE_IPVS_DEVICE}); restarting`,
        );
        this.#finish(RESTART_EXIT_CODE);
        return;
      }
      this.health.report('calc_graph', this.#calcGraphHealth());
      if (!this.#driver?.stuckFor(90_000)) this.health.report('int_dataplane', { live: true, ready: this.#applied });
    }, 5_000);
    this.health.report('calc_graph', { live: true, ready: false });
    this.health.report('int_dataplane', { live: true, ready: false });
    this.#log.info(
      {
        hostname: cfg.FelixHostname,
        datastore: cfg.TyphaAddr
          ? `typha (${cfg.TyphaAddr})`
          : cfg.TyphaK8sServiceName
            ? `typha (service ${cfg.TyphaK8sNamespace}/${cfg.TyphaK8sServiceName})`
            : cfg.DatastoreType,
      },
      'palisade agent starting',
    );
    warnUncappedYoungGeneration(this.#log);
    turnOffPretenuring(this.#log);
    this.#plane.start();
  }

  /**
   * Ready once in sync, and not while the datastore has been unreachable (or resyncing, or
   * not answering a syncer that stays in sync meanwhile) for longer than DATASTORE_GRACE_MS,
   * so a node cut off from its datastore shows it.
   */
  #calcGraphHealth(): { live: boolean; ready: boolean; reason?: string } {
    if (!this.#inSync) {
      const blocked = this.#blocked?.();
      const why = `not in sync with the datastore yet (${this.#status}${blocked ? `: ${blocked}` : ''})`;
      return { live: true, ready: false, reason: why };
    }
    const out = this.#outOfSyncSince;
    if (out !== undefined && Date.now() - out > DATASTORE_GRACE_MS) {
      return {
        live: true,
        ready: false,
        reason: `the datastore has not been in sync for ${Math.round((Date.now() - out) / 1000)} s (${this.#status})`,
      };
    }
    const lost = this.#lostContact?.();
    if (lost && Date.now() - lost.since > DATASTORE_GRACE_MS) {
      return {
        live: true,
        ready: false,
        reason: `the datastore has not answered for ${Math.round((Date.now() - lost.since) / 1000)} s: ${lost.reason}`,
      };
    }
    return { live: true, ready: true };
  }

  /**
   * The datastore's configuration is in: build the dataplane from it (synchronously: the first messages follow at
   * once).
   */
  #onConfigResolved(fatal: readonly ConfigProblem[]): void {
    const cfg = this.#config.config;
    if (fatal.length) {
      this.#refuse(
        fatal.map((p) => `${p.param} from ${p.source} (${JSON.stringify(p.value)}): ${p.reason}`).join('; '),
      );
      return;
    }
    const refused = refusal(cfg, 'datastore');
    if (refused) {
      this.#refuse(refused);
      return;
    }
    const release = releaseOf(cfg.CalicoVersion);
    this.#log.info(
      { calicoVersion: describeRelease(release), from: this.#config.sourceOf('CalicoVersion'), ...traitsOf(release) },
      'Calico release in force',
    );
    this.#log.info({ ignored: this.#config.ignored.length }, 'configuration resolved; starting the dataplane');
    this.#reporter = this.#newStatusReporter(cfg);
    this.#wireguardKeys = new WireguardKeyPublisher(() => wireguardKeyStore(cfg), this.#log);
    try {
      this.#driver = this.#newDriver(cfg);
    } catch (e) {
      // A mark mask too small for what is on (WireGuard, kube-proxy IPVS): nothing is programmed.
      if (!(e instanceof MarkMaskError)) throw e;
      this.#refuse(e.message);
      return;
    }
    this.#driver.start();
    this.#watchKubeProxyMode(cfg);
    void this.#startServers(cfg);
  }

  #newDriver(configured: Config): DataplaneDriver {
    const cfg = resolveKubeIpvs(configured);
    this.#driverConfig = cfg;
    if (cfg.KubeIPVSSupport !== configured.KubeIPVSSupport)
      this.#log.info('Kube-proxy in ipvs mode, enabling felix kube-proxy ipvs support.');
    const m = this.metrics;
    const driver: DataplaneDriver = new DataplaneDriver({
      config: cfg,
      log: this.#log,
      onApplied: (r) => {
        // From the first apply on (runtime-setup.ts: the initial load sizes itself).
        if (!this.#applied) {
          // Felix's words and field: operators (and the side-by-side bench) look for this line.
          this.#log.info({ secsSinceStart: process.uptime() }, 'Completed first update to dataplane.');
          applyGcThreshold(cfg.GoGCThreshold, this.#log);
          this.#memoryReducer = startMemoryReducer(this.#log, {
            onReduce: () => m.memoryReductions.inc(),
            onTrim: () => m.mallocTrims.inc(),
          });
          this.#memoryReducer.reduceNow('initial sync applied');
        }
        this.#applied = true;
        m.applyTime.observe(r.ms / 1000);
        m.lastApplyTime.set(Date.now() / 1000);
        m.lastApplyDuration.set(r.ms / 1000);
        m.rulesProgrammed.set(r.rulesTotal);
        if (r.driftRepaired) m.driftRepairs.inc(r.driftRepaired);
        const iptables = driver.rulesBackend.startsWith('iptables');
        if (r.rules.ops) (iptables ? m.iptablesCommit : m.nftCommit).observe(r.rules.commitMs / 1000);
        if (r.rules.restores) m.iptablesRestoreCalls.inc(r.rules.restores);
        for (const ms of r.rules.restoreLockWaitMs ?? []) m.iptablesLockAcquire.observe(ms / 1000);
        m.nftRulesWritten.inc(r.rules.rulesWritten);
        m.nftElements.inc(r.rules.elemsAdded + r.rules.elemsRemoved);
        if (r.rules.elemsAdded + r.rules.elemsRemoved) m.ipsetCalls.inc();
        m.routeChanges.inc((r.managers.routes?.added ?? 0) + (r.managers.routes?.removed ?? 0));
        m.activeLocalEndpoints.set(driver.state.weps.size + driver.state.heps.size);
        m.activeLocalPolicies.set(driver.state.policies.size);
        m.activeLocalSelectors.set(driver.state.ipsets.size);
        for (const w of driver.wireguardStates())
          m.wireguardBlocked.set({ ip_version: String(w.family) }, w.blocked.length);
        this.health.report('int_dataplane', { live: true, ready: true });
      },
      // iptables mode: IP-set members programmed beside a restore in flight (driver.ts).
      onMembersBeside: (r) => {
        m.nftElements.inc(r.elemsAdded + r.elemsRemoved);
        if (r.elemsAdded + r.elemsRemoved) m.ipsetCalls.inc();
      },
      onApplyError: (e) => {
        m.applyFailures.inc();
        m.lastApplyFailureTime.set(Date.now() / 1000);
        this.health.report('int_dataplane', { note: `last apply failed at ${new Date().toISOString()}: ${e.message}` });
        if (driver.rulesBackend.startsWith('iptables')) m.iptablesRestoreErrors.inc();
      },
      ...(this.#reporter ? { onEndpointStatuses: (c) => this.#reporter?.onEndpointStatuses(c) } : {}),
      onWireguardKey: (family, key) => this.#wireguardKeys?.onKey(family, key),
      onEndpointStatus: (iface, up) =>
        up === undefined ? m.endpointUp.remove(iface) : m.endpointUp.set({ interface: iface }, up ? 1 : 0),
    });
    m.info.set(
      {
        version: VERSION,
        hostname: cfg.FelixHostname,
        datastore_type: cfg.TyphaAddr || cfg.TyphaK8sServiceName ? `${cfg.DatastoreType} (typha)` : cfg.DatastoreType,
        rules_backend: driver.rulesBackend,
        calico_version: describeRelease(releaseOf(cfg.CalicoVersion)),
      },
      1,
    );
    return driver;
  }

  /**
   * Felix's status in the datastore: on etcd (directly, or under Typha: Felix writes its
   * status itself either way); the Kubernetes datastore does not store it, as in Felix.
   */
  #newStatusReporter(cfg: Config): StatusReporter | undefined {
    if (cfg.DatastoreType !== 'etcdv3') {
      if (cfg.EndpointReportingEnabled)
        this.#log.warn(
          { datastoreType: cfg.DatastoreType },
          'EndpointReportingEnabled: this datastore does not store endpoint statuses (only etcd does, as in Felix); not reported',
        );
      else
        this.#log.info(
          { datastoreType: cfg.DatastoreType },
          'status reports are written to etcd only (as Felix); none here',
        );
      return undefined;
    }
    const reporter = new StatusReporter({
      store: etcdClient(cfg),
      hostname: cfg.FelixHostname,
      region: cfg.OpenstackRegion,
      intervalS: cfg.ReportingIntervalSecs,
      ttlS: cfg.ReportingTTLSecs,
      endpointsEnabled: cfg.EndpointReportingEnabled,
      endpointDelayS: cfg.EndpointReportingDelaySecs,
      log: this.#log,
    });
    reporter.start();
    return reporter;
  }

  /** Health where the final configuration says (moved if the datastore changed it), then metrics. */
  async #startServers(cfg: Config): Promise<void> {
    if (!(await this.#serveHealth(cfg))) {
      this.#finish(1);
      return;
    }
    if (!cfg.PrometheusMetricsEnabled || this.#done) return;
    if (cfg.PrometheusWireGuardMetricsEnabled)
      new WireguardMetrics(
        this.metrics.registry,
        async () => (await this.#driver?.wireguardDevices()) ?? [],
        this.#log,
      );
    try {
      this.#metricsServer = await serveMetrics(
        this.metrics,
        cfg.PrometheusMetricsHost,
        cfg.PrometheusMetricsPort,
        this.#log,
        metricsTls(cfg),
      );
      if (this.#done) this.#metricsServer.close();
    } catch (e) {
      this.#log.error({ error: (e as Error).message }, 'cannot serve metrics');
      this.#finish(1);
    }
  }

  /** Serves health as `cfg` says, replacing a server listening elsewhere; false on failure. */
  async #serveHealth(cfg: Config): Promise<boolean> {
    const cur = this.#healthServer;
    const want = cfg.HealthEnabled ? { host: cfg.HealthHost, port: cfg.HealthPort } : undefined;
    if (cur && want && cur.host === want.host && cur.port === want.port) return true;
    if (cur) {
      cur.server.close();
      this.#healthServer = undefined;
    }
    if (!want || this.#done) return true;
    try {
      this.#healthServer = { server: await serveHealth(this.health, want.host, want.port, this.#log), ...want };
      return true;
    } catch (e) {
      this.#log.error({ error: (e as Error).message, ...want }, 'cannot serve health');
      return false;
    }
  }

  #refuse(reason: string): number {
    this.#log.fatal({ exitCode: CONFIG_EXIT_CODE }, `palisade cannot run with this configuration: ${reason}`);
    this.#finish(CONFIG_EXIT_CODE);
    return CONFIG_EXIT_CODE;
  }

  // NFTablesMode Auto follows kube-proxy (backends/mode.ts): as Felix, re-check every 15 s
  // and restart when kube-proxy has moved to the other netfilter generation.
  #watchKubeProxyMode(cfg: Config): void {
    if (cfg.NFTablesMode !== 'Auto') return;
    const nftables = this.#driver?.rulesBackend === 'nftables';
    this.#kubeProxyWatch = setInterval(() => {
      void kubeProxyNftablesAsync().then((now) => {
        if (now === nftables || this.#done) return;
        this.#log.warn({ previous: nftables, current: now }, 'kube-proxy nftables mode changed; restarting');
        this.#finish(RESTART_EXIT_CODE);
      });
    }, 15_000);
    this.#kubeProxyWatch.unref();
  }

  #finish(code: number): void {
    if (this.#done) return;
    this.#done = true;
    clearInterval(this.#heartbeat);
    this.#memoryReducer?.stop();
    clearInterval(this.#kubeProxyWatch);
    this.#log.info({ code }, 'stopping; the dataplane stays as programmed');
    this.#healthServer?.server.close();
    this.#metricsServer?.close();
    this.#wireguardKeys?.stop();
    void Promise.allSettled([this.#plane?.stop(), this.#driver?.stop(), this.#reporter?.stop()]).then(() =>
      this.#resolve(code),
    );
  }
}
