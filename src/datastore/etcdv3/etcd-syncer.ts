// The etcd v3 datastore, as Felix's watchersyncer over Calico's key layout: list the
// prefix at a revision, deliver it, report in-sync, then watch from the next revision.
// When the watch is lost (etcd down, network cut, a compacted revision) the state is
// kept, and a resync begins: re-list with backoff, deliver what changed and the deletes
// of what vanished, then watch again from the new revision. Known keys are remembered by
// modification revision only, so a resync costs no second copy of the data.
// Two prefixes are read, at one revision: the v3 resources, and the IPAM blocks
// (`/calico/ipam/v2/assignment/`, libcalico-go's v1 layout), which go on as IPAMBlock
// resources so every datastore hands the same kinds to the update processors.
import type { Logger } from '../../log.js';
import { affinityName } from '../../model/bgp.js';
import { blockName } from '../../model/ipam.js';
import { DEFAULT_ALLOW_KEY, defaultAllowProfileUpdate } from '../default-allow.js';
import { KEY_PREFIX } from '../keys.js';
import type { Syncer, SyncerCallbacks, SyncStatus, Update } from '../types.js';
import type { EtcdClient, WatchEvent, WatchHandle } from './client.js';

export interface EtcdSyncerOptions {
  client: EtcdClient;
  log: Logger;
  /** The key prefixes read (default: the v3 resources and the IPAM blocks). */
  prefixes?: string[];
  /** First and largest retry delay. */
  backoffMs?: { min: number; max: number };
  /** Test hook: runs after a list and before the watch on it is created. */
  afterList?: (revision: string) => Promise<void>;
}

export const IPAM_BLOCK_PREFIX = '/calico/ipam/v2/assignment/';
/** Block affinities, which only `palisade bgp` reads (as confd's BGP syncer). */
export const IPAM_AFFINITY_PREFIX = '/calico/ipam/v2/host/';
const BLOCK_KEY = /^\/calico\/ipam\/v2\/assignment\/ipv[46]\/block\/([^/]+)$/;
const AFFINITY_KEY = /^\/calico\/ipam\/v2\/host\/([^/]+)\/ipv[46]\/block\/([^/]+)$/;

const cidrOfKeyPart = (part: string) =>
  `${part.slice(0, part.lastIndexOf('-'))}/${part.slice(part.lastIndexOf('-') + 1)}`;

/**
 * The resource an etcd key goes on as: itself; an IPAM block as its IPAMBlock; an
 * affinity as its BlockAffinity (node and CIDR from the key). Undefined for other keys.
 */
function resourceOf(key: string): { key: string; wrap?: (v: unknown) => unknown } | undefined {
  if (key.startsWith(KEY_PREFIX)) return { key };
  const b = BLOCK_KEY.exec(key);
  if (b) {
    const name = blockName(cidrOfKeyPart(b[1] as string));
    return {
      key: `${KEY_PREFIX}ipamblocks/${name}`,
      wrap: (v) => ({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMBlock', metadata: { name }, spec: v }),
    };
  }
  const a = AFFINITY_KEY.exec(key);
  if (a) {
    const node = a[1] as string;
    const cidr = cidrOfKeyPart(a[2] as string);
    const name = affinityName(node, cidr);
    const wrap = (v: unknown) => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BlockAffinity',
      metadata: { name },
      spec: { ...(v as object), node, cidr },
    });
    return { key: `${KEY_PREFIX}blockaffinities/${name}`, wrap };
  }
  return undefined;
}

// A key's stored text as an Update; undecodable JSON goes on with the reason, and the
// validation filter drops it. A block's JSON becomes the spec of its IPAMBlock resource.
function updateOf(key: string, text: string, revision: string): Update | undefined {
  const r = resourceOf(key);
  if (!r) return undefined;
  const rkey = r.key;
  try {
    const v = JSON.parse(text) as unknown;
    const value = r.wrap ? r.wrap(v) : v;
    return { key: rkey, value, revision, source: `etcd ${key}` };
  } catch (e) {
    return {
      key: rkey,
      value: null,
      revision,
      source: `etcd ${key}`,
      decodeError: `value is not JSON: ${(e as Error).message}`,
    };
  }
}

