// One connection to a Typha, as Felix's syncclient holds it: TCP (or TLS) to TyphaAddr,
// our MsgClientHello (modern policy keys; decoder restart and snappy compression offered,
// as Felix offers them, unless `compression` is false), its MsgServerHello checked (node
// resource updates, the same syncer type), then the stream: KVs and sync statuses to the
// callbacks, each ping answered with a pong. A MsgDecoderRestart is acknowledged and
// the rest of the stream read with a new gob decoder, through snappy's framing when the
// server chose it (its compressed snapshot ends with another restart). Anything else, a
// read gap longer than TyphaReadTimeout or a malformed stream ends the connection with
// an error; reconnecting and the client-side resync are the caller's (Felix's
// DedupeBuffer).
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';

import { GobDecoder } from './gob/decoder.js';
import type { GobEncoder } from './gob/encoder.js';
import { GobError } from './gob/wire.js';
import { SnappyFrameDecoder } from './snappy.js';
import {
  encodeMessage,
  type SerializedUpdate,
  type SyncStatus,
  toMessage,
  type TyphaMessage,
  typhaEncoder,
} from './syncproto.js';
import { timeOfDate } from './gob/time.js';

export interface TyphaConnectionOptions {
  /** host:port */
  address: string;
  hostname: string;
  /** Our version and a description, for Typha's logs. */
  version: string;
  info: string;
  syncerType?: string;
  readTimeoutMs?: number;
  writeTimeoutMs?: number;
  handshakeTimeoutMs?: number;
  /** TLS to Typha (Felix's TyphaCAFile/CertFile/KeyFile; the CN/URI SAN check is the caller's checkServerIdentity). */
  tls?: tls.ConnectionOptions;
  /** Offer decoder restarts and snappy compression (default true, as Felix). */
  compression?: boolean;
  onUpdates(kvs: SerializedUpdate[]): void;
  onStatus(status: SyncStatus): void;
}

export class TyphaConnectionError extends Error {
  readonly code = 'ETYPHA';
}

export class TyphaConnection {
  readonly #opts: TyphaConnectionOptions;
  readonly #enc: GobEncoder = typhaEncoder();
  #dec = serverStreamDecoder();
  /** The server's stream is snappy-framed from its last decoder restart on. */
  #snappy: SnappyFrameDecoder | undefined;
  /** Restarts seen (the compressed snapshot is followed by one more). */
  restarts = 0;
  #socket: net.Socket | undefined;
  #helloDone = false;
  #timer: NodeJS.Timeout | undefined;
  #closed: Promise<void> | undefined;
  serverVersion = '';

  constructor(opts: TyphaConnectionOptions) {
    this.#opts = opts;
  }

