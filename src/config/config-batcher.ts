// Felix's ConfigBatcher: collects what the datastore says about configuration -
// FelixConfiguration "default", "node.<hostname>" and the selector-scoped ones (any other
// name, applied when their nodeSelector matches this node's labels: the oldest match wins,
// ties by name), ClusterInformation "default" (its fields, and the datastoreReady flag) and
// this node's labels - and hands the config resolver one consistent view when it changed.
import type { Logger } from '../log.js';
import { parseSelector } from '../native/selector.js';
import { clusterInformationParams, felixConfigurationParams } from './felix-configuration.js';
import type { DatastoreParams } from './config.js';

interface FelixConfigurationLike {
  metadata: { name: string; annotations?: Record<string, string> | undefined; creationTimestamp?: string | undefined };
  spec: Record<string, unknown>;
}

interface SelectorScoped {
  name: string;
  selector: string;
  created: number;
  params: Map<string, string>;
}

export class ConfigBatcher {
  readonly #hostname: string;
  readonly #log: Logger;
  #global = new Map<string, string>();
  #clusterInfo = new Map<string, string>();
  #node = new Map<string, string>();
  readonly #scoped = new Map<string, SelectorScoped>();
  #nodeLabels: Record<string, string> | undefined;
  #ready: boolean | undefined;
  #dirty = true;

  constructor(hostname: string, log: Logger) {
    this.#hostname = hostname;
    this.#log = log;
  }

  /** Something changed since the last `take()`. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /**
   * ClusterInformation's datastoreReady. Felix waits while it is not true; palisade pauses
   * programming while it is false, and also runs when there is no ClusterInformation (a
   * file datastore has no calico-node to write one).
   */
  get ready(): boolean {
    return this.#ready !== false;
  }

  onFelixConfiguration(name: string, resource: FelixConfigurationLike | undefined): void {
    this.#dirty = true;
    if (name === 'default' || name === `node.${this.#hostname}`) {
      const params = resource ? this.#params(resource) : new Map<string, string>();
      if (name === 'default') this.#global = params;
      else this.#node = params;
      return;
    }
    if (name.startsWith('node.')) return; // another node's
    const selector = typeof resource?.spec.nodeSelector === 'string' ? resource.spec.nodeSelector : '';
    if (!resource || selector === '') {
      this.#scoped.delete(name);
      return;
    }
    const created = Date.parse(resource.metadata.creationTimestamp ?? '');
    this.#scoped.set(name, { name, selector, created: Number.isNaN(created) ? 0 : created, params: this.#params(resource) });
  }

  onClusterInformation(name: string, spec: Parameters<typeof clusterInformationParams>[0] | undefined): void {
    if (name !== 'default') return;
    const { values, ready } = clusterInformationParams(spec ?? {});
    this.#clusterInfo = values;
    this.#ready = spec ? ready : undefined;
    this.#dirty = true;
  }

  onNode(name: string, labels: Record<string, string> | undefined, exists: boolean): void {
    if (name !== this.#hostname) return;
    const next = exists ? (labels ?? {}) : undefined;
    if (JSON.stringify(next) === JSON.stringify(this.#nodeLabels)) return;
    this.#nodeLabels = next;
    if (this.#scoped.size) this.#dirty = true;
  }

  /** The current view, and clears `dirty`. */
  take(): DatastoreParams {
    this.#dirty = false;
    const global = new Map([...this.#clusterInfo, ...this.#global]);
    const winner = this.#selectorWinner();
    return { global, selector: winner?.params ?? new Map(), selectorName: winner?.name, node: this.#node };
  }

  #params(resource: FelixConfigurationLike): Map<string, string> {
    const { values, problems } = felixConfigurationParams(resource.spec, resource.metadata.annotations);
    for (const p of problems) {
      this.#log.warn({ resource: `FelixConfiguration ${resource.metadata.name}`, field: p.field, value: p.value }, `FelixConfiguration ${resource.metadata.name}: ${p.field}: ${p.reason}`);
    }
    return values;
  }

  #selectorWinner(): SelectorScoped | undefined {
    const labels = this.#nodeLabels;
    if (!labels) return undefined;
    const matches = [...this.#scoped.values()].filter((s) => {
      try {
        return parseSelector(s.selector).evaluate(labels);
      } catch {
        return false; // validation refuses a bad nodeSelector before it gets here
      }
    });
    matches.sort((a, b) => a.created - b.created || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (matches.length > 1) {
      this.#log.warn({ matching: matches.map((m) => m.name), winner: matches[0]?.name }, 'several selector-scoped FelixConfigurations match this node; using the oldest (a misconfiguration)');
    }
    return matches[0];
  }
}