function deletionOf(key: string, revision: string): Update | undefined {
  const r = resourceOf(key);
  return r ? { key: r.key, value: null, revision } : undefined;
}

/** The revision #known holds for the synthesized default-allow profile (it never changes). */
const SYNTHESIZED = 'synthesized';

export class EtcdSyncer implements Syncer {
  readonly #client: EtcdClient;
  readonly #log: Logger;
  readonly #prefixes: string[];
  readonly #backoff: { min: number; max: number };
  readonly #afterList: ((revision: string) => Promise<void>) | undefined;
  /** key -> mod revision of what was delivered. */
  readonly #known = new Map<string, string>();
  #cb: SyncerCallbacks | undefined;
  #watches: WatchHandle[] = [];
  #status: SyncStatus | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #generation = 0;
  #resyncs = 0;

  constructor(opts: EtcdSyncerOptions) {
    this.#client = opts.client;
    this.#log = opts.log.child({ datastore: 'etcdv3' });
    this.#prefixes = opts.prefixes ?? [KEY_PREFIX, IPAM_BLOCK_PREFIX];
    this.#backoff = opts.backoffMs ?? { min: 100, max: 2000 };
    this.#afterList = opts.afterList;
  }

  /** Completed resyncs after the first list (for tests and metrics). */
  get resyncs(): number {
    return this.#resyncs;
  }

  start(callbacks: SyncerCallbacks): void {
    this.#cb = callbacks;
    this.#setStatus('wait-for-datastore');
    this.#running = this.#syncLoop();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#generation++;
    const watches = this.#watches;
    this.#watches = [];
    this.#wake?.();
    await Promise.all(watches.map((w) => w.cancel()));
    await this.#running;
    this.#client.close();
  }

