// The etcd v3 datastore, as Felix's watchersyncer over Calico's key layout: list the
// prefix at a revision, deliver it, report in-sync, then watch from the next revision.
// When the watch is lost (etcd down, network cut, a compacted revision) the state is
// kept, and a resync begins: re-list with backoff, deliver what changed and the deletes
// of what vanished, then watch again from the new revision. Known keys are remembered by
// modification revision only, so a resync costs no second copy of the data.
import type { Logger } from '../../log.js';
import { KEY_PREFIX } from '../keys.js';
import type { Syncer, SyncerCallbacks, SyncStatus, Update } from '../types.js';
import type { EtcdClient, WatchEvent, WatchHandle } from './client.js';

export interface EtcdSyncerOptions {
  client: EtcdClient;
  log: Logger;
  prefix?: string;
  /** First and largest retry delay. */
  backoffMs?: { min: number; max: number };
  /** Test hook: runs after a list and before the watch on it is created. */
  afterList?: (revision: string) => Promise<void>;
}

// A key's stored text as an Update; undecodable JSON goes on with the reason, and the
// validation filter drops it.
function updateOf(key: string, text: string, revision: string): Update {
  try {
    return { key, value: JSON.parse(text) as unknown, revision, source: `etcd ${key}` };
  } catch (e) {
    return { key, value: null, revision, source: `etcd ${key}`, decodeError: `value is not JSON: ${(e as Error).message}` };
  }
}

export class EtcdSyncer implements Syncer {
  readonly #client: EtcdClient;
  readonly #log: Logger;
  readonly #prefix: string;
  readonly #backoff: { min: number; max: number };
  readonly #afterList: ((revision: string) => Promise<void>) | undefined;
  /** key -> mod revision of what was delivered. */
  readonly #known = new Map<string, string>();
  #cb: SyncerCallbacks | undefined;
  #watch: WatchHandle | undefined;
  #status: SyncStatus | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #generation = 0;
  #resyncs = 0;

  constructor(opts: EtcdSyncerOptions) {
    this.#client = opts.client;
    this.#log = opts.log.child({ datastore: 'etcdv3' });
    this.#prefix = opts.prefix ?? KEY_PREFIX;
    this.#backoff = opts.backoffMs ?? { min: 100, max: 2000 };
    this.#afterList = opts.afterList;
  }

  /** Completed resyncs after the first list (for tests and metrics). */
  get resyncs(): number {
    return this.#resyncs;
  }

  start(callbacks: SyncerCallbacks): void {
    this.#cb = callbacks;
    this.#setStatus('wait-for-datastore');
    this.#running = this.#syncLoop();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#generation++;
    const watch = this.#watch;
    this.#watch = undefined;
    this.#wake?.();
    await watch?.cancel();
    await this.#running;
    this.#client.close();
  }

  #setStatus(s: SyncStatus): void {
    if (this.#status === s) return;
    this.#status = s;
    this.#cb?.onStatusUpdated(s);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  // One list-then-watch cycle per iteration; the loop parks while the watch is healthy.
  async #syncLoop(): Promise<void> {
    let delay = this.#backoff.min;
    let first = true;
    let failures = 0;
    while (!this.#stopped) {
      let revision: string;
      try {
        const t0 = Date.now();
        const listed = await this.#client.list(this.#prefix);
        if (this.#stopped) return;
        if (failures > 1) this.#log.info({ failures }, 'the datastore is reachable again');
        failures = 0;
        this.#setStatus('resync-in-progress');
        const changes = this.#applyList(listed.kvs, listed.revision);
        revision = listed.revision;
        this.#log.info({ revision, keys: listed.kvs.length, changes, ms: Date.now() - t0 }, first ? 'listed the datastore' : 'resynced the datastore');
        if (!first) this.#resyncs++;
        await this.#afterList?.(revision);
        if (this.#stopped) return;
      } catch (e) {
        if (this.#stopped) return;
        // The first failure of a run is a warning; the retries after it are debug.
        failures++;
        const msg = (e as Error).message;
        if (failures === 1) this.#log.warn({ err: msg }, 'cannot list the datastore; retrying with backoff');
        else this.#log.debug({ err: msg, failures, retryInMs: delay }, 'cannot list the datastore; retrying');
        this.#setStatus('wait-for-datastore');
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.#backoff.max);
        continue;
      }
      const lost = await this.#watchFrom(revision);
      if (this.#stopped) return;
      if (lost === 'watch-failed') {
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.#backoff.max);
      } else {
        delay = this.#backoff.min;
      }
      first = false;
    }
  }

  // Delivers the difference between the listing and what was delivered before.
  #applyList(kvs: Array<{ key: string; value: string; modRevision: string }>, revision: string): number {
    const updates: Update[] = [];
    const seen = new Set<string>();
    for (const kv of kvs) {
      seen.add(kv.key);
      if (this.#known.get(kv.key) === kv.modRevision) continue;
      this.#known.set(kv.key, kv.modRevision);
      updates.push(updateOf(kv.key, kv.value, kv.modRevision));
    }
    for (const key of [...this.#known.keys()]) {
      if (seen.has(key)) continue;
      this.#known.delete(key);
      updates.push({ key, value: null, revision });
    }
    if (updates.length) this.#cb?.onUpdates(updates);
    this.#setStatus('in-sync');
    return updates.length;
  }

  // Watches until the watch is lost; resolves with why.
  #watchFrom(revision: string): Promise<'lost' | 'watch-failed'> {
    const generation = ++this.#generation;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (why: 'lost' | 'watch-failed') => {
        if (settled) return;
        settled = true;
        this.#wake = undefined;
        this.#watch = undefined;
        resolve(why);
      };
      this.#wake = () => finish('lost');
      const next = (BigInt(revision) + 1n).toString();
      this.#client
        .watch(this.#prefix, next, {
          onEvents: (events) => {
            if (generation === this.#generation) this.#onEvents(events);
          },
          onLost: (err, compacted) => {
            if (generation !== this.#generation) return;
            this.#log.warn({ err: err.message, compacted }, compacted ? 'watch revision compacted; full resync' : 'lost the datastore watch; resyncing');
            finish('lost');
          },
        })
        .then((handle) => {
          if (settled || this.#stopped) void handle.cancel();
          else this.#watch = handle;
        })
        .catch((e: unknown) => {
          this.#log.warn({ err: (e as Error).message }, 'cannot watch the datastore; resyncing');
          finish('watch-failed');
        });
    });
  }

  #onEvents(events: WatchEvent[]): void {
    const updates: Update[] = [];
    for (const ev of events) {
      if (ev.type === 'delete') {
        if (!this.#known.delete(ev.key)) continue;
        updates.push({ key: ev.key, value: null, revision: ev.modRevision });
      } else {
        this.#known.set(ev.key, ev.modRevision);
        updates.push(updateOf(ev.key, ev.value ?? '', ev.modRevision));
      }
    }
    if (updates.length) this.#cb?.onUpdates(updates);
  }
}
