// One Kubernetes resource type kept in step, as client-go's reflector and Calico's
// watchersyncer do it: list (paged, `limit`/`continue`, all at the first page's
// resourceVersion), then watch from that version with bookmarks. A watch that ends is
// resumed from the last version seen; an ERROR 410 (the version was compacted away) or a
// list that fails means a relist, after which objects that were known and are gone are
// reported deleted. Only each object's key and version are kept (to find the deleted
// ones), not the objects. A type the server does not have (404 on the list: its CRD is not
// installed, as ClusterNetworkPolicy on most clusters) counts as listed and empty, and is
// listed again after a long pause, as Calico's watcher cache does: a valid long-term
// state, not an error to hammer the server with.
//
// A server that stops answering must be noticed (issue 51 D4: one that vanished without a
// FIN or RST left the agent in sync on stale policy for minutes, and never asking the
// server that replaced it). So, as client-go: each watch asks the server to end it after
// a randomised 5-10 minutes (`timeoutSeconds`), its socket has TCP keepalive, and a watch
// that hears nothing, not even the bookmark the API server sends each minute, for
// `watchIdleMs` is presumed dead and replaced on a new connection. Until a request is
// answered again, `lostContact` says since when and why (the agent's readiness reads it).
//
// Failures back off (issue 51 D5: a watch answering 410 at once had the agent relist 265
// times a second): every list or watch failure, a watch ERROR, an idle or a watch that ends
// within a second waits, from 800 ms doubling to 30 s as client-go's; a list that succeeds
// does not reset it, only a watch that lasted does.
//
// A 403 is the agent's account lacking a verb on the type (RBAC): no retry soon will fix it,
// so it is reported once, at error level, with what to grant, and asked again at the
// longest backoff; the type never counts as listed meanwhile (the syncer stays out of sync,
// so nothing is programmed from a partial picture). `forbidden` says so to the status.
import type { Logger } from '../../log.js';
import { KubeApiError, type KubeTransport, KubeUnansweredError, type WatchHandle } from './transport.js';

export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  [k: string]: unknown;
}

export interface ReflectorCallbacks {
  onUpsert(obj: KubeObject): void;
  onDelete(obj: KubeObject): void;
  /** The list is complete (once after each list, before the watch's events). */
  onListed(): void;
}

export interface ReflectorOptions {
  transport: KubeTransport;
  /** "/api/v1/pods", "/apis/networking.k8s.io/v1/networkpolicies" (all namespaces). */
  path: string;
  log: Logger;
  pageSize?: number;
  /** The wait after a failure, doubling from min to max (client-go: 800 ms to 30 s). */
  backoffMs?: { min: number; max: number };
  /** How long a watch must run to reset the backoff (client-go: 2 min without a failure). */
  backoffResetMs?: number;
  /** How long to wait before listing a type the server does not have again (upstream's MissingAPIRetryTime, 30 min). */
  missingApiRetryMs?: number;
  /** Each watch's timeoutSeconds is this, times 1 to 2 at random (client-go's minWatchTimeout, 5 min). */
  minWatchTimeoutS?: number;
  /** A watch that receives nothing for this long is presumed dead (the API server sends a bookmark each minute). */
  watchIdleMs?: number;
}

export interface LostContact {
  /** When the server last failed to answer, after answering before (epoch ms). */
  since: number;
  reason: string;
}

const MISSING_API_RETRY_MS = 30 * 60_000;
export const WATCH_IDLE_MS = 90_000;
/** A watch that ends sooner than this without an error counts as a failure (a server closing at once). */
const SHORTEST_WATCH_MS = 1000;

