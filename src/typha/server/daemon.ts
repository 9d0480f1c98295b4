// `palisade typha` wired, as Typha's daemon: one datastore connection feeding the snapshot
// cache, the server fanning it out, health (live while running, ready once the datastore
// is in sync and the socket listens) and typha_* metrics. SIGTERM starts the graceful
// shutdown (connections dropped gradually); a second one stops at once.
import type { Server } from 'node:http';

import type { Syncer } from '../../datastore/types.js';
import { HealthAggregator, serveHealth } from '../../health/health.js';
import type { Logger } from '../../log.js';
import { serveMetrics } from '../../metrics/metrics.js';
import { VERSION } from '../../version.js';
import { describeRelease, releaseOf, traitsOf } from '../../model/release.js';
import type { KubeTransport } from '../../datastore/kdd/transport.js';
import { TyphaConfigError, type TyphaServerConfig } from './config.js';
import { CacheFeeder } from './feeder.js';
import { ConnectionRebalancer } from './rebalance.js';
import { TyphaMetrics } from './metrics.js';
import { TyphaServer } from './server.js';
import { SnapshotCache } from './snapshot-cache.js';

export class TyphaDaemon {
  readonly metrics = new TyphaMetrics();
  readonly health = new HealthAggregator();
  readonly cache: SnapshotCache;
  readonly server: TyphaServer;
  readonly #feeder: CacheFeeder;
  readonly #log: Logger;
  readonly #cfg: TyphaServerConfig;
  readonly #http: Server[] = [];
  #heartbeat: NodeJS.Timeout | undefined;
  port = 0;

  readonly #rebalancer: ConnectionRebalancer | undefined;

  /**
   * `calicoVersion`: the cluster's release when set locally (else ClusterInformation's);
   * `kube`: the Kubernetes API, for ConnectionRebalancingMode kubernetes.
   */
  constructor(cfg: TyphaServerConfig, syncer: Syncer, log: Logger, calicoVersion = '', kube?: KubeTransport) {
    this.#cfg = cfg;
    this.#log = log;
    this.cache = new SnapshotCache({ maxBatchSize: cfg.maxBatchSize, metrics: this.metrics });
    const legacy = new SnapshotCache({ maxBatchSize: cfg.maxBatchSize });
    this.#feeder = new CacheFeeder(syncer, this.cache, log, legacy);
    this.server = new TyphaServer({
      cache: this.cache,
      legacy: {
        cache: legacy,
        // The override (FELIX_CALICOVERSION, the config file) first, as the agent takes it.
        release: () => {
          const r = releaseOf(calicoVersion || this.#feeder.calicoVersion);
          return { text: describeRelease(r), modern: traitsOf(r).modernPolicyKeys };
        },
      },
      log,
      version: VERSION,
      host: cfg.host,
      port: cfg.port,
      tls: cfg.tls,
      timers: cfg.timers,
      maxMessageKvs: cfg.maxMessageKvs,
      maxInboundBytes: 1 << 20,
      maxConns: cfg.maxConns,
      dropIntervalMs: cfg.dropIntervalMs,
      shutdownTimeoutMs: cfg.shutdownTimeoutMs,
      shutdownMaxDropIntervalMs: cfg.shutdownMaxDropIntervalMs,
      metrics: this.metrics,
    });
    this.health.register('typha', { live: true, ready: true, timeoutMs: 20_000 });
    if (cfg.rebalance) {
      if (!kube) throw new TyphaConfigError('ConnectionRebalancingMode kubernetes needs the Kubernetes API');
      this.#rebalancer = new ConnectionRebalancer({
        config: cfg.rebalance,
        transport: kube,
        nodes: () => this.#feeder.nodeCount(),
        server: this.server,
        log,
      });
    }
  }

  async start(): Promise<void> {
    for (const n of this.#cfg.notices) this.#log.warn(n);
    if (this.#cfg.health.enabled)
      this.#http.push(await serveHealth(this.health, this.#cfg.health.host, this.#cfg.health.port, this.#log));
    if (this.#cfg.metrics.enabled)
      this.#http.push(await serveMetrics(this.metrics, this.#cfg.metrics.host, this.#cfg.metrics.port, this.#log));
    this.port = await this.server.listen();
    this.#feeder.start();
    this.#rebalancer?.start();
    const report = () => {
      const inSync = this.#feeder.status === 'in-sync';
      this.health.report('typha', {
        live: true,
        ready: inSync && !this.server.shuttingDown,
        reason: inSync ? 'shutting down' : `datastore ${this.#feeder.status}`,
      });
    };
    report();
    this.cache.subscribe(report);
    this.#heartbeat = setInterval(report, 5_000);
    this.#heartbeat.unref();
  }

  /** Graceful: connections dropped over ShutdownTimeout. */
  async shutDown(): Promise<void> {
    this.health.report('typha', { live: true, ready: false, reason: 'shutting down' });
    await this.server.shutDownGracefully();
    await this.stop();
  }

  async stop(): Promise<void> {
    clearInterval(this.#heartbeat);
    this.#rebalancer?.stop();
    this.server.close();
    await this.#feeder.stop();
    for (const s of this.#http) s.close();
  }
}
