// Typed access to the native iptables transports (native/iptc): iptables-legacy as one
// libiptc transaction under the xtables lock (and a dump of a table's entries), and
// iptables-nft as one nftables batch in iptables-nft's own layout.
import { native } from './load.js';
import type { RawIptcChain, RawIptcResult, RawIptNftResult } from './raw.js';

export type IptcResult = RawIptcResult;
export type IptcChain = RawIptcChain;
export type IptNftResult = RawIptNftResult;

export interface XtablesLock {
  /** "" takes no lock. */
  lockPath: string;
  lockTimeoutMs: number;
  lockIntervalMs: number;
}

export function iptcApply(ops: Uint8Array, lock: XtablesLock): Promise<IptcResult> {
  return native.iptcApply(ops, lock);
}

export function iptcDump(family: 4 | 6, table: string): Promise<IptcChain[]> {
  return native.iptcDump(family, table);
}

/** The transaction for iptables-nft, over netlink (one nftables batch). */
export function iptNftApply(ops: Uint8Array): Promise<IptNftResult> {
  return native.iptNftApply(ops);
}
