// Typed access to the native iptables-legacy transport (native/iptc): one libiptc
// transaction per call under the xtables lock, and a dump of a table's entries.
import { native } from './load.js';
import type { RawIptcChain, RawIptcResult } from './raw.js';

export type IptcResult = RawIptcResult;
export type IptcChain = RawIptcChain;

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
