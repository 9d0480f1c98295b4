// Our own small etcd interface (what the syncer needs: a paged, consistent list and a
// watch), implemented with the etcd3 package. Retrying is the syncer's business: the
// package's retry and circuit-breaker policies are replaced by pass-through ones, since
// an open breaker would hide a recovered etcd for seconds.
import { readFileSync } from 'node:fs';

import { Etcd3, type IOptions, Range, type Watcher } from 'etcd3';

import { dropStrayWatchResponses } from './stray-watch-responses.js';

dropStrayWatchResponses();

export interface EtcdTlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

export interface EtcdClientOptions extends EtcdTlsFiles {
  endpoints: string[];
  /** Per-request and dial timeout. */
  timeoutMs: number;
  /** The largest response accepted (default 64 MiB); a list page too large is asked for again in halves. */
  maxMessageBytes?: number;
}

export interface KeyValue {
  key: string;
  value: string;
  modRevision: string;
}

export interface WatchEvent {
  type: 'put' | 'delete';
  key: string;
  /** Absent for a delete. */
  value?: string;
  modRevision: string;
}

export interface WatchHandlers {
  onEvents(events: WatchEvent[], revision: string): void;
  /**
   * The watch ended: the connection was lost, or etcd cancelled it (compacted: true when its start revision was
   * compacted).
   */
  onLost(err: Error, compacted: boolean): void;
}

export interface WatchHandle {
  cancel(): Promise<void>;
}

export interface EtcdClient {
  /**
   * Every key under `prefix` at one revision (the latest, or `atRevision`), read in pages
   * of `pageSize` keys, or (unset) of about LIST_PAGE_BYTES each.
   */
  list(prefix: string, pageSize?: number, atRevision?: string): Promise<{ revision: string; kvs: KeyValue[] }>;
  /** Watches `prefix` from `startRevision` on. */
  watch(prefix: string, startRevision: string, handlers: WatchHandlers): Promise<WatchHandle>;
  /**
   * Writes one key; with `ttlSeconds`, under a new lease of that TTL and no keep-alive, so
   * the key goes when it is not written again in time (Felix's status reports).
   */
  put(key: string, value: string, ttlSeconds?: number): Promise<void>;
  /** Deletes one key (no error if it is already gone). */
  delete(key: string): Promise<void>;
  /**
   * Drops the connection and starts a new one at the next request: a gRPC channel whose
   * connection attempt reached a server that never speaks (a load balancer in front of a
   * dead etcd) waits for it for ever, and would never try the one that replaced it.
   */
  reconnect?(): void;
  close(): void;
}

/**
 * A list's pages: the first of FIRST_PAGE_KEYS keys, the next of as many as make about
 * LIST_PAGE_BYTES at the sizes seen so far. etcd counts the rest of the range for every
 * page it serves, so paging costs the square of the keys over the page size: 250,000
 * endpoints in pages of 1,000 were 18 s of etcd's time, in pages of ~20,000 (16 MiB) 4-6 s
 * (Felix reads each kind unpaged, in one response).
 */
const FIRST_PAGE_KEYS = 1000;
const LIST_PAGE_BYTES = 16 << 20;
const MAX_PAGE_KEYS = 100_000;

/** The next page's keys, from the bytes and keys listed so far. */
function nextPageKeys(bytes: number, keys: number): number {
  if (!keys || !bytes) return FIRST_PAGE_KEYS;
  return Math.max(1, Math.min(MAX_PAGE_KEYS, Math.floor(LIST_PAGE_BYTES / (bytes / keys))));
}

/** gRPC's RESOURCE_EXHAUSTED: a response over the receive limit. */
function tooLarge(e: unknown): boolean {
  return (e as { code?: unknown }).code === 8 || /RESOURCE_EXHAUSTED|larger than max/i.test(String(e));
}

/** The smallest policy etcd3 accepts: run the call once. */
const passThrough = {
  execute: <T>(fn: (context: { signal: AbortSignal; attempt: number }) => PromiseLike<T> | T) =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal, attempt: 0 })),
};

function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if ((b[i] as number) < 0xff) {
      const out = b.subarray(0, i + 1);
      out[i] = (out[i] as number) + 1;
      return out;
    }
  }
  return Buffer.from([0]);
}

export class Etcd3Client implements EtcdClient {
  #etcd: Etcd3;
  readonly #options: IOptions;
  readonly #timeoutMs: number;

