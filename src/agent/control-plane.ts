// The control plane, as Felix's daemon wires it: syncer -> validation filter -> update
// processors -> calc graph, with the configuration keys (FelixConfiguration's and
// ClusterInformation's, the Ready flag, this node's labels) also fed to the ConfigBatcher
// and from it to the config resolver. A syncer that already speaks the internal model
// (Typha) skips the first two stages. Updates are batched: a flush of the graph follows
// each batch (never before in-sync), throttled as Felix's (leaky-bucket.ts), and its
// dataplane messages go to `onMessages`. The first flush resolves the datastore's
// configuration before anything else (`onConfigResolved`), so whatever the caller builds
// from the configuration sees the datastore's values, as Felix loads its configuration
// before it starts its dataplane. After that, a change to a parameter that needs a restart
// calls `onRestartNeeded` (the caller exits with 129). While ClusterInformation says the
// datastore is not ready, nothing is flushed: programming pauses, as in Felix.
import { CalcGraph } from '../calc/calc-graph.js';
import { ConfigBatcher } from '../config/config-batcher.js';
import type { ConfigProblem, ConfigResolver } from '../config/config.js';
import type { ParamName } from '../config/params.js';
import { ModelStage } from '../datastore/model-stage.js';
import { releaseOf, traitsOf } from '../model/release.js';
import { LeakyBucket } from './leaky-bucket.js';
import type { InvalidHandler, ModelSyncer, Syncer, SyncStatus } from '../datastore/types.js';
import { levelFor, type Logger } from '../log.js';
import type { V1Update } from '../model/v1/values.js';
import type { ToDataplane } from '../proto/messages.js';

export interface ControlPlaneOptions {
  syncer: Syncer | ModelSyncer;
  config: ConfigResolver;
  log: Logger;
  onMessages: (messages: ToDataplane[]) => void;
  onRestartNeeded: (params: ParamName[]) => void;
  /**
   * Once, at the first flush after in-sync, with the datastore's configuration resolved and
   * before the first messages. `fatal` lists values Felix refuses to start with.
   */
  onConfigResolved?: (fatal: readonly ConfigProblem[]) => void;
  onStatus?: (status: SyncStatus) => void;
  /** ClusterInformation's datastoreReady went false (true) and programming paused (resumed). */
  onDatastoreReady?: (ready: boolean) => void;
  /** Every internal-model update, as the graph gets it (`palisade explain` keeps the model). */
  onModelUpdate?: (u: V1Update) => void;
  /** An update validation or parsing refused (palisade_invalid_updates_total). */
  onInvalid?: InvalidHandler;
  /** Seconds each graph flush took (felix_calc_graph_update_time_seconds). */
  onFlushTime?: (seconds: number) => void;
}

export class ControlPlane {
  readonly graph: CalcGraph;
  readonly batcher: ConfigBatcher;
  readonly #opts: ControlPlaneOptions;
  readonly #stage: ModelStage;
  #started = false;
  #paused = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #flushes = new LeakyBucket();
  #status: SyncStatus = 'wait-for-datastore';
  /** Workload endpoints dropped for want of an interface name (reported once each). */
  readonly #badEndpoints = new Set<string>();

  constructor(opts: ControlPlaneOptions) {
    this.#opts = opts;
    const host = opts.config.config.FelixHostname;
    this.graph = new CalcGraph(host);
    this.batcher = new ConfigBatcher(host, opts.log);
    this.#stage = new ModelStage(
      { onModelUpdate: (u) => this.#onModelUpdate(u), onStatus: (status) => this.#onStatus(status) },
      opts.log,
      opts.onInvalid,
    );
    opts.syncer.onInvalid = opts.onInvalid;
  }

  get status(): SyncStatus {
    return this.#status;
  }

  /** Programming is paused: ClusterInformation says the datastore is not ready. */
  get paused(): boolean {
    return this.#paused;
  }

  start(): void {
    const syncer = this.#opts.syncer;
    if ('deliversModel' in syncer) {
      syncer.start({
        onModelUpdates: (updates) => {
          for (const u of updates) this.#onModelUpdate(u);
          this.#schedule();
        },
        onStatusUpdated: (s) => this.#onStatus(s),
      });
      return;
    }
    syncer.start({
      onUpdates: (u) => {
        this.#stage.onUpdates(u);
        this.#schedule();
      },
      onStatusUpdated: (s) => this.#stage.onStatusUpdated(s),
    });
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#opts.syncer.stop();
  }

