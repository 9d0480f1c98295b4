// The agent's small HTTP servers (health, metrics) face any local user and hostNetwork pod:
// a request they cannot parse is answered 400 and a handler that fails 500, and nothing a
// client sends can throw out of a handler and stop the agent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

import type { Logger } from '../log.js';

export interface Request {
  path: string;
  query: URLSearchParams;
}

/** The request's path and query, or undefined when its target is not a valid origin-form URL. */
export function parseTarget(req: IncomingMessage): Request | undefined {
  const target = req.url ?? '/';
  if (!target.startsWith('/')) return undefined;
  try {
    const u = new URL(target, 'http://localhost');
    return { path: u.pathname, query: u.searchParams };
  } catch {
    return undefined;
  }
}

/** TLS for a server, as Felix's metrics options: certificate, key, client CA and client-certificate policy. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer | undefined;
  clientAuth: 'NoClientCert' | 'VerifyClientCertIfGiven' | 'RequireAnyClientCert' | 'RequireAndVerifyClientCert';
}

/** Whether a TLS client passes the client-certificate policy (checked per request, as Go's tls does per handshake). */
function clientAllowed(req: IncomingMessage, tls: ServerTls): boolean {
  const sock = req.socket as TLSSocket;
  const peer = sock.getPeerCertificate?.();
  const has = !!peer && Object.keys(peer).length > 0;
  switch (tls.clientAuth) {
    case 'RequireAndVerifyClientCert':
      return has && sock.authorized;
    case 'RequireAnyClientCert':
      return has;
    case 'VerifyClientCertIfGiven':
      return !has || sock.authorized;
    default:
      return true;
  }
}

/** How long a connection may take to send a request's headers (and a TLS client its handshake). */
const HEADERS_DEADLINE_MS = 10_000;

/**
 * Node checks headersTimeout only every connectionsCheckingInterval, over a list that a
 * flood of short connections keeps it from reaching the old ones in: under 4,000 bad
 * connections a second, slowloris clients dripping a byte a second stayed for the whole
 * 40 s run, and 1,000 of them (maxConnections) would lock out the kubelet's probes. So
 * every connection carries its own deadline, armed when it opens and after each
 * response, cleared when a request's headers are complete.
 */
function headerDeadlines(): { arm: (sock: Socket) => void; clear: (sock: Socket) => void } {
  const timers = new WeakMap<Socket, NodeJS.Timeout>();
  const clear = (sock: Socket) => clearTimeout(timers.get(sock));
  const arm = (sock: Socket) => {
    clear(sock);
    const t = setTimeout(() => sock.destroy(), HEADERS_DEADLINE_MS);
    t.unref();
    timers.set(sock, t);
  };
  return { arm, clear };
}

/** An HTTP(S) server whose handler never throws to the process; clients' protocol errors get 400. */
export function guardedServer(
  name: string,
  log: Logger,
  handle: (req: Request, res: ServerResponse) => void | Promise<void>,
  tls?: ServerTls,
): Server {
  const deadline = headerDeadlines();
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    deadline.clear(req.socket);
    res.once('finish', () => deadline.arm(req.socket));
    if (tls && !clientAllowed(req, tls)) {
      res.writeHead(403).end();
      return;
    }
    const r = parseTarget(req);
    if (!r) {
      res.writeHead(400).end();
      return;
    }
    const fail = (e: unknown) => {
      log.warn({ server: name, error: (e as Error)?.message }, 'request handler failed');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    };
    try {
      const p = handle(r, res);
      if (p) p.catch(fail);
    } catch (e) {
      fail(e);
    }
  };
  const server: Server = tls
    ? createTlsServer(
        {
          cert: tls.cert,
          key: tls.key,
          ...(tls.ca ? { ca: tls.ca } : {}),
          requestCert: tls.clientAuth !== 'NoClientCert',
          rejectUnauthorized: false,
          handshakeTimeout: HEADERS_DEADLINE_MS,
        },
        onRequest,
      )
    : createServer(onRequest);
  // The socket requests arrive on: the TLS socket once its handshake is done.
  server.on(tls ? 'secureConnection' : 'connection', (sock: Socket) => {
    deadline.arm(sock);
    sock.once('close', () => deadline.clear(sock));
  });
  // Slow or idle clients are cut off, and their number is bounded, so a flood of them
  // (slowloris) holds neither memory nor file descriptors for long.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  server.maxConnections = 1_000;
  server.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  return server;
}
