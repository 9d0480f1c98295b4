// A Syncer driven by the test: resources pushed in, statuses set, as a datastore would.
import { keyOf } from '../../src/datastore/keys.js';
import type { Syncer, SyncerCallbacks, SyncStatus } from '../../src/datastore/types.js';

interface Res {
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

export class FakeSyncer implements Syncer {
  #cb: SyncerCallbacks | undefined;
  #rev = 0;

  start(callbacks: SyncerCallbacks): void {
    this.#cb = callbacks;
  }

  async stop(): Promise<void> {
    this.#cb = undefined;
  }

  update(r: Res): void {
    this.#send(r, r);
  }

  remove(r: Res): void {
    this.#send(r, null);
  }

  status(s: SyncStatus): void {
    this.#cb?.onStatusUpdated(s);
  }

  #send(r: Res, value: unknown): void {
    const key = keyOf({
      kind: r.kind as never,
      name: r.metadata.name,
      ...(r.metadata.namespace ? { namespace: r.metadata.namespace } : {}),
    });
    if (!key) throw new Error(`no key for ${r.kind}`);
    this.#cb?.onUpdates([{ key, value, revision: String(++this.#rev) }]);
  }
}
