// `palisade typha`'s listener, as Typha's syncserver.Server: accepts clients (TCP, or TLS
// with client certificates checked against CAFile and ClientCN / ClientURISAN), runs a
// ServerConnection for each, and governs their number: while over the limit, one random
// connection is dropped per (jittered) drop interval, so the cluster's nodes move to
// other Typhas a few at a time. A graceful shutdown closes the listener and drops the
// connections one by one over ShutdownTimeout (at most one per
// ShutdownConnectionDropIntervalMaxSecs), so the nodes do not all reconnect at once.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

import type { Logger } from '../../log.js';
import { certMatches } from '../tls.js';
import { type LegacyLayout, ServerConnection, type ServerTimers } from './connection.js';
import type { TyphaMetrics } from './metrics.js';
import type { SnapshotCache } from './snapshot-cache.js';

export interface TyphaServerTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  clientCN: string;
  clientURISAN: string;
}

export interface TyphaServerOptions {
  cache: SnapshotCache;
  legacy?: LegacyLayout | undefined;
  log: Logger;
  version: string;
  host: string;
  /** 0: any free port (tests). */
  port: number;
  tls?: TyphaServerTls | undefined;
  timers: ServerTimers;
  maxMessageKvs: number;
  maxInboundBytes: number;
  maxConns: number;
  dropIntervalMs: number;
  shutdownTimeoutMs: number;
  shutdownMaxDropIntervalMs: number;
  metrics?: TyphaMetrics | undefined;
}

/** Why a client certificate is refused, or undefined. */
export function clientCertProblem(cert: tls.PeerCertificate, cn: string, uriSan: string): string | undefined {
  if ((!cn && !uriSan) || certMatches(cert, cn, uriSan)) return undefined;
  return `the client certificate has neither ${[cn && `CN ${cn}`, uriSan && `URI SAN ${uriSan}`].filter(Boolean).join(' nor ')}`;
}

export class TyphaServer {
  readonly #o: TyphaServerOptions;
  readonly #conns = new Map<bigint, ServerConnection>();
  #server: net.Server | undefined;
  #nextId = 1n;
  #maxConns: number;
  #governor: NodeJS.Timeout | undefined;
  #shuttingDown = false;

  constructor(o: TyphaServerOptions) {
    this.#o = o;
    this.#maxConns = o.maxConns;
  }

  get connections(): number {
    return this.#conns.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Opens the listen socket; resolves with the port. */
  listen(): Promise<number> {
    const o = this.#o;
    const server = o.tls
      ? tls.createServer({
          cert: readFileSync(o.tls.certFile),
          key: readFileSync(o.tls.keyFile),
          ca: readFileSync(o.tls.caFile),
          requestCert: true,
          rejectUnauthorized: true,
          minVersion: 'TLSv1.2',
        })
      : net.createServer();
    server.on(o.tls ? 'secureConnection' : 'connection', (s: net.Socket) => this.#accept(s));
    server.on('tlsClientError', (e: Error) =>
      o.log.warn({ error: e.message }, 'Typha: TLS handshake with a client failed'),
    );
    this.#server = server;
    this.#governor = setInterval(() => this.#govern(), o.dropIntervalMs * (0.9 + Math.random() * 0.2));
    this.#governor.unref();
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, o.host || undefined, () => {
        const port = (server.address() as net.AddressInfo).port;
        o.log.info({ host: o.host, port, tls: !!o.tls }, 'Typha listening');
        resolve(port);
      });
    });
  }

  /** A new limit (Typha's rebalancing sets it as the cluster changes). */
  setMaxConns(n: number): void {
    this.#maxConns = n;
  }

  /** Drops one connection at random; false when there is none. */
  dropRandomConnection(reason: string): boolean {
    const all = [...this.#conns.values()];
    const c = all[Math.floor(Math.random() * all.length)];
    if (!c) return false;
    this.#o.metrics?.connectionsDropped.inc();
    c.close(reason);
    return true;
  }

  /** Stops accepting and drops the connections gradually; resolves when none is left. */
  async shutDownGracefully(): Promise<void> {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    clearInterval(this.#governor);
    this.#server?.close();
    const n = this.#conns.size;
    if (!n) return;
    const interval = Math.min((this.#o.shutdownTimeoutMs * 0.95) / n, this.#o.shutdownMaxDropIntervalMs);
    this.#o.log.info(
      { connections: n, dropIntervalMs: Math.round(interval) },
      'Typha shutting down: dropping connections gradually',
    );
    while (this.#conns.size) {
      await new Promise((r) => setTimeout(r, interval * (0.95 + Math.random() * 0.1)));
      this.dropRandomConnection('graceful shutdown in progress');
    }
  }

  /** Closes everything now. */
  close(): void {
    this.#shuttingDown = true;
    clearInterval(this.#governor);
    this.#server?.close();
    for (const c of this.#conns.values()) c.close('server stopped');
  }

  #accept(socket: net.Socket): void {
    const o = this.#o;
    if (this.#shuttingDown) {
      socket.destroy();
      return;
    }
    if (o.tls) {
      const problem = clientCertProblem(
        (socket as tls.TLSSocket).getPeerCertificate(),
        o.tls.clientCN,
        o.tls.clientURISAN,
      );
      if (problem) {
        o.log.warn({ remote: socket.remoteAddress }, `Typha: refusing a client: ${problem}`);
        socket.destroy();
        return;
      }
    }
    const c = new ServerConnection({
      id: this.#nextId++,
      socket,
      cache: o.cache,
      legacy: o.legacy,
      log: o.log,
      version: o.version,
      timers: o.timers,
      maxMessageKvs: o.maxMessageKvs,
      maxInboundBytes: o.maxInboundBytes,
      metrics: o.metrics,
    });
    this.#conns.set(c.id, c);
    o.metrics?.connectionsAccepted.inc();
    o.metrics?.connectionsActive.set(this.#conns.size);
    void c.finished.then(() => {
      this.#conns.delete(c.id);
      o.metrics?.connectionsActive.set(this.#conns.size);
    });
    c.start();
  }

  #govern(): void {
    if (this.#conns.size > this.#maxConns) {
      this.#o.log.info({ max: this.#maxConns, current: this.#conns.size }, 'Typha: over the connection limit');
      this.dropRandomConnection('re-balance load with other Typha instances');
    }
  }
}
