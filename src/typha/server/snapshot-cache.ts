// Typha's snapshot cache (typha/pkg/snapcache): the datastore's current state, one
// serialized update per key, and a chain of breadcrumbs, each a batch of at most
// `maxBatchSize` changes (or a status change) linked to the next. A client holds the
// breadcrumb it has reached and follows the chain; old breadcrumbs are dropped by the
// garbage collector once no client holds them, so server memory follows the slowest
// client only as far as MaxFallBehind lets it lag. Updates that change nothing are dropped.
//
// Encoded snapshots are shared: every client connecting within `snapshotReuseMs` of a
// snapshot's build gets that one and catches up from its breadcrumb (Typha's binary
// snapshot, BinarySnapshotTimeout), so 200 nodes restarting together cost one encoding.
// As Typha, a snapshot outlives that window while the state has not moved on: nodes
// connecting to a quiet cluster never wait for an encoding.
import type { SerializedUpdate, SyncStatus } from '../syncproto.js';
import { encodeShared, SERVER_PREAMBLE } from './encoding.js';
import type { TyphaMetrics } from './metrics.js';
import { GrowingList, SnappyBlockWriter } from './snapshot-stream.js';

export interface Breadcrumb {
  readonly seq: number;
  /** When it was made (ms, Date.now()). */
  readonly time: number;
  readonly deltas: readonly SerializedUpdate[];
  /** The sync status from this breadcrumb on. */
  readonly status: SyncStatus;
  next: Breadcrumb | undefined;
}

export interface SharedSnapshot {
  /** The breadcrumb the snapshot is the state at; clients follow on from its `next`. */
  readonly crumb: Breadcrumb;
  /** MsgKVs batches, encoded once for every stream: all of them once `built` resolves. */
  readonly messages: readonly Buffer[];
  readonly kvs: number;
  /** The messages' bytes (all of them once built). */
  readonly bytes: number;
  /** When the last message was encoded (ms, Date.now()); 0 while it is being built. */
  readonly builtAt: number;
  readonly built: Promise<void>;
  /**
   * The same, as Typha's binary snapshot for clients that chose snappy: a whole
   * compressed gob stream (type definitions, the KVs, then a MsgDecoderRestart), made
   * once on first use, in segments readable while the later ones are still being made.
   */
  compressed(): GrowingList<Buffer>;
}

/** Raw bytes compressed per turn of the event loop (one segment of the binary snapshot). */
const COMPRESS_SLICE = 1 << 20;

// Compresses the messages as the build appends them, a slice per turn of the event loop.
async function compressInto(batches: GrowingList<Buffer>, out: GrowingList<Buffer>, metrics: TyphaMetrics | undefined) {
  const w = new SnappyBlockWriter();
  w.write(SERVER_PREAMBLE);
  let sinceYield = 0;
  for await (const m of batches.read()) {
    w.write(m);
    sinceYield += m.length;
    if (sinceYield < COMPRESS_SLICE) continue;
    sinceYield = 0;
    out.push(w.take());
    await new Promise((r) => setImmediate(r));
  }
  w.write(SNAPSHOT_END);
  out.push(w.finish());
  out.end();
  metrics?.snapshotCompressedBytes.set(out.items.reduce((n, b) => n + b.length, 0));
}

const SNAPSHOT_END = encodeShared({
  type: 'DecoderRestart',
  message: 'End of compressed snapshot.',
  compressionAlgorithm: 'snappy',
});

/** A shared snapshot and the state of its making. */
class Building implements SharedSnapshot {
  /** The MsgKVs batches as they are encoded, ended with the last. */
  readonly batches = new GrowingList<Buffer>();
  bytes = 0;
  builtAt = 0;
  readonly built: Promise<void>;
  #compressed: GrowingList<Buffer> | undefined;

  constructor(
    readonly crumb: Breadcrumb,
    readonly kvs: number,
    build: (s: Building) => Promise<void>,
    readonly metrics: TyphaMetrics | undefined,
  ) {
    this.built = build(this);
  }

  get messages(): readonly Buffer[] {
    return this.batches.items;
  }

  compressed(): GrowingList<Buffer> {
    if (!this.#compressed) {
      this.#compressed = new GrowingList<Buffer>();
      void compressInto(this.batches, this.#compressed, this.metrics);
    }
    return this.#compressed;
  }
}

export interface SnapshotCacheOptions {
  maxBatchSize?: number;
  snapshotReuseMs?: number;
  metrics?: TyphaMetrics;
}

/** KVs encoded per turn of the event loop while a snapshot is built. */
const BUILD_SLICE = 5_000;

export class SnapshotCache {
  readonly #kvs = new Map<string, SerializedUpdate>();
  readonly #maxBatch: number;
  readonly #reuseMs: number;
  readonly #metrics: TyphaMetrics | undefined;
  readonly #listeners = new Set<() => void>();
  #current: Breadcrumb;
  #snapshot: Building | undefined;

