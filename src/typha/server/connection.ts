// One client of `palisade typha`, as Typha's syncserver connection handles it: the
// client's hello within the handshake timeout (modern policy keys, the felix syncer), our
// hello, the shared snapshot in MsgKVs batches, its sync status, then the breadcrumbs as
// they come. A client that offers decoder restarts and snappy (Felix does) is sent a
// MsgDecoderRestart, and after its ACK the shared compressed snapshot, which ends with
// another restart; after the second ACK its stream goes on snappy-framed - each
// breadcrumb's message compressed once for every client - the next one as its shared bytes when the client is up to
// date, coalesced
// into fuller messages when it lags. Pings every interval; a pong must follow in time.
// The client may send nothing but pongs (and nothing over the inbound size cap); a write
// that cannot drain within the write timeout, or a client more than MaxFallBehind behind
// once its grace period after the snapshot is over, ends the connection. Other clients
// never notice: everything a connection holds is references to shared buffers.
import type { Socket } from 'node:net';

import type { Logger } from '../../log.js';
import { GobDecoder } from '../gob/decoder.js';
import { timeOfDate } from '../gob/time.js';
import { GobError } from '../gob/wire.js';
import { type SerializedUpdate, type TyphaMessage, toMessage } from '../syncproto.js';
import { frameChunks, STREAM_IDENTIFIER } from '../snappy.js';
import { encodeShared, SERVER_PREAMBLE } from './encoding.js';
import type { TyphaMetrics } from './metrics.js';
import type { Breadcrumb, SharedSnapshot, SnapshotCache } from './snapshot-cache.js';

export interface ServerTimers {
  handshakeMs: number;
  pingMs: number;
  pongTimeoutMs: number;
  writeTimeoutMs: number;
  maxFallBehindMs: number;
  newClientGraceMs: number;
}

export const DEFAULT_TIMERS: ServerTimers = {
  handshakeMs: 10_000,
  pingMs: 10_000,
  pongTimeoutMs: 60_000,
  writeTimeoutMs: 120_000,
  maxFallBehindMs: 300_000,
  newClientGraceMs: 300_000,
};

/**
 * The datastore in the policy-key layout before Calico 3.32, for clients that lack
 * SupportsModernPolicyKeys: served while `modern()` says the cluster's release is older
 * than 3.32 (a 3.31 Felix during an upgrade); refused otherwise, as v3.32's Typha refuses.
 */
export interface LegacyLayout {
  cache: SnapshotCache;
  /** The cluster's release, for the reports; whether it uses the modern layout. */
  release: () => { text: string; modern: boolean };
}

export interface ServerConnectionOptions {
  id: bigint;
  socket: Socket;
  cache: SnapshotCache;
  legacy?: LegacyLayout | undefined;
  log: Logger;
  version: string;
  timers: ServerTimers;
  /** KVs per MsgKVs (ServerMaxMessageSize). */
  maxMessageKvs: number;
  /** Largest message a client may send (Typha: 1 MiB). */
  maxInboundBytes: number;
  metrics?: TyphaMetrics | undefined;
  /** The client's hello was accepted and its snapshot begins. */
  onStreaming?: () => void;
}

type State = 'handshake' | 'await-ack' | 'snapshot' | 'streaming' | 'closed';

/** Shared deltas of each breadcrumb, encoded on first use (and compressed, for snappy streams). */
const crumbBytes = new WeakMap<Breadcrumb, Buffer>();
const crumbSnappy = new WeakMap<Breadcrumb, Buffer>();

export class ServerConnection {
  readonly id: bigint;
  hostname = '';
  readonly #o: ServerConnectionOptions;
  readonly #dec: GobDecoder;
  readonly #remote: string;
  #state: State = 'handshake';
  #crumb: Breadcrumb | undefined;
  #snapshotDoneAt = 0;
  /** The modern layout's, or the legacy one's for a client that lacks modern policy keys. */
  #cache: SnapshotCache;
  #pumping = false;
  #pingSentAt: number | undefined;
  #handshakeTimer: NodeJS.Timeout | undefined;
  /** The client chose snappy: after the handshake everything is framed. */
  #snappy = false;
  /** What the next ACK from the client lets us do. */
  #onAck: (() => void) | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();
  #unsubscribe: (() => void) | undefined;
  #done!: (reason: string) => void;
  readonly finished: Promise<string>;

