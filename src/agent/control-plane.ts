// The control plane, as Felix's daemon wires it: syncer -> validation filter -> calc
// graph, with FelixConfiguration fed to the config resolver. Updates are batched: a
// flush of the graph is scheduled after each burst (never before in-sync), and its
// dataplane messages go to `onMessages`. After start-up, a datastore change to a
// parameter that needs a restart calls `onRestartNeeded` (the caller exits with 129).
import { CalcGraph } from '../calc/calc-graph.js';
import type { ConfigResolver } from '../config/config.js';
import type { ParamName } from '../config/params.js';
import type { Syncer, SyncStatus } from '../datastore/types.js';
import { ValidationFilter } from '../datastore/validation-filter.js';
import { levelFor, type Logger } from '../log.js';
import type { Resource, ResourceOf } from '../model/schemas.js';
import type { ResourceRef } from '../model/validate.js';
import type { ToDataplane } from '../proto/messages.js';

export interface ControlPlaneOptions {
  syncer: Syncer;
  config: ConfigResolver;
  log: Logger;
  onMessages: (messages: ToDataplane[]) => void;
  onRestartNeeded: (params: ParamName[]) => void;
  onStatus?: (status: SyncStatus) => void;
  /** Coalescing delay between an update and the graph flush. */
  flushDelayMs?: number;
  /** Seconds each graph flush took (felix_calc_graph_update_time_seconds). */
  onFlushTime?: (seconds: number) => void;
}

export class ControlPlane {
  readonly graph: CalcGraph;
  readonly #opts: ControlPlaneOptions;
  readonly #filter: ValidationFilter;
  readonly #felixConfig = new Map<string, Record<string, unknown>>();
  #configChanged = false;
  #started = false;
  #timer: NodeJS.Timeout | undefined;
  #status: SyncStatus = 'wait-for-datastore';

  constructor(opts: ControlPlaneOptions) {
    this.#opts = opts;
    this.graph = new CalcGraph(opts.config.config.FelixHostname);
    this.#filter = new ValidationFilter(
      {
        onUpdate: (ref, resource) => this.#onUpdate(ref, resource),
        onStatus: (status) => this.#onStatus(status),
      },
      opts.log,
    );
  }

  get status(): SyncStatus {
    return this.#status;
  }

  start(): void {
    this.#opts.syncer.start({
      onUpdates: (u) => {
        this.#filter.onUpdates(u);
        this.#schedule();
      },
      onStatusUpdated: (s) => this.#filter.onStatusUpdated(s),
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
    this.#applyConfig();
    const t0 = performance.now();
    const msgs = this.graph.flush();
    this.#opts.onFlushTime?.((performance.now() - t0) / 1000);
    if (msgs.length) this.#opts.onMessages(msgs);
    return msgs;
  }

  #onUpdate(ref: ResourceRef, resource: Resource | undefined): void {
    if (ref.kind === 'FelixConfiguration' && ref.name) {
      if (resource) this.#felixConfig.set(ref.name, (resource as ResourceOf<'FelixConfiguration'>).spec);
      else this.#felixConfig.delete(ref.name);
      this.#configChanged = true;
    }
    this.graph.onUpdate(ref, resource);
  }

  #onStatus(status: SyncStatus): void {
    this.#status = status;
    this.graph.onStatus(status);
    this.#opts.onStatus?.(status);
    if (status === 'in-sync') this.#schedule(0);
  }

  #schedule(delay = this.#opts.flushDelayMs ?? 10): void {
    if (this.#timer || this.graph.status !== 'in-sync') return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, delay);
  }

  #applyConfig(): void {
    if (!this.#configChanged && this.#started) return;
    this.#configChanged = false;
    const host = this.#opts.config.config.FelixHostname;
    const change = this.#opts.config.setDatastoreConfig(this.#felixConfig.get('default'), this.#felixConfig.get(`node.${host}`));
    if (change.changed.includes('LogSeverityScreen')) this.#opts.log.level = levelFor(this.#opts.config.config.LogSeverityScreen);
    if (!this.#started) {
      // At start-up the datastore's values are simply taken.
      this.#started = true;
      if (change.changed.length) this.#opts.log.info({ params: change.changed }, 'configuration from the datastore applied');
      return;
    }
    if (change.needsRestart.length) {
      this.#opts.log.warn({ params: change.needsRestart }, `configuration changed (${change.needsRestart.join(', ')}); restarting`);
      this.#opts.onRestartNeeded(change.needsRestart);
    } else if (change.changed.length) {
      this.#opts.log.info({ params: change.changed }, 'configuration changed; applied without a restart');
    }
  }
}
