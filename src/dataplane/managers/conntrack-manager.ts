// Felix's conntrack cleanup for workloads: when a local workload endpoint goes (or loses
// an address), the conntrack entries of its addresses are deleted, natively over ctnetlink,
// so a pod that reuses the IP does not inherit the old pod's flows (a reply to the old
// pod's connection would otherwise pass as established). Runs after each apply, comparing
// the addresses programmed then with those of the last apply.
import type { Logger } from '../../log.js';
import { conntrackFlush } from '../../native/conntrack.js';
import type { ToDataplane } from '../../proto/messages.js';
import { LocalEndpoints, type Manager } from './manager.js';

const bare = (cidr: string) => cidr.slice(0, cidr.indexOf('/') < 0 ? undefined : cidr.indexOf('/'));

export class ConntrackManager implements Manager {
  readonly name = 'conntrack';
  readonly #endpoints = new LocalEndpoints();
  readonly #log: Logger;
  readonly #flush: typeof conntrackFlush;
  #applied = new Set<string>();
  /** A local workload came, went or changed since the last apply (else nothing can be gone). */
  #changed = false;

  constructor(log: Logger, flush: typeof conntrackFlush = conntrackFlush) {
    this.#log = log;
    this.#flush = flush;
  }

  onUpdate(msg: ToDataplane): void {
    if (this.#endpoints.onUpdate(msg)) this.#changed = true;
  }

  /** After the rules are in: deletes the entries of addresses no local workload has any more. */
  async apply(): Promise<{ deleted: number }> {
    return { deleted: await this.#flushGone() };
  }

  async #flushGone(): Promise<number> {
    if (!this.#changed) return 0;
    this.#changed = false;
    const now = new Set<string>();
    for (const ep of this.#endpoints.values()) for (const n of [...ep.ipv4Nets, ...ep.ipv6Nets]) now.add(bare(n));
    const gone = [...this.#applied].filter((a) => !now.has(a));
    this.#applied = now;
    if (!gone.length) return 0;
    try {
      const r = await this.#flush(gone);
      this.#log.debug(
        { addresses: gone, deleted: r.deleted, scanned: r.scanned },
        'deleted the conntrack entries of removed workload addresses',
      );
      return r.deleted;
    } catch (e) {
      // Not fatal: the entries time out by themselves; Felix also only logs this.
      this.#log.warn(
        { addresses: gone, error: (e as Error).message },
        'could not delete the conntrack entries of removed workload addresses',
      );
      return 0;
    }
  }
}