  constructor(o: ServerConnectionOptions) {
    this.#cache = o.cache;
    this.#o = o;
    this.id = o.id;
    this.#dec = new GobDecoder({ maxMessageBytes: o.maxInboundBytes });
    // Read now: a destroyed socket no longer knows it.
    this.#remote = `${o.socket.remoteAddress}:${o.socket.remotePort}`;
    this.finished = new Promise((resolve) => (this.#done = resolve));
  }

  get state(): State {
    return this.#state;
  }

  start(): void {
    const s = this.#o.socket;
    s.setNoDelay(true);
    this.#handshakeTimer = this.#after(this.#o.timers.handshakeMs, () =>
      this.close(`no hello within ${this.#o.timers.handshakeMs} ms`),
    );
    s.on('data', (chunk: Buffer) => this.#onData(chunk));
    s.on('error', (e) => this.close(`socket error: ${e.message}`));
    s.on('close', () => this.close('the client closed the connection'));
  }

  /** Ends the connection (idempotent); `finished` resolves with the reason. A broken protocol is a warning. */
  close(reason: string, level: 'info' | 'warn' = 'info'): void {
    if (this.#state === 'closed') return;
    const was = this.#state;
    this.#state = 'closed';
    for (const t of this.#timers) clearTimeout(t);
    this.#unsubscribe?.();
    this.#o.socket.destroy();
    if (was === 'streaming') this.#o.metrics?.connectionsStreaming.dec();
    this.#o.log[level](
      { connID: String(this.id), client: this.hostname, remote: this.#remote, reason },
      'Typha connection closed',
    );
    this.#done(reason);
  }

  #after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.#timers.add(t);
    return t;
  }

  #cancel(t: NodeJS.Timeout): void {
    clearTimeout(t);
    this.#timers.delete(t);
  }

  #onData(chunk: Buffer): void {
    try {
      for (const env of this.#dec.push(chunk)) this.#onMessage(toMessage(env));
    } catch (e) {
      if (!(e instanceof GobError)) throw e;
      this.close(`bad data from the client: ${e.message}`, 'warn');
    }
  }

  #onMessage(m: TyphaMessage): void {
    if (this.#state === 'closed') return;
    if (this.#state === 'handshake') {
      this.#onHello(m);
      return;
    }
    if (this.#state === 'await-ack') {
      if (m.type !== 'ACK') {
        this.close(`the client sent ${m.type} where its ACK of a decoder restart was due`, 'warn');
        return;
      }
      const next = this.#onAck;
      this.#onAck = undefined;
      next?.();
      return;
    }
    if (m.type !== 'Pong') {
      this.close(`the client sent ${m.type}; after its hello only pongs are allowed`, 'warn');
      return;
    }
    const pinged = m.pingTimestamp.unix * 1000 + m.pingTimestamp.nanos / 1e6;
    this.#o.metrics?.pingLatency.observe(Math.max(0, Date.now() - pinged) / 1000);
    this.#pingSentAt = undefined;
  }

  #onHello(m: TyphaMessage): void {
    if (m.type !== 'ClientHello') {
      this.close(`the client sent ${m.type} before its hello`, 'warn');
      return;
    }
    if (this.#handshakeTimer) this.#cancel(this.#handshakeTimer);
    this.hostname = m.hostname;
    const syncer = m.syncerType || 'felix';
    if (syncer !== 'felix') {
      this.close(`the client wants the "${syncer}" syncer; palisade typha serves only "felix"`);
      return;
    }
    if (!m.supportsModernPolicyKeys) {
      const release = this.#o.legacy?.release();
      if (!this.#o.legacy || !release || release.modern) {
        const why = release ? ` (the cluster runs Calico ${release.text})` : '';
        this.close(`the client (${m.version}) does not support modern policy keys; it is too old for this Typha${why}`);
        return;
      }
      this.#cache = this.#o.legacy.cache;
      this.#o.log.info(
        { connID: String(this.id), client: m.hostname, clientVersion: m.version, calicoVersion: release.text },
        'Typha client without modern policy keys: served the layout before Calico 3.32',
      );
    }
    this.#o.log.info(
      { connID: String(this.id), client: m.hostname, clientVersion: m.version, info: m.info },
      'Typha client connected',
    );
    this.#write(
      Buffer.concat([
        SERVER_PREAMBLE,
        encodeShared({
          type: 'ServerHello',
          version: this.#o.version,
          syncerType: 'felix',
          supportsNodeResourceUpdates: true,
          serverConnId: this.id,
        }),
      ]),
    );
    this.#o.onStreaming?.();
    if (m.supportsDecoderRestart && m.supportedCompressionAlgorithms.includes('snappy')) {
      this.#write(
        encodeShared({
          type: 'DecoderRestart',
          message: 'enable compression: snappy;send binary snapshot',
          compressionAlgorithm: 'snappy',
        }),
      );
      this.#awaitAck(() => void this.#sendCompressedSnapshot());
      return;
    }
    this.#state = 'snapshot';
    void this.#sendSnapshot();
  }

  // As Typha: the client has its pong timeout to acknowledge a restart.
  #awaitAck(then: () => void): void {
    this.#state = 'await-ack';
    const t = this.#after(this.#o.timers.pongTimeoutMs, () =>
      this.close(`no ACK of a decoder restart within ${this.#o.timers.pongTimeoutMs} ms`),
    );
    this.#onAck = () => {
      this.#cancel(t);
      then();
    };
  }

  async #sendCompressedSnapshot(): Promise<void> {
    this.#state = 'snapshot';
    const t0 = Date.now();
    // Sent as it is made: the first segments go out while the rest is encoded.
    const snap = this.#cache.shared();
    for await (const segment of snap.compressed().read()) {
      if (this.#isClosed()) return;
      if (!this.#o.socket.write(segment)) await this.#drained();
    }
    if (this.#isClosed()) return;
    this.#awaitAck(() => {
      // A new stream: snappy-framed, gob started afresh.
      this.#snappy = true;
      this.#o.socket.write(Buffer.concat([STREAM_IDENTIFIER, frameChunks(SERVER_PREAMBLE)]));
      this.#write(encodeShared({ type: 'SyncStatus', status: snap.crumb.status }));
      this.#startStreaming(snap, t0);
    });
  }

  // (A method, so the compiler does not carry a state narrowed before an await past it.)
  #isClosed(): boolean {
    return this.#state === 'closed';
  }

  async #sendSnapshot(): Promise<void> {
    const t0 = Date.now();
    const snap = await this.#cache.snapshot();
    for (const msg of snap.messages) {
      if (this.#state === 'closed') return;
      if (!this.#write(msg)) await this.#drained();
    }
    if (this.#state === 'closed') return;
    this.#write(encodeShared({ type: 'SyncStatus', status: snap.crumb.status }));
    this.#startStreaming(snap, t0);
  }

  #startStreaming(snap: SharedSnapshot, t0: number): void {
    this.#o.metrics?.snapshotSendSecs.observe((Date.now() - t0) / 1000);
    if (snap.kvs) this.#o.metrics?.kvsPerMsg.observe(snap.kvs / Math.max(1, snap.messages.length));
    this.#crumb = snap.crumb;
    this.#snapshotDoneAt = Date.now();
    this.#state = 'streaming';
    this.#o.metrics?.connectionsStreaming.inc();
    this.#unsubscribe = this.#cache.subscribe(() => this.#pump());
    this.#schedulePing();
    this.#watchLag();
    this.#pump();
  }

  // A client whose socket stays full never gets to the pump's own check: look at its lag
  // on a timer too.
  #watchLag(): void {
    this.#after(Math.min(1000, Math.max(50, this.#o.timers.maxFallBehindMs / 4)), () => {
      if (this.#state !== 'streaming') return;
      const next = this.#crumb?.next;
      if (next && this.#fellBehind(next)) return;
      this.#watchLag();
    });
  }

  #schedulePing(): void {
    this.#after(this.#o.timers.pingMs, () => {
      if (this.#state !== 'streaming') return;
      if (this.#pingSentAt !== undefined && Date.now() - this.#pingSentAt > this.#o.timers.pongTimeoutMs) {
        this.close(`no pong within ${this.#o.timers.pongTimeoutMs} ms`);
        return;
      }
      if (this.#pingSentAt === undefined) {
        this.#pingSentAt = Date.now();
        this.#write(encodeShared({ type: 'Ping', timestamp: timeOfDate(new Date(this.#pingSentAt)) }));
      }
      this.#schedulePing();
    });
  }

  // Sends what the client has not had yet, as long as its socket takes it.
  async #pump(): Promise<void> {
    if (this.#pumping || this.#state !== 'streaming') return;
    this.#pumping = true;
    try {
      while (this.#state === 'streaming' && this.#crumb?.next) {
        if (this.#fellBehind(this.#crumb.next)) return;
        const ok = this.#sendNext();
        if (!ok) await this.#drained();
      }
    } finally {
      this.#pumping = false;
    }
  }

  #fellBehind(next: Breadcrumb): boolean {
    const now = Date.now();
    const lag = now - next.time;
    if (lag <= this.#o.timers.maxFallBehindMs || now - this.#snapshotDoneAt < this.#o.timers.newClientGraceMs)
      return false;
    this.close(
      `the client fell ${Math.round(lag / 1000)} s behind (MaxFallBehind ${this.#o.timers.maxFallBehindMs / 1000} s)`,
    );
    return true;
  }

  // One message: the next breadcrumb's shared bytes when it is the last one, or the deltas
  // of as many pending breadcrumbs as fit one message (a status change ends a message).
  #sendNext(): boolean {
    const first = this.#crumb?.next as Breadcrumb;
    const prevStatus = (this.#crumb as Breadcrumb).status;
    if (!first.next || first.deltas.length >= this.#o.maxMessageKvs) {
      this.#crumb = first;
      return this.#sendCrumb(first, prevStatus);
    }
    const kvs: SerializedUpdate[] = [];
    let crumb = first;
    let last = this.#crumb as Breadcrumb;
    while (crumb && crumb.status === prevStatus && kvs.length + crumb.deltas.length <= this.#o.maxMessageKvs) {
      kvs.push(...crumb.deltas);
      last = crumb;
      if (!crumb.next) break;
      crumb = crumb.next;
    }
    if (last === this.#crumb) {
      // A status change comes next.
      this.#crumb = first;
      return this.#sendCrumb(first, prevStatus);
    }
    this.#crumb = last;
    this.#o.metrics?.clientLatency.observe((Date.now() - first.time) / 1000);
    this.#o.metrics?.kvsPerMsg.observe(kvs.length);
    return this.#write(encodeShared({ type: 'KVs', kvs }));
  }

  #sendCrumb(c: Breadcrumb, prevStatus: string): boolean {
    let ok = true;
    if (c.deltas.length) {
      let bytes = crumbBytes.get(c);
      if (!bytes) {
        bytes = encodeShared({ type: 'KVs', kvs: c.deltas as SerializedUpdate[] });
        crumbBytes.set(c, bytes);
      }
      this.#o.metrics?.clientLatency.observe((Date.now() - c.time) / 1000);
      this.#o.metrics?.kvsPerMsg.observe(c.deltas.length);
      if (this.#snappy) {
        let framed = crumbSnappy.get(c);
        if (!framed) {
          framed = frameChunks(bytes);
          crumbSnappy.set(c, framed);
        }
        ok = this.#o.socket.write(framed);
      } else {
        ok = this.#write(bytes);
      }
    }
    if (c.status !== prevStatus) ok = this.#write(encodeShared({ type: 'SyncStatus', status: c.status })) && ok;
    return ok;
  }

  /** Writes a message's gob bytes, snappy-framed on a compressed stream. */
  #write(b: Buffer): boolean {
    if (this.#state === 'closed') return true;
    return this.#o.socket.write(this.#snappy ? frameChunks(b) : b);
  }

  #drained(): Promise<void> {
    const t0 = Date.now();
    const drained = new Promise<void>((resolve) => {
      const t = this.#after(this.#o.timers.writeTimeoutMs, () => {
        this.close(`a write did not complete within ${this.#o.timers.writeTimeoutMs} ms`);
        resolve();
      });
      this.#o.socket.once('drain', () => {
        this.#cancel(t);
        this.#o.metrics?.clientWriteLatency.observe((Date.now() - t0) / 1000);
        resolve();
      });
    });
    // A connection closed meanwhile never drains.
    return Promise.race([drained, this.finished.then(() => undefined)]);
  }
}
