// Felix's ConfigBatcher: collects what the datastore says about configuration, as the
// update processors (or Typha) deliver it - global config keys (FelixConfiguration
// "default", ClusterInformation's fields), this host's config keys ("node.<hostname>"),
// the Ready flag, the selector-scoped FelixConfigurations (any other name, passed as v3
// resources and applied when their nodeSelector matches this node's labels: the oldest
// match wins, ties by name) and this node's labels - and hands the config resolver one
// consistent view when it changed.
import type { Logger } from '../log.js';
import { parseSelector } from '../native/selector.js';
import type { V1Update } from '../model/v1/values.js';
import { felixConfigurationParams } from './felix-configuration.js';
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
  readonly #global = new Map<string, string>();
  readonly #node = new Map<string, string>();
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

  /** Takes the config-related updates of the internal model and ignores the rest. */
  onUpdate(u: V1Update): void {
    switch (u.key.type) {
      case 'GlobalConfig':
        this.#set(this.#global, u.key.name, u.value as string | undefined);
        break;
      case 'HostConfig':
        if (u.key.hostname === this.#hostname) this.#set(this.#node, u.key.name, u.value as string | undefined);
        break;
      case 'ReadyFlag':
        this.#ready = u.value as boolean | undefined;
        this.#dirty = true;
        break;
      case 'Resource':
        if (u.key.kind === 'FelixConfiguration')
          this.#onSelectorScoped(u.key.name, u.value as FelixConfigurationLike | undefined);
        if (u.key.kind === 'Node') {
          const node = u.value as { metadata: { labels?: Record<string, string> | undefined } } | undefined;
          this.#onNode(u.key.name, node?.metadata.labels, !!node);
        }
        break;
      default:
        break;
    }
  }

  #set(map: Map<string, string>, name: string, value: string | undefined): void {
    if (value === undefined ? !map.delete(name) : map.get(name) === value) return;
    if (value !== undefined) map.set(name, value);
    this.#dirty = true;
  }

  #onSelectorScoped(name: string, resource: FelixConfigurationLike | undefined): void {
    this.#dirty = true;
    const selector = typeof resource?.spec.nodeSelector === 'string' ? resource.spec.nodeSelector : '';
    if (!resource || selector === '') {
      this.#scoped.delete(name);
      return;
    }
    const created = Date.parse(resource.metadata.creationTimestamp ?? '');
    this.#scoped.set(name, {
      name,
      selector,
      created: Number.isNaN(created) ? 0 : created,
      params: this.#params(resource),
    });
  }

  #onNode(name: string, labels: Record<string, string> | undefined, exists: boolean): void {
    if (name !== this.#hostname) return;
    const next = exists ? (labels ?? {}) : undefined;
    if (JSON.stringify(next) === JSON.stringify(this.#nodeLabels)) return;
    this.#nodeLabels = next;
    if (this.#scoped.size) this.#dirty = true;
  }

  /** The current view, and clears `dirty`. */
  take(): DatastoreParams {
    this.#dirty = false;
    const winner = this.#selectorWinner();
    return {
      global: new Map(this.#global),
      selector: winner?.params ?? new Map(),
      selectorName: winner?.name,
      node: new Map(this.#node),
    };
  }

  #params(resource: FelixConfigurationLike): Map<string, string> {
    const { values, problems } = felixConfigurationParams(resource.spec, resource.metadata.annotations);
    for (const p of problems) {
      this.#log.warn(
        { resource: `FelixConfiguration ${resource.metadata.name}`, field: p.field, value: p.value },
        `FelixConfiguration ${resource.metadata.name}: ${p.field}: ${p.reason}`,
      );
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
      this.#log.warn(
        { matching: matches.map((m) => m.name), winner: matches[0]?.name },
        'several selector-scoped FelixConfigurations match this node; using the oldest (a misconfiguration)',
      );
    }
    return matches[0];
  }
}
