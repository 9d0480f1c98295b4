// The Typha client as Felix runs it: one connection at a time (connection.ts), reconnected
// with backoff when it ends, and the client-side resync of libcalico-go's DedupeBuffer.
// After a reconnect Typha sends its whole snapshot again; keys it re-sends unchanged are
// not passed on, and once the new stream is in sync, keys it did not re-send are deleted.
// While disconnected the status is wait-for-datastore, as Felix reports it.
import type { Logger } from '../log.js';
import { TyphaConnection, type TyphaConnectionOptions } from './connection.js';
import type { SerializedUpdate, SyncStatus } from './syncproto.js';

export interface TyphaClientOptions extends Omit<TyphaConnectionOptions, 'onUpdates' | 'onStatus'> {
  onUpdates(kvs: SerializedUpdate[]): void;
  onStatus(status: SyncStatus): void;
  log: Logger;
  /** Reconnect backoff, doubling from min to max (ms). */
  backoffMs?: { min: number; max: number };
  /** Where to connect next (Kubernetes discovery), asked before each attempt; else `address`. */
  nextAddress?: () => Promise<string>;
}

/** What has been passed on, per key: a re-sent identical value is not passed on again. */
export class DedupeBuffer {
  readonly #known = new Map<string, Buffer>();
  #pending: Set<string> | undefined;

  /** A new stream starts: every known key must be re-sent before it is in sync, or it goes. */
  restarted(): void {
    this.#pending = new Set(this.#known.keys());
  }

  /** The updates worth passing on. */
  updates(kvs: SerializedUpdate[]): SerializedUpdate[] {
    const out: SerializedUpdate[] = [];
    for (const u of kvs) {
      this.#pending?.delete(u.key);
      const deletion = u.updateType === 3 || u.value.length === 0;
      const had = this.#known.get(u.key);
      if (deletion) {
        if (!had) continue;
        this.#known.delete(u.key);
      } else {
        if (had?.equals(u.value)) continue;
        this.#known.set(u.key, u.value);
      }
      out.push(u);
    }
    return out;
  }

  /** At in-sync after a restart: deletions for the keys the new stream did not send. */
  inSync(): SerializedUpdate[] {
    const gone = [...(this.#pending ?? [])];
    this.#pending = undefined;
    for (const key of gone) this.#known.delete(key);
    return gone.map((key) => ({
      key,
      value: Buffer.alloc(0),
      revision: '',
      v3ResourceVersion: '',
      ttlNanos: 0,
      updateType: 3,
    }));
  }

  get size(): number {
    return this.#known.size;
  }
}

export class TyphaClient {
  readonly #opts: TyphaClientOptions;
  readonly #dedupe = new DedupeBuffer();
  #conn: TyphaConnection | undefined;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #backoff: number;
  #connections = 0;
  #address: string;

  constructor(opts: TyphaClientOptions) {
    this.#opts = opts;
    this.#backoff = opts.backoffMs?.min ?? 100;
    this.#address = opts.address;
  }

  /** The Typha connected to (or last tried). */
  get address(): string {
    return this.#address;
  }

  get connections(): number {
    return this.#connections;
  }

  start(): void {
    this.#opts.onStatus('wait-for-datastore');
    void this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#conn?.close();
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    if (this.#connections++ > 0) this.#dedupe.restarted();
    if (this.#opts.nextAddress) {
      try {
        this.#address = await this.#opts.nextAddress();
      } catch (e) {
        this.#retry(e as Error);
        return;
      }
      if (this.#stopped) return;
    }
    const conn = new TyphaConnection({
      ...this.#opts,
      address: this.#address,
      onUpdates: (kvs) => {
        const out = this.#dedupe.updates(kvs);
        if (out.length) this.#opts.onUpdates(out);
      },
      onStatus: (status) => {
        if (status === 'in-sync') {
          this.#backoff = this.#opts.backoffMs?.min ?? 100;
          const gone = this.#dedupe.inSync();
          if (gone.length) this.#opts.onUpdates(gone);
        }
        this.#opts.onStatus(status);
      },
    });
    this.#conn = conn;
    conn.run().then(
      () => this.#retry(undefined),
      (e: Error) => this.#retry(e),
    );
  }

  #retry(e: Error | undefined): void {
    if (this.#stopped) return;
    this.#opts.log.warn(
      { typha: this.#address, error: e?.message, retryInMs: this.#backoff },
      'lost the connection to Typha; reconnecting',
    );
    this.#opts.onStatus('wait-for-datastore');
    this.#timer = setTimeout(() => void this.#connect(), this.#backoff);
    this.#backoff = Math.min(this.#backoff * 2, this.#opts.backoffMs?.max ?? 5000);
  }
}
