// One Kubernetes resource type kept in step, as client-go's reflector and Calico's
// watchersyncer do it: list (paged, `limit`/`continue`, all at the first page's
// resourceVersion), then watch from that version with bookmarks. A watch that ends is
// resumed from the last version seen; an ERROR 410 (the version was compacted away) or a
// list that fails means a relist, after which objects that were known and are gone are
// reported deleted. Errors back off, doubling to a cap. Only each object's key and
// version are kept (to find the deleted ones), not the objects. A type the server does not
// have (404 on the list: its CRD is not installed, as ClusterNetworkPolicy on most
// clusters) counts as listed and empty, and is listed again after a long pause, as Calico's
// watcher cache does: a valid long-term state, not an error to hammer the server with.
import type { Logger } from '../../log.js';
import { KubeApiError, type KubeTransport } from './transport.js';

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
  backoffMs?: { min: number; max: number };
  /** How long to wait before listing a type the server does not have again (upstream's MissingAPIRetryTime, 30 min). */
  missingApiRetryMs?: number;
}

const MISSING_API_RETRY_MS = 30 * 60_000;

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
  /** Lists done (the first, then relists), for tests and metrics. */
  lists = 0;
  watches = 0;
  /** The server answered 404 to the last list: the type is not installed. */
  missing = false;

  constructor(o: ReflectorOptions, cb: ReflectorCallbacks) {
    this.#o = o;
    this.#cb = cb;
    this.#backoff = o.backoffMs?.min ?? 200;
  }

  get size(): number {
    return this.#known.size;
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
      if (e instanceof KubeApiError && e.status === 404) this.#notInstalled();
      else this.#retry(`listing ${this.#o.path}`, e as Error, () => this.#list());
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
    this.#backoff = this.#o.backoffMs?.min ?? 200;
    this.#cb.onListed();
  }

  #notInstalled(): void {
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

  async #watch(): Promise<void> {
    if (this.#stopped) return;
    this.watches++;
    const q = new URLSearchParams({ watch: 'true', resourceVersion: this.#rv, allowWatchBookmarks: 'true' });
    let relist = false;
    const handle: { abort?: () => void } = {};
    this.#abort = () => handle.abort?.();
    try {
      await this.#o.transport.watch(
        `${this.#o.path}?${q}`,
        (event, abort) => {
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
              // 410: our version was compacted away; anything else is retried the same way.
              relist = true;
              this.#o.log.info(
                { path: this.#o.path, code: obj.code, message: obj.message },
                'Kubernetes watch error; relisting',
              );
              abort();
              return;
            default:
              throw new Error(`unknown watch event type ${String(e.type)}`);
          }
          if (obj.metadata?.resourceVersion) this.#rv = obj.metadata.resourceVersion;
        },
        handle,
      );
      this.#backoff = this.#o.backoffMs?.min ?? 200;
      if (this.#stopped) return;
      // The watch ended (a server timeout or restart): resume from where it was.
      if (relist) void this.#list();
      else void this.#watch();
    } catch (e) {
      // A 404 here: the type went away (its CRD deleted) since the list; the list finds out.
      const gone = e instanceof KubeApiError && e.status === 404;
      this.#retry(`watching ${this.#o.path}`, e as Error, () => (relist || gone ? this.#list() : this.#watch()));
    }
  }

  #retry(what: string, e: Error, again: () => Promise<void>): void {
    if (this.#stopped) return;
    this.#o.log.warn(
      { path: this.#o.path, error: e.message, retryInMs: this.#backoff },
      `Kubernetes API: ${what} failed; retrying`,
    );
    this.#timer = setTimeout(() => void again(), this.#backoff);
    this.#backoff = Math.min(this.#backoff * 2, this.#o.backoffMs?.max ?? 30_000);
  }
}

function splitKey(k: string): [string, string] {
  const i = k.indexOf('/');
  return [k.slice(0, i), k.slice(i + 1)];
}
