// The one datastore connection `palisade typha` has: syncer -> validation filter ->
// update processors (the same stages as the agent's), each internal-model update
// serialized once - its key path and value bytes as libcalico-go writes them - into the
// snapshot cache that every client is served from. A v3 resource passed through (Node,
// Profile...) travels with its resourceVersion moved out of the value, as Typha does.
import type { Logger } from '../../log.js';
import { ModelStage } from '../../datastore/model-stage.js';
import type { Syncer, SyncStatus } from '../../datastore/types.js';
import { keyToPath } from '../../model/v1/keys.js';
import { serializeValue, type V1Update } from '../../model/v1/values.js';
import type { SerializedUpdate } from '../syncproto.js';
import type { SnapshotCache } from './snapshot-cache.js';

export class CacheFeeder {
  readonly #syncer: Syncer;
  readonly #cache: SnapshotCache;
  readonly #stage: ModelStage;
  #pending: SerializedUpdate[] = [];
  #revision = 0;
  #status: SyncStatus = 'wait-for-datastore';

  constructor(syncer: Syncer, cache: SnapshotCache, log: Logger) {
    this.#syncer = syncer;
    this.#cache = cache;
    this.#stage = new ModelStage(
      {
        onModelUpdate: (u) => this.#pending.push(this.#serialize(u)),
        onStatus: (s) => {
          this.#flush();
          this.#status = s;
          this.#cache.onStatus(s);
        },
      },
      log,
    );
  }

  get status(): SyncStatus {
    return this.#status;
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