  /** Flushes the graph now (tests, shutdown); returns what was sent. */
  flush(): ToDataplane[] {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#status !== 'in-sync') return [];
    this.#applyConfig();
    if (!this.#checkReady()) return [];
    const t0 = performance.now();
    this.#flushes.take(t0);
    const msgs = this.graph.flush();
    this.#opts.onFlushTime?.((performance.now() - t0) / 1000);
    if (msgs.length) this.#opts.onMessages(msgs);
    return msgs;
  }

  #onModelUpdate(u: V1Update): void {
    u = this.#validateModel(u);
    this.batcher.onUpdate(u);
    this.graph.onUpdate(u);
    this.#opts.onModelUpdate?.(u);
  }

  // Felix's ValidationFilter on the internal model (also after Typha): a workload
  // endpoint without an interface name cannot be programmed (no dispatch entry, no
  // route), so it is treated as missing, with a warning while it stays so.
  #validateModel(u: V1Update): V1Update {
    if (u.key.type !== 'WorkloadEndpoint') return u;
    const k = u.key;
    const id = `${k.hostname}/${k.orchestratorId}/${k.workloadId}/${k.endpointId}`;
    const ep = u.value as { name?: string } | undefined;
    if (!ep || ep.name) {
      this.#badEndpoints.delete(id);
      return u;
    }
    if (!this.#badEndpoints.has(id)) {
      this.#badEndpoints.add(id);
      this.#opts.log.warn(
        { endpoint: id },
        'workload endpoint has no interface name (spec.interfaceName); treating it as missing, as Felix does',
      );
    }
    return { key: u.key, value: undefined } as V1Update;
  }

  #onStatus(status: SyncStatus): void {
    this.#status = status;
    this.graph.onStatus(status);
    this.#opts.onStatus?.(status);
    if (status === 'in-sync') this.#schedule();
  }

  // A timer, not a flush in the syncer's callback: the batches a syncer hands over
  // together (a burst of watch events) go in one flush.
  #schedule(): void {
    if (this.#timer || this.graph.status !== 'in-sync') return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, this.#flushes.wait());
  }

  /** Pauses or resumes programming on ClusterInformation's datastoreReady; true when flushing may go on. */
  #checkReady(): boolean {
    const ready = this.batcher.ready;
    if (ready === !this.#paused) return ready;
    this.#paused = !ready;
    if (ready) this.#opts.log.info('ClusterInformation: datastore ready again; programming resumes');
    else
      this.#opts.log.warn(
        'ClusterInformation "default" has datastoreReady: false (an upgrade or migration is under way); programming is paused until it is true',
      );
    this.#opts.onDatastoreReady?.(ready);
    return ready;
  }

  #applyConfig(): void {
    if (!this.batcher.dirty && this.#started) return;
    const change = this.#opts.config.setDatastoreConfig(this.batcher.take());
    if (change.changed.includes('LogSeverityScreen'))
      this.#opts.log.level = levelFor(this.#opts.config.config.LogSeverityScreen);
    if (!this.#started) {
      // At start-up the datastore's values are simply taken.
      this.#started = true;
      if (change.changed.length)
        this.#opts.log.info({ params: change.changed }, 'configuration from the datastore applied');
      this.graph.setRouteSource(this.#opts.config.config.RouteSource);
      this.graph.setPolicyIds(traitsOf(releaseOf(this.#opts.config.config.CalicoVersion)).policyIds);
      this.#opts.onConfigResolved?.(this.#opts.config.fatal);
      return;
    }
    const fatal = this.#opts.config.fatal.map((p) => p.param as ParamName);
    if (change.needsRestart.length || fatal.length) {
      const params = [...new Set([...change.needsRestart, ...fatal])];
      this.#opts.log.warn({ params }, `configuration changed (${params.join(', ')}); restarting`);
      this.#opts.onRestartNeeded(params);
    } else if (change.changed.length) {
      this.#opts.log.info({ params: change.changed }, 'configuration changed; applied without a restart');
    }
  }
}