  constructor(opts: EtcdClientOptions) {
    const o: IOptions = {
      hosts: opts.endpoints,
      dialTimeout: opts.timeoutMs,
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.timeoutMs }),
      faultHandling: { host: () => passThrough as never, global: passThrough as never },
      grpcOptions: {
        // Whole-prefix pages can be large; and dead peers must be noticed (keepalive).
        'grpc.max_receive_message_length': opts.maxMessageBytes ?? 64 * 1024 * 1024,
        'grpc.keepalive_time_ms': 10_000,
        'grpc.keepalive_timeout_ms': 5_000,
        'grpc.keepalive_permit_without_calls': 1,
        // Its own connections: from grpc-js's shared pool, reconnect() would get the stuck one back.
        'grpc.use_local_subchannel_pool': 1,
      },
    };
    if (opts.caFile || opts.certFile || opts.keyFile) {
      const creds: NonNullable<IOptions['credentials']> = {
        rootCertificate: opts.caFile ? readFileSync(opts.caFile) : (undefined as unknown as Buffer),
      };
      if (opts.certFile) creds.certChain = readFileSync(opts.certFile);
      if (opts.keyFile) creds.privateKey = readFileSync(opts.keyFile);
      o.credentials = creds;
    }
    this.#options = o;
    this.#timeoutMs = opts.timeoutMs;
    this.#etcd = new Etcd3(o);
  }

  reconnect(): void {
    this.#etcd.close();
    this.#etcd = new Etcd3(this.#options);
  }

  async list(prefix: string, pageSize?: number, atRevision?: string): Promise<{ revision: string; kvs: KeyValue[] }> {
    const end = prefixEnd(prefix);
    const kvs: KeyValue[] = [];
    let revision = atRevision;
    let limit = pageSize ?? FIRST_PAGE_KEYS;
    // The most keys a page may ask for once one was too large.
    let cap = MAX_PAGE_KEYS;
    let bytes = 0;
    const page = (start: Buffer) => {
      let q = this.#etcd.getAll().inRange(new Range(start, end)).limit(limit);
      if (revision) q = q.revision(revision);
      const p = q.exec();
      // Asked for ahead: a failure is seen when it is awaited, or not at all if a page before it failed.
      p.catch(() => {});
      return { start, p };
    };
    let next = page(Buffer.from(prefix));
    for (;;) {
      let res: Awaited<typeof next.p>;
      try {
        res = await next.p;
      } catch (e) {
        // A page over the response limit (a few huge values): the same page in halves.
        if (pageSize !== undefined || limit === 1 || !tooLarge(e)) throw e;
        cap = limit = Math.ceil(limit / 2);
        next = page(next.start);
        continue;
      }
      revision ??= res.header.revision;
      const last = res.kvs[res.kvs.length - 1];
      const more = res.more && !!last;
      for (const kv of res.kvs) bytes += kv.key.length + kv.value.length;
      if (pageSize === undefined) limit = Math.min(cap, nextPageKeys(bytes, kvs.length + res.kvs.length));
      // The next page is asked for before this one is decoded: etcd serves it meanwhile.
      if (more) next = page(Buffer.concat([last.key, Buffer.from([0])]));
      for (const kv of res.kvs)
        kvs.push({ key: kv.key.toString(), value: kv.value.toString(), modRevision: kv.mod_revision });
      if (!more) return { revision, kvs };
    }
  }

  async watch(prefix: string, startRevision: string, handlers: WatchHandlers): Promise<WatchHandle> {
    let done = false;
    // Listeners go on before the watch is attached: a connection lost while it is being
    // created must be seen too (etcd3 would otherwise quietly resume it).
    const watcher: Watcher = this.#etcd.watch().prefix(prefix).startRevision(startRevision).watcher();
    const lost = (err: Error, compacted: boolean) => {
      if (done) return;
      done = true;
      watcher.removeAllListeners();
      watcher.on('error', () => {});
      void watcher.cancel().catch(() => {});
      handlers.onLost(err, compacted);
    };
    watcher.on('data', (res) => {
      if (done) return;
      if (res.compact_revision && res.compact_revision !== '0') {
        lost(
          new Error(`watch revision ${startRevision} was compacted (compact revision ${res.compact_revision})`),
          true,
        );
        return;
      }
      const events: WatchEvent[] = res.events.map((ev) => {
        const e: WatchEvent = {
          type: ev.type === 'Delete' ? 'delete' : 'put',
          key: ev.kv.key.toString(),
          modRevision: ev.kv.mod_revision,
        };
        if (ev.type !== 'Delete') e.value = ev.kv.value.toString();
        return e;
      });
      if (events.length) handlers.onEvents(events, res.header.revision);
    });
    watcher.on('disconnected', (err: Error) => lost(err, false));
    watcher.on('error', (err: Error) => lost(err, /compact/i.test(err.message)));
    watcher.on('end', () => lost(new Error('watch ended'), false));
    // A watch whose connection never comes up (a server that accepts and never speaks) has no
    // keepalive to end it: it gets the request timeout like any call.
    await new Promise<void>((resolve) => {
      if (done) resolve();
      const t = setTimeout(() => {
        lost(new Error(`the watch was not established within ${this.#timeoutMs} ms`), false);
        resolve();
      }, this.#timeoutMs);
      const settle = () => {
        clearTimeout(t);
        resolve();
      };
      watcher.once('connected', settle);
      watcher.once('disconnected', settle);
      watcher.once('error', settle);
    });
    return {
      cancel: async () => {
        if (done) return;
        done = true;
        watcher.removeAllListeners();
        watcher.on('error', () => {});
        await watcher.cancel().catch(() => {});
      },
    };
  }

  async put(key: string, value: string, ttlSeconds?: number): Promise<void> {
    if (ttlSeconds === undefined) {
      await this.#etcd.put(key).value(value).exec();
      return;
    }
    const lease = this.#etcd.lease(ttlSeconds, { autoKeepAlive: false });
    lease.on('lost', () => {});
    try {
      await lease.put(key).value(value).exec();
    } finally {
      // Only the client-side object goes; the lease itself lives out its TTL in etcd.
      lease.removeAllListeners();
    }
  }

  /** One key's value and its modification revision; undefined when it does not exist. */
  async getOne(key: string): Promise<{ value: string; modRevision: string } | undefined> {
    const res = await this.#etcd.get(key).exec();
    const kv = res.kvs[0];
    return kv ? { value: kv.value.toString(), modRevision: kv.mod_revision } : undefined;
  }

  /** Writes `value` only if `key` was not modified since `modRevision`; false if it was (a conflict). */
  async putIfUnchanged(key: string, value: string, modRevision: string): Promise<boolean> {
    const res = await this.#etcd.if(key, 'Mod', '==', modRevision).then(this.#etcd.put(key).value(value)).commit();
    return res.succeeded;
  }

  async delete(key: string): Promise<void> {
    await this.#etcd.delete().key(key).exec();
  }

  close(): void {
    this.#etcd.close();
  }
}
