// This node's WireGuard public keys, published where Felix publishes them, so that every
// other node (Felix or palisade) can encrypt to it: etcd, the Node resource's
// status.wireguardPublicKey(V6), written compare-and-swap on its revision; Kubernetes,
// the Node's projectcalico.org/WireguardPublicKey(V6) annotation, a merge patch carrying
// the resourceVersion it read. Only that field changes; a conflict is read again and
// retried (three times, as Felix), any other failure retried every 2-4 s until it takes
// (the latest key wins; an older one is never written after it). A file datastore cannot
// be written: said once, and the node's pods get no encrypted traffic from others.
import type { WireguardKeyStore } from '../datastore/wireguard-keys.js';
import { errorMessage, type Logger } from '../log.js';

const CONFLICT_TRIES = 3;

export class WireguardKeyPublisher {
  readonly #makeStore: () => Promise<WireguardKeyStore | undefined>;
  #store: Promise<WireguardKeyStore | undefined> | undefined;
  #saidNoStore = false;
  readonly #log: Logger;
  readonly #retryMs: () => number;
  readonly #want = new Map<4 | 6, string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  /** Keys written (for status and tests). */
  readonly published = new Map<4 | 6, string>();

  /**
   * `store`: the datastore's, or what makes it (made again at the next try when it fails:
   * the Kubernetes API's credentials may not load at first); undefined for a datastore that
   * cannot be written (a directory of files).
   */
  constructor(
    store: (() => Promise<WireguardKeyStore | undefined>) | WireguardKeyStore | undefined,
    log: Logger,
    retryMs = () => 2000 + Math.random() * 2000,
  ) {
    this.#makeStore = typeof store === 'function' ? store : () => Promise.resolve(store);
    this.#log = log.child({ component: 'wireguard-status' });
    this.#retryMs = retryMs;
  }

  /** The dataplane's key for `family` ("" when it has none). */
  onKey(family: 4 | 6, key: string): void {
    this.#want.set(family, key);
    this.#kick();
  }

  #kick(): void {
    if (this.#running || this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#reconcile().finally(() => {
      this.#running = undefined;
      if (this.#want.size && !this.#stopped) this.#timer = setTimeout(() => this.#kick(), this.#retryMs());
    });
  }

  async #reconcile(): Promise<void> {
    this.#store ??= this.#makeStore();
    const store = await this.#store.catch((e: unknown) => {
      this.#store = undefined;
      this.#log.info(
        { err: errorMessage(e) },
        'Cannot reach the datastore to publish the WireGuard public key; retrying',
      );
      return null;
    });
    if (store === null) return;
    if (!store) {
      if ([...this.#want.values()].some(Boolean) && !this.#saidNoStore) {
        this.#saidNoStore = true;
        this.#log.warn(
          "this datastore cannot be written: this node's WireGuard public key is not published, so no node encrypts to it",
        );
      }
      this.#want.clear();
      return;
    }
    for (const [family, key] of [...this.#want]) {
      try {
        await this.#publish(store, family, key);
        // A newer key may have come while this one was written: that one stays wanted.
        if (this.#want.get(family) === key) this.#want.delete(family);
        this.published.set(family, key);
      } catch (e) {
        this.#log.info(
          { ipVersion: family, err: errorMessage(e) },
          'Failed to publish the WireGuard public key; retrying',
        );
      }
    }
  }

  async #publish(store: WireguardKeyStore, family: 4 | 6, key: string): Promise<void> {
    for (let i = 0; i < CONFLICT_TRIES; i++) {
      let cur: { key: string; token: unknown };
      try {
        cur = await store.read(family);
      } catch (e) {
        // As Felix: no Node and no key to publish is nothing to do.
        if (!key && (e as { code?: string }).code === 'ENONODE') return;
        throw e;
      }
      if (cur.key === key) return;
      if (await store.write(family, key, cur.token)) {
        this.#log.info({ ipVersion: family, publicKey: key, was: cur.key }, 'Published the WireGuard public key');
        return;
      }
    }
    throw new Error(`the Node changed under every one of ${CONFLICT_TRIES} writes`);
  }

  /** Resolves when nothing is left to publish (tests). */
  async settled(): Promise<void> {
    while (this.#running || this.#want.size) await new Promise((r) => setTimeout(r, 20));
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}
