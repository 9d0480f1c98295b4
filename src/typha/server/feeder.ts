// The one datastore connection `palisade typha` has: syncer -> validation filter ->
// update processors (the same stages as the agent's), each internal-model update
// serialized once - its key path and value bytes as libcalico-go writes them - into the
// snapshot cache that every client is served from. A v3 resource passed through (Node,
// Profile...) travels with its resourceVersion moved out of the value, as Typha does.
import type { Logger } from '../../log.js';
import { ModelStage } from '../../datastore/model-stage.js';
import type { Syncer, SyncStatus } from '../../datastore/types.js';
import { keyToPath, legacyPolicyPath, type V1KeyOf } from '../../model/v1/keys.js';
import { serializeValue, type V1Update } from '../../model/v1/values.js';
import type { SerializedUpdate } from '../syncproto.js';
import type { SnapshotCache } from './snapshot-cache.js';

export class CacheFeeder {
  readonly #syncer: Syncer;
  readonly #cache: SnapshotCache;
  readonly #legacy: SnapshotCache | undefined;
  readonly #stage: ModelStage;
  #pending: SerializedUpdate[] = [];
  #legacyPending: SerializedUpdate[] = [];
  /** Each policy's tier by its (modern) path: a deletion in the legacy layout names it. */
  readonly #tiers = new Map<string, string>();
  #revision = 0;
  #status: SyncStatus = 'wait-for-datastore';
  /** ClusterInformation's calicoVersion, as the datastore has it ("" while it has none). */
  calicoVersion = '';
  /** Node resources, by name: Typha's NodeCounter, for connection rebalancing. */
  readonly #nodes = new Set<string>();

  /** `legacy`: a second cache fed the same state in the policy-key layout before Calico 3.32. */
  constructor(syncer: Syncer, cache: SnapshotCache, log: Logger, legacy?: SnapshotCache) {
    this.#syncer = syncer;
    this.#cache = cache;
    this.#legacy = legacy;
    this.#stage = new ModelStage(
      {
        onModelUpdate: (u) => this.#add(u),
        onStatus: (s) => {
          this.#flush();
          this.#status = s;
          this.#cache.onStatus(s);
          this.#legacy?.onStatus(s);
        },
      },
      log,
    );
  }

  get status(): SyncStatus {
    return this.#status;
  }

  /** The nodes the datastore has, once in sync (Typha's NodeCounter answers nothing before). */
  nodeCount(): number | undefined {
    return this.#status === 'in-sync' ? this.#nodes.size : undefined;
  }

  #add(u: V1Update): void {
    const su = this.#serialize(u);
    this.#pending.push(su);
    if (u.key.type === 'Resource' && u.key.kind === 'Node')
      u.value === undefined ? this.#nodes.delete(u.key.name) : this.#nodes.add(u.key.name);
    if (u.key.type === 'GlobalConfig' && u.key.name === 'CalicoVersion')
      this.calicoVersion = typeof u.value === 'string' ? u.value : '';
    if (!this.#legacy) return;
    if (u.key.type === 'Policy') this.#legacyPending.push(...this.#legacyPolicy(u.key, su));
    else this.#legacyPending.push(su);
  }

  // A policy as a 3.30/3.31 Typha sends it: the tier in the key, not in the value. A policy
  // that moved tier is another key there, so the old one is deleted first.
  #legacyPolicy(key: V1KeyOf<'Policy'>, su: SerializedUpdate): SerializedUpdate[] {
    const old = this.#tiers.get(su.key);
    if (su.updateType === 3) {
      this.#tiers.delete(su.key);
      return old === undefined ? [] : [{ ...su, key: legacyPolicyPath(key, old) }];
    }
    const { tier = 'default', ...rest } = JSON.parse(su.value.toString()) as { tier?: string };
    this.#tiers.set(su.key, tier);
    const set = { ...su, key: legacyPolicyPath(key, tier), value: Buffer.from(JSON.stringify(rest)) };
    if (old === undefined || old === tier) return [set];
    return [{ ...su, key: legacyPolicyPath(key, old), value: Buffer.alloc(0), updateType: 3 }, set];
  }

  start(): void {
    this.#syncer.start({
      onUpdates: (updates) => {
        this.#stage.onUpdates(updates);
        this.#flush();
      },
      onStatusUpdated: (s) => this.#stage.onStatusUpdated(s),
    });
  }

  stop(): Promise<void> {
    return this.#syncer.stop();
  }

  #flush(): void {
    if (this.#legacyPending.length) {
      const batch = this.#legacyPending;
      this.#legacyPending = [];
      this.#legacy?.onUpdates(batch);
    }
    if (!this.#pending.length) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#cache.onUpdates(batch);
  }

  #serialize(u: V1Update): SerializedUpdate {
    return serializedUpdate(u, String(++this.#revision));
  }
}

/**
 * An internal-model update as Typha sends it: the key's path, the value's bytes (empty and
 * UpdateTypeKVDeleted for a deletion), a v3 resource's resourceVersion moved out of the value.
 */
export function serializedUpdate(u: V1Update, revision: string): SerializedUpdate {
  const key = keyToPath(u.key);
  if (u.value === undefined)
    return { key, value: Buffer.alloc(0), revision, v3ResourceVersion: '', ttlNanos: 0, updateType: 3 };
  let v3ResourceVersion = '';
  let value = u.value;
  if (u.key.type === 'Resource') {
    const r = u.value as { metadata: { resourceVersion?: string } };
    v3ResourceVersion = r.metadata.resourceVersion ?? '';
    if (v3ResourceVersion) value = { ...r, metadata: { ...r.metadata, resourceVersion: undefined } } as typeof value;
  }
  return {
    key,
    value: Buffer.from(serializeValue(u.key, value as never)),
    revision,
    v3ResourceVersion,
    ttlNanos: 0,
    updateType: 1,
  };
}
