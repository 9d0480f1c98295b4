// Felix's health model: components (calc graph, dataplane) report liveness and readiness
// with a timeout; the agent is live while every live-reporter reported in time and said
// live, ready likewise. Served on HealthHost:HealthPort as /liveness and /readiness:
// 204 good, 503 bad (Felix's codes; Kubernetes reads any 2xx as good), and with
// ?detail=true a JSON breakdown.
import type { Server } from 'node:http';

import type { Logger } from '../log.js';
import { guardedServer } from './http.js';

interface Reporter {
  name: string;
  timeoutMs: number;
  reportsLive: boolean;
  reportsReady: boolean;
  live: boolean;
  ready: boolean;
  /** Why it is not ready (shown by ?detail=true). */
  reason?: string | undefined;
  /** Something worth knowing either way (the last failure), shown by ?detail=true. */
  note?: string | undefined;
  at: number;
}

export class HealthAggregator {
  readonly #reporters = new Map<string, Reporter>();
  #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  register(name: string, opts: { live: boolean; ready: boolean; timeoutMs: number }): void {
    this.#reporters.set(name, {
      name,
      timeoutMs: opts.timeoutMs,
      reportsLive: opts.live,
      reportsReady: opts.ready,
      live: false,
      ready: false,
      at: 0,
    });
  }

  report(
    name: string,
    status: { live?: boolean; ready?: boolean; reason?: string | undefined; note?: string | undefined },
  ): void {
    const r = this.#reporters.get(name);
    if (!r) throw new Error(`health: unknown reporter ${name}`);
    if (status.live !== undefined) r.live = status.live;
    if (status.ready !== undefined) {
      r.ready = status.ready;
      r.reason = status.ready ? undefined : status.reason;
    }
    if (status.note !== undefined) r.note = status.note;
    r.at = this.#now();
  }

  detail(): Array<{ name: string; live: boolean; ready: boolean; stale: boolean; reason?: string; note?: string }> {
    const now = this.#now();
    return [...this.#reporters.values()].map((r) => ({
      name: r.name,
      live: r.live,
      ready: r.ready,
      stale: r.timeoutMs > 0 && now - r.at > r.timeoutMs,
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.note ? { note: r.note } : {}),
    }));
  }

  live(): boolean {
    return this.detail().every((d) => !this.#reporters.get(d.name)?.reportsLive || (d.live && !d.stale));
  }

  ready(): boolean {
    return this.detail().every((d) => !this.#reporters.get(d.name)?.reportsReady || (d.ready && !d.stale));
  }
}

export function serveHealth(agg: HealthAggregator, host: string, port: number, log: Logger): Promise<Server> {
  const server = guardedServer('health', log, (req, res) => {
    const which = req.path === '/liveness' ? 'live' : req.path === '/readiness' ? 'ready' : undefined;
    if (!which) {
      res.writeHead(404).end();
      return;
    }
    const good = which === 'live' ? agg.live() : agg.ready();
    if (req.query.get('detail') === 'true') {
      res
        .writeHead(good ? 200 : 503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ [which]: good, reporters: agg.detail() })}\n`);
      return;
    }
    res.writeHead(good ? 204 : 503).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      log.info({ host, port }, 'health server listening');
      resolve(server);
    });
  });
}