  #setStatus(s: SyncStatus): void {
    if (this.#status === s) return;
    this.#status = s;
    this.#cb?.onStatusUpdated(s);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  // One list-then-watch cycle per iteration; the loop parks while the watch is healthy.
  async #syncLoop(): Promise<void> {
    let delay = this.#backoff.min;
    let first = true;
    let failures = 0;
    while (!this.#stopped) {
      let revision: string;
      try {
        const t0 = Date.now();
        const listed = await this.#listAll();
        if (this.#stopped) return;
        if (failures > 1) this.#log.info({ failures }, 'the datastore is reachable again');
        failures = 0;
        this.#setStatus('resync-in-progress');
        const changes = this.#applyList(listed.kvs, listed.revision);
        revision = listed.revision;
        this.#log.info(
          { revision, keys: listed.kvs.length, changes, ms: Date.now() - t0 },
          first ? 'listed the datastore' : 'resynced the datastore',
        );
        if (!first) this.#resyncs++;
        await this.#afterList?.(revision);
        if (this.#stopped) return;
      } catch (e) {
        if (this.#stopped) return;
        // The first failure of a run is a warning; the retries after it are debug.
        failures++;
        const msg = (e as Error).message;
        if (failures === 1) this.#log.warn({ error: msg }, 'cannot list the datastore; retrying with backoff');
        else this.#log.debug({ error: msg, failures, retryInMs: delay }, 'cannot list the datastore; retrying');
        this.#setStatus('wait-for-datastore');
        // A new connection for the retry: the old one may be waiting on a server that is gone.
        this.#client.reconnect?.();
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.#backoff.max);
        continue;
      }
      const lost = await this.#watchFrom(revision);
      if (this.#stopped) return;
      if (lost === 'watch-failed') {
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.#backoff.max);
      } else {
        delay = this.#backoff.min;
      }
      first = false;
    }
  }

  // Every prefix at the first one's revision: one consistent snapshot.
  async #listAll(): Promise<{ revision: string; kvs: Array<{ key: string; value: string; modRevision: string }> }> {
    const [first, ...rest] = this.#prefixes;
    const listed = await this.#client.list(first as string);
    // A loop, not a spread: a prefix of a big cluster holds more keys than V8 takes arguments.
    for (const prefix of rest)
      for (const kv of (await this.#client.list(prefix, undefined, listed.revision)).kvs) listed.kvs.push(kv);
    return listed;
  }

  // Delivers the difference between the listing and what was delivered before.
  #applyList(kvs: Array<{ key: string; value: string; modRevision: string }>, revision: string): number {
    const updates: Update[] = [];
    const seen = new Set<string>();
    if (this.#prefixes.includes(KEY_PREFIX)) {
      seen.add(DEFAULT_ALLOW_KEY);
      if (!this.#known.has(DEFAULT_ALLOW_KEY)) {
        this.#known.set(DEFAULT_ALLOW_KEY, SYNTHESIZED);
        updates.push(defaultAllowProfileUpdate());
      }
    }
    for (const kv of kvs) {
      if (kv.key === DEFAULT_ALLOW_KEY) continue;
      seen.add(kv.key);
      if (this.#known.get(kv.key) === kv.modRevision) continue;
      const u = updateOf(kv.key, kv.value, kv.modRevision);
      if (!u) continue;
      this.#known.set(kv.key, kv.modRevision);
      updates.push(u);
    }
    for (const key of [...this.#known.keys()]) {
      if (seen.has(key)) continue;
      this.#known.delete(key);
      const u = deletionOf(key, revision);
      if (u) updates.push(u);
    }
    if (updates.length) this.#cb?.onUpdates(updates);
    this.#setStatus('in-sync');
    return updates.length;
  }

  // Watches every prefix until a watch is lost; resolves with why.
  #watchFrom(revision: string): Promise<'lost' | 'watch-failed'> {
    const generation = ++this.#generation;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (why: 'lost' | 'watch-failed') => {
        if (settled) return;
        settled = true;
        this.#wake = undefined;
        const watches = this.#watches;
        this.#watches = [];
        for (const w of watches) void w.cancel().catch(() => {});
        resolve(why);
      };
      this.#wake = () => finish('lost');
      const next = (BigInt(revision) + 1n).toString();
      for (const prefix of this.#prefixes) {
        this.#client
          .watch(prefix, next, {
            onEvents: (events) => {
              if (generation === this.#generation && !settled) this.#onEvents(events);
            },
            onLost: (err, compacted) => {
              if (generation !== this.#generation) return;
              this.#log.warn(
                { error: err.message, compacted, prefix },
                compacted ? 'watch revision compacted; full resync' : 'lost the datastore watch; resyncing',
              );
              finish('lost');
            },
          })
          .then((handle) => {
            if (settled || this.#stopped) void handle.cancel();
            else this.#watches.push(handle);
          })
          .catch((e: unknown) => {
            this.#log.warn({ error: (e as Error).message, prefix }, 'cannot watch the datastore; resyncing');
            finish('watch-failed');
          });
      }
    });
  }

  #onEvents(events: WatchEvent[]): void {
    const updates: Update[] = [];
    for (const ev of events) {
      if (ev.key === DEFAULT_ALLOW_KEY) continue;
      if (ev.type === 'delete') {
        if (!this.#known.delete(ev.key)) continue;
        const u = deletionOf(ev.key, ev.modRevision);
        if (u) updates.push(u);
      } else {
        const u = updateOf(ev.key, ev.value ?? '', ev.modRevision);
        if (!u) continue;
        this.#known.set(ev.key, ev.modRevision);
        updates.push(u);
      }
    }
    if (updates.length) this.#cb?.onUpdates(updates);
  }
}