  constructor(opts: SnapshotCacheOptions = {}) {
    this.#maxBatch = opts.maxBatchSize ?? 100;
    this.#reuseMs = opts.snapshotReuseMs ?? 1000;
    this.#metrics = opts.metrics;
    this.#current = { seq: 0, time: Date.now(), deltas: [], status: 'wait-for-datastore', next: undefined };
  }

  get current(): Breadcrumb {
    return this.#current;
  }

  get size(): number {
    return this.#kvs.size;
  }

  /** Called after every change of the chain. */
  subscribe(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  onUpdates(updates: readonly SerializedUpdate[]): void {
    const changed: SerializedUpdate[] = [];
    for (const u of updates) {
      this.#metrics?.updatesTotal.inc();
      const old = this.#kvs.get(u.key);
      const deletion = u.updateType === 3 || u.value.length === 0;
      if (deletion ? !old : old?.value.equals(u.value)) {
        this.#metrics?.updatesSkipped.inc();
        continue;
      }
      if (deletion) {
        this.#kvs.delete(u.key);
        changed.push({ ...u, value: Buffer.alloc(0), updateType: 3 });
      } else {
        // Stored as the snapshot sends it: a new key.
        this.#kvs.set(u.key, { ...u, updateType: 1 });
        changed.push({ ...u, updateType: old ? 2 : 1 });
      }
    }
    for (let i = 0; i < changed.length; i += this.#maxBatch)
      this.#append(changed.slice(i, i + this.#maxBatch), this.#current.status);
    if (changed.length) this.#notify();
  }

  onStatus(status: SyncStatus): void {
    if (status === this.#current.status) return;
    this.#append([], status);
    this.#notify();
  }

  /** The shared snapshot to stream to a new client, once it is whole. */
  async snapshot(): Promise<SharedSnapshot> {
    const s = this.shared();
    await s.built;
    return s;
  }

  /**
   * The shared snapshot, possibly still being built (its compressed form can be sent as it
   * is made): the one being built, or the last one while its reuse window lasts or the
   * state has not moved past it, else a new one.
   */
  shared(): SharedSnapshot {
    const s = this.#snapshot;
    if (s && (!s.builtAt || s.crumb === this.#current || Date.now() - s.builtAt < this.#reuseMs)) {
      this.#metrics?.snapshotsReused.inc();
      return s;
    }
    return this.#start();
  }

  #start(): Building {
    const s = new Building(this.#current, this.#kvs.size, (b) => this.#build(b), this.#metrics);
    this.#snapshot = s;
    void s.built.then(() => this.#expire(s));
    return s;
  }

  /**
   * Forgets the cached snapshot (clients streaming it keep their own reference) once the
   * reuse window is over and the state has moved past it. Held longer, it would pin its
   * breadcrumb and every one after it, and its bytes.
   */
  #expire(s: Building): void {
    const forget = () => {
      if (this.#snapshot === s) this.#snapshot = undefined;
    };
    setTimeout(() => {
      if (this.#snapshot !== s) return;
      if (this.#current !== s.crumb) return forget();
      const off = this.subscribe(() => {
        off();
        forget();
      });
    }, this.#reuseMs).unref();
  }

  #append(deltas: SerializedUpdate[], status: SyncStatus): void {
    const crumb: Breadcrumb = { seq: this.#current.seq + 1, time: Date.now(), deltas, status, next: undefined };
    this.#current.next = crumb;
    this.#current = crumb;
    this.#metrics?.breadcrumbSeq.set(crumb.seq);
    if (deltas.length) this.#metrics?.breadcrumbSize.observe(deltas.length);
  }

  #notify(): void {
    this.#metrics?.cacheSize.set(this.#kvs.size);
    for (const fn of this.#listeners) fn();
  }

  // The state is taken at once (an array of references), then encoded a slice per turn of
  // the event loop so pings and other clients are not held up (and the compressed form
  // already made is sent meanwhile).
  async #build(b: Building): Promise<void> {
    const kvs = [...this.#kvs.values()];
    this.#metrics?.snapshotsGenerated.inc();
    for (let i = 0; i < kvs.length; i += this.#maxBatch) {
      if (i && i % BUILD_SLICE === 0) await new Promise((r) => setImmediate(r));
      const m = encodeShared({ type: 'KVs', kvs: kvs.slice(i, i + this.#maxBatch) });
      b.bytes += m.length;
      b.batches.push(m);
    }
    b.builtAt = Date.now();
    b.batches.end();
    this.#metrics?.snapshotRawBytes.set(b.bytes);
  }
}