const keyOf = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export class Reflector {
  readonly #o: ReflectorOptions;
  readonly #cb: ReflectorCallbacks;
  /** key -> resourceVersion of what the callbacks hold. */
  readonly #known = new Map<string, string>();
  #rv = '';
  #stopped = false;
  #backoff: number;
  #timer: NodeJS.Timeout | undefined;
  #abort: (() => void) | undefined;
  #lost: LostContact | undefined;
  /** Lists done (the first, then relists), for tests and metrics. */
  lists = 0;
  watches = 0;
  /** The server answered 404 to the last list: the type is not installed. */
  missing = false;
  /** The server's 403 while this account may not list or watch the type (RBAC), else undefined. */
  forbidden: string | undefined;

  constructor(o: ReflectorOptions, cb: ReflectorCallbacks) {
    this.#o = o;
    this.#cb = cb;
    this.#backoff = this.#minBackoff;
  }

  get #minBackoff(): number {
    return this.#o.backoffMs?.min ?? 800;
  }

  get size(): number {
    return this.#known.size;
  }

  /** Since when, and why, the server has not answered (undefined while it does). */
  get lostContact(): LostContact | undefined {
    return this.#lost;
  }

  start(): void {
    void this.#list();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#abort?.();
  }

  async #list(): Promise<void> {
    if (this.#stopped) return;
    try {
      const seen = new Set<string>();
      let cont = '';
      let rv = '';
      do {
        const q = new URLSearchParams({ limit: String(this.#o.pageSize ?? 500) });
        if (cont) q.set('continue', cont);
        const page = (await this.#o.transport.get(`${this.#o.path}?${q}`)) as {
          metadata?: { resourceVersion?: string; continue?: string };
          items?: KubeObject[];
        };
        this.#answered();
        this.#allowed();
        rv ||= page.metadata?.resourceVersion ?? '';
        for (const item of page.items ?? []) {
          const k = keyOf(item);
          seen.add(k);
          const v = item.metadata?.resourceVersion ?? '';
          if (this.#known.get(k) === v) continue;
          this.#known.set(k, v);
          this.#cb.onUpsert(item);
        }
        cont = page.metadata?.continue ?? '';
      } while (cont && !this.#stopped);
      if (this.#stopped) return;
      this.#listed(seen);
      this.missing = false;
      this.#rv = rv;
      void this.#watch();
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) {
        this.#answered();
        this.#notInstalled();
      } else if (e instanceof KubeApiError && e.status === 403) {
        this.#answered();
        this.#forbid('list', e, () => this.#list());
      } else {
        this.#unanswered(e as Error);
        this.#retry(`listing ${this.#o.path}`, e as Error, () => this.#list(), levelFor(e));
      }
    }
  }

  /** Ends a list: what was known and not seen is gone. */
  #listed(seen: ReadonlySet<string>): void {
    for (const k of [...this.#known.keys()]) {
      if (seen.has(k)) continue;
      this.#known.delete(k);
      const [namespace, name] = splitKey(k);
      this.#cb.onDelete({ metadata: { name, ...(namespace ? { namespace } : {}) } });
    }
    this.lists++;
    this.#cb.onListed();
  }

  #notInstalled(): void {
    // A 404 answering a list that was in flight when stop() came must not arm a new timer:
    // its 30 minutes kept a stopped syncer's process alive (a test hung on it, 1 run in 4).
    if (this.#stopped) return;
    const retryMs = this.#o.missingApiRetryMs ?? MISSING_API_RETRY_MS;
    if (!this.missing)
      this.#o.log.info(
        { path: this.#o.path, retryInMs: retryMs },
        'Kubernetes API: this resource type is not installed (404); treating it as empty and checking again later',
      );
    this.missing = true;
    this.#listed(new Set());
    this.#timer = setTimeout(() => void this.#list(), retryMs);
  }

  #watchQuery(): URLSearchParams {
    const min = this.#o.minWatchTimeoutS ?? 300;
    return new URLSearchParams({
      watch: 'true',
      resourceVersion: this.#rv,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(Math.floor(min * (1 + Math.random()))),
    });
  }

  async #watch(): Promise<void> {
    if (this.#stopped) return;
    this.watches++;
    let relist: { code?: number; message?: string } | undefined;
    const handle: WatchHandle = { onOpen: () => this.#answered() };
    this.#abort = () => handle.abort?.();
    const t0 = Date.now();
    try {
      await this.#o.transport.watch(
        `${this.#o.path}?${this.#watchQuery()}`,
        (event, abort) => {
          relist = this.#onEvent(event);
          if (relist) abort();
        },
        handle,
        { idleMs: this.#o.watchIdleMs ?? WATCH_IDLE_MS },
      );
      if (this.#stopped) return;
      const lasted = Date.now() - t0;
      if (lasted >= (this.#o.backoffResetMs ?? 120_000)) this.#backoff = this.#minBackoff;
      if (relist) {
        // 410: our version was compacted away; anything else is retried the same way.
        const error = new Error(`watch error ${relist.code ?? ''}: ${relist.message ?? ''}`);
        this.#retry(`watching ${this.#o.path}`, error, () => this.#list(), 'info');
      } else if (lasted < SHORTEST_WATCH_MS) {
        this.#retry(`watching ${this.#o.path}`, new Error(`the watch ended after ${lasted} ms`), () => this.#watch());
      } else {
        // The watch ended (its timeout, or a server restart): resume from where it was.
        void this.#watch();
      }
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 403) return this.#forbid('watch', e, () => this.#list());
      this.#unanswered(e as Error);
      // A 404 here: the type went away (its CRD deleted) since the list; the list finds out.
      // A 410 as the answer's status (rather than a watch ERROR event): the version is too old.
      const gone = e instanceof KubeApiError && (e.status === 404 || e.status === 410);
      this.#retry(`watching ${this.#o.path}`, e as Error, () => (gone ? this.#list() : this.#watch()), levelFor(e));
    }
  }

  /** Takes one watch event; returns the ERROR's status when the watch must end in a relist. */
  #onEvent(event: unknown): { code?: number; message?: string } | undefined {
    const e = event as { type?: string; object?: KubeObject & { code?: number; message?: string } };
    const obj = e.object ?? {};
    switch (e.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.#known.set(keyOf(obj), obj.metadata?.resourceVersion ?? '');
        this.#cb.onUpsert(obj);
        break;
      case 'DELETED':
        if (this.#known.delete(keyOf(obj))) this.#cb.onDelete(obj);
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR':
        return { ...(obj.code !== undefined ? { code: obj.code } : {}), message: obj.message ?? '' };
      default:
        throw new Error(`unknown watch event type ${String(e.type)}`);
    }
    if (obj.metadata?.resourceVersion) this.#rv = obj.metadata.resourceVersion;
    return undefined;
  }

  /** A 403: reported once (until allowed again), asked again only at the longest backoff. */
  #forbid(verb: 'list' | 'watch', e: KubeApiError, again: () => Promise<void>): void {
    if (this.#stopped) return;
    const retryInMs = this.#o.backoffMs?.max ?? 30_000;
    if (this.forbidden === undefined)
      this.#o.log.error(
        { path: this.#o.path, verb, error: e.message, retryInMs },
        `Kubernetes API: forbidden to ${verb} ${this.#o.path}: this agent's account needs get, list and watch on it ` +
          '(the ClusterRole in deploy/daemonset.yaml); not in sync until it has them, asking again periodically',
      );
    this.forbidden = `${verb} ${this.#o.path}: ${e.message}`;
    this.#timer = setTimeout(() => void again(), retryInMs);
  }

  #allowed(): void {
    if (this.forbidden === undefined) return;
    this.#o.log.info({ path: this.#o.path }, 'Kubernetes API: allowed now');
    this.forbidden = undefined;
  }

  #answered(): void {
    if (!this.#lost) return;
    this.#o.log.info(
      { path: this.#o.path, lostForMs: Date.now() - this.#lost.since },
      'Kubernetes API: answering again',
    );
    this.#lost = undefined;
  }

  #unanswered(e: Error): void {
    // A server that answers, if only with an error or garbage, is not lost.
    if (e instanceof KubeApiError && !(e instanceof KubeUnansweredError)) return;
    this.#lost ??= { since: Date.now(), reason: e.message };
  }

  #retry(what: string, e: Error, again: () => Promise<void>, level: 'info' | 'warn' = 'warn'): void {
    if (this.#stopped) return;
    this.#o.log[level](
      { path: this.#o.path, error: e.message, retryInMs: this.#backoff },
      `Kubernetes API: ${what} failed; retrying`,
    );
    this.#timer = setTimeout(() => void again(), this.#backoff);
    this.#backoff = Math.min(this.#backoff * 2, this.#o.backoffMs?.max ?? 30_000);
  }
}

/**
 * A 429 is the server asking to be asked later (its watch cache for the type still filling,
 * as after a CRD is created or the server restarts; or priority and fairness shedding load):
 * backed off like any failure, but not a warning (client-go logs it at V(2)).
 */
function levelFor(e: unknown): 'info' | 'warn' {
  return e instanceof KubeApiError && e.status === 429 ? 'info' : 'warn';
}

function splitKey(k: string): [string, string] {
  const i = k.indexOf('/');
  return [k.slice(0, i), k.slice(i + 1)];
}