  /** Connects and runs until the connection ends: resolves on close(), rejects on any failure. */
  run(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve, reject) => {
      const [host, port] = splitAddress(this.#opts.address);
      const s = this.#opts.tls ? tls.connect({ host, port, ...this.#opts.tls }) : net.connect({ host, port });
      this.#socket = s;
      let done = false;
      const finish = (e?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(this.#timer);
        s.destroy();
        if (e) reject(e);
        else resolve();
      };
      this.#fail = (e) => finish(e);
      this.#arm(this.#opts.handshakeTimeoutMs ?? 10_000, 'no server hello');
      s.once(this.#opts.tls ? 'secureConnect' : 'connect', () => {
        const compression = this.#opts.compression ?? true;
        this.#send({
          type: 'ClientHello',
          hostname: this.#opts.hostname,
          info: this.#opts.info,
          version: this.#opts.version,
          syncerType: this.#opts.syncerType ?? 'felix',
          supportsDecoderRestart: compression,
          supportedCompressionAlgorithms: compression ? ['snappy'] : [],
          supportsModernPolicyKeys: true,
          clientConnId: randomBytes(8).readBigUInt64BE(),
        });
      });
      s.on('data', (chunk: Buffer) => {
        try {
          this.#onData(chunk);
        } catch (e) {
          finish(
            e instanceof GobError || e instanceof TyphaConnectionError
              ? e
              : new TyphaConnectionError(`handling a message: ${(e as Error).message}`),
          );
        }
      });
      s.on('error', (e) => finish(new TyphaConnectionError(`connection to Typha ${this.#opts.address}: ${e.message}`)));
      s.on('close', () =>
        finish(
          this.#closing ? undefined : new TyphaConnectionError(`Typha ${this.#opts.address} closed the connection`),
        ),
      );
    });
    return this.#closed;
  }

  #closing = false;
  #fail: (e: Error) => void = () => {};

  /** Ends the connection; run() resolves. */
  close(): void {
    this.#closing = true;
    this.#socket?.end();
    this.#socket?.destroy();
  }

  #arm(ms: number, why: string): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => this.#fail(new TyphaConnectionError(`Typha ${this.#opts.address}: ${why} within ${ms} ms`)),
      ms,
    );
    this.#timer.unref();
  }

  #send(m: TyphaMessage): void {
    const s = this.#socket;
    if (!s) return;
    const ok = s.write(encodeMessage(this.#enc, m));
    // A peer that stops reading: give up after the write timeout, as Felix does.
    if (!ok) {
      const t = setTimeout(
        () =>
          this.#fail(
            new TyphaConnectionError(
              `Typha ${this.#opts.address}: a write took longer than ${this.#opts.writeTimeoutMs ?? 10_000} ms`,
            ),
          ),
        this.#opts.writeTimeoutMs ?? 10_000,
      );
      t.unref();
      s.once('drain', () => clearTimeout(t));
    }
  }

  #onData(chunk: Buffer): void {
    const bytes = this.#snappy ? this.#snappy.push(chunk) : chunk;
    const values = this.#dec.push(bytes);
    for (let i = 0; i < values.length; i++) {
      const m = toMessage(values[i]);
      if (m.type !== 'DecoderRestart') {
        this.#onMessage(m);
        continue;
      }
      // Typha sends nothing after a restart until our ACK: whatever is left was sent in the old format.
      if (i !== values.length - 1 || this.#dec.buffered || this.#snappy?.buffered)
        throw new TyphaConnectionError('Typha sent data after a decoder restart, before our ACK');
      this.#restart(m.compressionAlgorithm);
    }
  }

  #restart(algorithm: string): void {
    if (!this.#helloDone) throw new TyphaConnectionError('Typha sent a decoder restart before its hello');
    if (!(this.#opts.compression ?? true))
      throw new TyphaConnectionError('Typha sent a decoder restart we did not offer');
    if (algorithm !== '' && algorithm !== 'snappy')
      throw new TyphaConnectionError(`Typha chose compression "${algorithm}", which we did not offer`);
    this.restarts++;
    this.#arm(this.#opts.readTimeoutMs ?? 30_000, 'nothing received');
    this.#dec = serverStreamDecoder();
    this.#snappy = algorithm === 'snappy' ? new SnappyFrameDecoder() : undefined;
    this.#send({ type: 'ACK' });
  }

  #onMessage(m: TyphaMessage): void {
    this.#arm(this.#opts.readTimeoutMs ?? 30_000, 'nothing received');
    if (!this.#helloDone) {
      if (m.type !== 'ServerHello') throw new TyphaConnectionError(`Typha sent ${m.type} before its hello`);
      if (!m.supportsNodeResourceUpdates)
        throw new TyphaConnectionError(`Typha ${m.version} does not support node resource updates (too old)`);
      if (m.syncerType && m.syncerType !== (this.#opts.syncerType ?? 'felix'))
        throw new TyphaConnectionError(
          `Typha serves syncer "${m.syncerType}", not "${this.#opts.syncerType ?? 'felix'}"`,
        );
      this.#helloDone = true;
      this.serverVersion = m.version;
      return;
    }
    switch (m.type) {
      case 'KVs':
        return this.#opts.onUpdates(m.kvs);
      case 'SyncStatus':
        return this.#opts.onStatus(m.status);
      case 'Ping':
        return this.#send({ type: 'Pong', pingTimestamp: m.timestamp, pongTimestamp: timeOfDate(new Date()) });
      default:
        // We never offered a decoder restart; nothing else is a server's to send.
        throw new TyphaConnectionError(`Typha sent an unexpected ${m.type}`);
    }
  }
}

// A server may define every type ahead of its hello (palisade typha sends 13 in one
// preamble), so more may come before the first value than a hello needs; the stream's
// budget still holds.
export function serverStreamDecoder(): GobDecoder {
  return new GobDecoder({ maxMessageBytes: 16 << 20, maxTypesBeforeValue: 32 });
}

function splitAddress(address: string): [string, number] {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(address);
  const port = Number(m?.[2]);
  if (!m || port < 1 || port > 65535) throw new TyphaConnectionError(`TyphaAddr "${address}" is not host:port`);
  return [m[1] as string, port];
}
