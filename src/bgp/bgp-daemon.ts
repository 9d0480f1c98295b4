// `palisade bgp`: calico-node's confd and BIRD supervision in one process. The datastore
// (as confd's BGP syncer reads it) -> validation -> BgpState; once in sync, and after each
// burst of changes, the configuration is rendered, written only when it changed, checked
// by BIRD and loaded with `birdc configure` (BIRD is started with the first one). Every
// input that cannot be honoured is reported once. BGP session states are polled and their
// changes logged; they are the health (`/readiness`: every BGP session Established).
import { createServer, type Server } from 'node:http';

import { ValidationFilter } from '../datastore/validation-filter.js';
import type { Syncer } from '../datastore/types.js';
import type { Logger } from '../log.js';
import { BgpState } from './bgp-state.js';
import { type BirdFiles, renderBird } from './bird-config.js';
import { BirdError, type BirdSupervisor, type ProtocolState } from './bird.js';

export interface BgpDaemonOptions {
  hostname: string;
  syncer: Syncer;
  /** Writes the files and runs BIRD; undefined: render only (`--once`). */
  bird: BirdSupervisor | undefined;
  /** false: write the files but never start BIRD (`--no-bird`). */
  runBird?: boolean;
  log: Logger;
  routerId?: string | undefined;
  /** Called with each rendering (undefined files: nothing could be rendered, see problems). */
  onRendered?: ((files: BirdFiles | undefined, problems: readonly string[]) => void) | undefined;
  healthPort?: number | undefined;
  healthHost?: string | undefined;
  coalesceMs?: number;
  pollMs?: number;
}

export class BgpDaemon {
  readonly state: BgpState;
  readonly #o: BgpDaemonOptions;
  readonly #reported = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #poll: NodeJS.Timeout | undefined;
  #rendering: Promise<void> | undefined;
  #again = false;
  #protocols = new Map<string, string>();
  #configured = false;
  #server: Server | undefined;
  #stopped = false;

  constructor(o: BgpDaemonOptions) {
    this.#o = o;
    this.state = new BgpState(o.hostname, () => this.#schedule());
  }

  async start(): Promise<void> {
    this.#o.syncer.start(new ValidationFilter(this.state, this.#o.log));
    if (this.#o.bird && this.#o.runBird !== false)
      this.#poll = setInterval(() => void this.#pollProtocols(), this.#o.pollMs ?? 5000);
    if (this.#o.healthPort !== undefined)
      await this.#serveHealth(this.#o.healthPort, this.#o.healthHost ?? 'localhost');
  }

  /** BGP sessions and their states, as last polled. */
  get sessions(): ReadonlyMap<string, string> {
    return this.#protocols;
  }

  /** calico-node's -bird-ready: BIRD configured and every BGP session Established. */
  get ready(): boolean {
    if (!this.#configured) return false;
    if (!this.#o.bird || this.#o.runBird === false) return true;
    return this.#o.bird.running && [...this.#protocols.values()].every((s) => s === 'Established');
  }

  #schedule(): void {
    if (this.state.status !== 'in-sync' || this.#stopped) return;
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#render();
    }, this.#o.coalesceMs ?? 100);
  }

  // One render at a time; a change during one renders again after it.
  async #render(): Promise<void> {
    if (this.#rendering) {
      this.#again = true;
      return;
    }
    this.#rendering = this.#renderOnce().catch((e: unknown) =>
      this.#o.log.error({ error: (e as Error).message }, 'BGP configuration failed'),
    );
    await this.#rendering;
    this.#rendering = undefined;
    if (this.#again) {
      this.#again = false;
      await this.#render();
    }
  }

  async #renderOnce(): Promise<void> {
    const { files, problems } = renderBird(this.state, this.#o.hostname, { routerId: this.#o.routerId });
    for (const p of problems) this.#reportOnce(p);
    this.#o.onRendered?.(files, problems);
    if (!files) return;
    const bird = this.#o.bird;
    if (!bird) {
      this.#configured = true;
      return;
    }
    let changed: boolean;
    try {
      changed = await bird.writeConfig(files);
    } catch (e) {
      if (!(e instanceof BirdError)) throw e;
      this.#o.log.error(
        { code: e.code, error: e.message },
        'new BIRD configuration refused; BIRD keeps the previous one',
      );
      return;
    }
    if (this.#o.runBird === false) {
      if (changed) this.#o.log.info({}, 'BIRD configuration written');
    } else if (!bird.running) {
      bird.start();
    } else if (changed) {
      const t0 = Date.now();
      await bird.configure();
      this.#o.log.info({ ms: Date.now() - t0 }, 'BIRD reconfigured');
    }
    this.#configured = true;
  }

  #reportOnce(problem: string): void {
    if (this.#reported.has(problem)) return;
    this.#reported.add(problem);
    this.#o.log.warn({ component: 'bgp' }, problem);
  }

  async #pollProtocols(): Promise<void> {
    const bird = this.#o.bird;
    if (!bird?.running) return;
    let rows: ProtocolState[];
    try {
      rows = await bird.protocols();
    } catch (e) {
      this.#o.log.debug({ error: (e as Error).message }, 'BIRD not answering yet');
      return;
    }
    const now = new Map(rows.filter((r) => r.proto === 'BGP').map((r) => [r.name, r.info.split(/\s+/)[0] || r.state]));
    for (const [name, s] of now)
      if (this.#protocols.get(name) !== s) this.#o.log.info({ peer: name, state: s }, `BGP session ${name}: ${s}`);
    for (const name of this.#protocols.keys())
      if (!now.has(name)) this.#o.log.info({ peer: name }, `BGP session ${name} removed`);
    this.#protocols = now;
  }

  async #serveHealth(port: number, host: string): Promise<void> {
    this.#server = createServer((req, res) => {
      const live = !this.#o.bird || this.#o.bird.running || !this.#configured;
      const ok = req.url === '/liveness' ? live : req.url === '/readiness' ? this.ready : undefined;
      if (ok === undefined) {
        res.writeHead(404).end();
        return;
      }
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ok, sessions: Object.fromEntries(this.#protocols) }));
    });
    await new Promise<void>((resolve, reject) => {
      this.#server?.once('error', reject);
      this.#server?.listen(port, host, () => resolve());
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#poll) clearInterval(this.#poll);
    await this.#rendering;
    await this.#o.syncer.stop();
    await this.#o.bird?.stop();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}
