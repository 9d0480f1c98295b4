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
import type { SerializedUpdate, SyncStatus } from '../syncproto.js';
import { frameChunks, STREAM_IDENTIFIER } from '../snappy.js';
import { encodeShared, SERVER_PREAMBLE } from './encoding.js';
import type { TyphaMetrics } from './metrics.js';

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
  /** MsgKVs batches, encoded once for every stream. */
  readonly messages: readonly Buffer[];
  readonly kvs: number;
  readonly bytes: number;
  readonly builtAt: number;
  /**
   * The same, as Typha's binary snapshot for clients that chose snappy: a whole
   * compressed gob stream (type definitions, the KVs, then a MsgDecoderRestart), built
   * once on first use and shared.
   */
  compressed(): Promise<Buffer>;
}

/** Bytes compressed per turn of the event loop. */
const COMPRESS_SLICE = 1 << 20;
const BLOCK = 65_536;

// Block by block from the messages themselves: a concatenated copy of a 120 MB snapshot
// would double the server's peak memory for nothing.
async function compressedSnapshot(messages: readonly Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [STREAM_IDENTIFIER];
  const block = Buffer.allocUnsafe(BLOCK);
  let fill = 0;
  let sinceYield = 0;
  const end = encodeShared({
    type: 'DecoderRestart',
    message: 'End of compressed snapshot.',
    compressionAlgorithm: 'snappy',
  });
  for (const part of [SERVER_PREAMBLE, ...messages, end]) {
    for (let at = 0; at < part.length; ) {
      const n = part.copy(block, fill, at, Math.min(part.length, at + BLOCK - fill));
      fill += n;
      at += n;
      if (fill < BLOCK) continue;
      out.push(frameChunks(block));
      fill = 0;
      sinceYield += BLOCK;
      if (sinceYield >= COMPRESS_SLICE) {
        sinceYield = 0;
        await new Promise((r) => setImmediate(r));
      }
    }
  }
  if (fill) out.push(frameChunks(block.subarray(0, fill)));
  return Buffer.concat(out);
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
  #snapshot: Promise<SharedSnapshot> | undefined;

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

  /** The shared snapshot to stream to a new client. */
  snapshot(): Promise<SharedSnapshot> {
    const now = Date.now();
    const cached = this.#snapshot;
    if (cached) {
      return cached.then((s) => {
        if (s.crumb === this.#current || now - s.builtAt < this.#reuseMs) {
          this.#metrics?.snapshotsReused.inc();
          return s;
        }
        return this.#snapshot === cached || this.#snapshot === undefined ? this.#start() : this.#snapshot;
      });
    }
    return this.#start();
  }

  #start(): Promise<SharedSnapshot> {
    const p = this.#build();
    this.#snapshot = p;
    void p.then(() => this.#expire(p));
    return p;
  }

  /** Forgets the cached snapshot (clients streaming it keep their own reference). */
  #expire(p: Promise<SharedSnapshot>): void {
    // Held longer, it would pin its breadcrumb and every one after it, and its bytes.
    setTimeout(() => {
      if (this.#snapshot === p) this.#snapshot = undefined;
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
  // the event loop so pings and other clients are not held up.
  async #build(): Promise<SharedSnapshot> {
    const crumb = this.#current;
    const kvs = [...this.#kvs.values()];
    const messages: Buffer[] = [];
    let bytes = 0;
    for (let i = 0; i < kvs.length; i += this.#maxBatch) {
      if (i && i % BUILD_SLICE === 0) await new Promise((r) => setImmediate(r));
      const m = encodeShared({ type: 'KVs', kvs: kvs.slice(i, i + this.#maxBatch) });
      bytes += m.length;
      messages.push(m);
    }
    this.#metrics?.snapshotsGenerated.inc();
    this.#metrics?.snapshotRawBytes.set(bytes);
    let compressed: Promise<Buffer> | undefined;
    const metrics = this.#metrics;
    return {
      crumb,
      messages,
      kvs: kvs.length,
      bytes,
      builtAt: Date.now(),
      compressed() {
        compressed ??= compressedSnapshot(messages).then((b) => {
          metrics?.snapshotCompressedBytes.set(b.length);
          return b;
        });
        return compressed;
      },
    };
  }
}
