// Felix 3.32's proxy-ARP suppression for workloads (endpoint_mgr.go's ARP chains), in
// every rules mode: the table `arp calico-arp` (backends/nft/arp-table.ts) drops the ARP
// replies the host sends a workload claiming the workload's own IPv4 address. Releases
// before 3.32 have no such table, and a node that has one from a newer release loses it.
// The first apply reads the table back and sweeps what is not wanted (a node Felix
// programmed reads back as done); later ones write what changed since the last commit.
import type { Logger } from '../../log.js';
import { failuresOf, nftCommit, nftDump, type NftDump } from '../../native/nft.js';
import type { ToDataplane } from '../../proto/messages.js';
import {
  ARP_TABLE,
  type ArpChain,
  arpChainsOf,
  arpEndpoint,
  committedArpTable,
  desiredArpTable,
  planArpTable,
} from '../backends/nft/arp-table.js';
import { type CommittedFamily, emptyCommitted, readBack } from '../backends/nft/committed.js';
import { NFPROTO } from '../backends/nft/consts.js';
import { NativeSink } from '../backends/nft/sinks.js';
import { drain } from '../slicer.js';
import type { Manager } from './manager.js';

/** The kernel as this manager sees it (tests count or fail calls through it). */
export interface ArpKernel {
  dump(): Promise<NftDump>;
  commit(ops: readonly Uint8Array[]): Promise<unknown>;
}

export const NATIVE_ARP_KERNEL: ArpKernel = {
  dump: () => nftDump(NFPROTO.arp, ARP_TABLE),
  commit: (ops) => nftCommit(ops),
};

const ENOENT = 2;
/** What a kernel without nftables' ARP family answers (Felix then has no ARP table either). */
const UNSUPPORTED = new Set([93, 95, 97]); // EPROTONOSUPPORT, EOPNOTSUPP, EAFNOSUPPORT

export class ArpManager implements Manager {
  readonly name = 'arp';
  readonly #enabled: boolean;
  readonly #log: Logger;
  readonly #kernel: ArpKernel;
  /** Endpoint id -> its interface and bare IPv4 addresses. */
  readonly #endpoints = new Map<string, { iface: string; ipv4: string[] }>();
  /** Interface -> its chain, for interfaces some endpoint has. */
  readonly #chains = new Map<string, ArpChain>();
  readonly #dirtyIfaces = new Set<string>();
  /** The table as last committed or read back; undefined: read it back first. */
  #committed: CommittedFamily | undefined;
  /** A commit failed: the next one replaces the table whole. */
  #replace = false;
  #dirty = true;
  #unsupported = false;

  /** `enabled`: the release has the ARP table (model/release.ts arpTable). */
  constructor(opts: { enabled: boolean }, log: Logger, kernel: ArpKernel = NATIVE_ARP_KERNEL) {
    this.#enabled = opts.enabled;
    this.#log = log.child({ component: 'arp' });
    this.#kernel = kernel;
  }

  onUpdate(msg: ToDataplane): void {
    // A release without the table: nothing to keep (apply removes any table once).
    if (!this.#enabled || (msg.type !== 'WorkloadEndpointUpdate' && msg.type !== 'WorkloadEndpointRemove')) return;
    const id = `${msg.id.orchestratorId}/${msg.id.workloadId}/${msg.id.endpointId}`;
    const old = this.#endpoints.get(id);
    if (old) this.#dirtyIfaces.add(old.iface);
    if (msg.type === 'WorkloadEndpointRemove') this.#endpoints.delete(id);
    else {
      this.#endpoints.set(id, arpEndpoint(msg.endpoint));
      this.#dirtyIfaces.add(msg.endpoint.name);
    }
    this.#dirty = true;
  }

  markResync(): void {
    this.#committed = undefined;
    this.#dirty = true;
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#dirty || this.#unsupported) return { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 };
    this.#dirty = false;
    try {
      if (!this.#enabled)
        return { chainsWritten: 0, chainsDeleted: (await this.#removeOutdated()) ? 1 : 0, elemsChanged: 0 };
      return { ...(await this.#sync()) };
    } catch (e) {
      if (failuresOf(e).some((f) => UNSUPPORTED.has(f.errno))) {
        this.#unsupported = true;
        this.#log.warn(
          { table: `arp ${ARP_TABLE}`, error: (e as Error).message },
          "this kernel has no nftables ARP family: workloads' proxy-ARP replies are not suppressed (Felix also goes without)",
        );
        return { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 };
      }
      this.#dirty = true;
      this.#committed = undefined;
      this.#replace = true;
      throw e;
    }
  }

  /** Deletes the table (--cleanup, or a release without it); true if there was one. */
  async removeAll(): Promise<boolean> {
    const w = new NativeSink();
    w.tableDel('arp', ARP_TABLE);
    try {
      await this.#kernel.commit(w.parts());
    } catch (e) {
      const failures = failuresOf(e);
      if (failures.length && failures.every((f) => f.errno === ENOENT)) return false;
      throw e;
    }
    this.#committed = undefined;
    return true;
  }

  /** A release without the table: one left by a newer release goes. */
  async #removeOutdated(): Promise<boolean> {
    const removed = await this.removeAll();
    if (removed)
      this.#log.info(
        { table: `arp ${ARP_TABLE}` },
        'removed the ARP table (Calico 3.32 and newer have it; this release does not)',
      );
    return removed;
  }

  async #sync() {
    this.#rebuildChains();
    const c = this.#committed ?? (await this.#readBack());
    const desired = desiredArpTable(this.#chains);
    const w = new NativeSink();
    const stats = planArpTable(desired, c, w, this.#replace);
    // Only the table's (idempotent) creation: nothing differs.
    if (w.length > 1) await this.#kernel.commit(w.parts());
    committedArpTable(desired, c);
    this.#committed = c;
    this.#replace = false;
    return stats;
  }

  async #readBack(): Promise<CommittedFamily> {
    const c = emptyCommitted();
    drain(readBack(await this.#kernel.dump(), c));
    return c;
  }

  /** The changed interfaces' chains: one pass over the endpoints. */
  #rebuildChains(): void {
    if (!this.#dirtyIfaces.size) return;
    const chains = arpChainsOf(this.#endpoints.values(), this.#dirtyIfaces);
    for (const iface of this.#dirtyIfaces) {
      const chain = chains.get(iface);
      if (chain) this.#chains.set(iface, chain);
      else this.#chains.delete(iface);
    }
    this.#dirtyIfaces.clear();
  }
}
