// Typed access to the native conntrack flush: the entries of addresses that left (a removed
// endpoint's IPs) are deleted over ctnetlink, in either direction, as Felix deletes them.
import { addressBytes } from '../model/net.js';
import { native } from './load.js';

/** Deletes every conntrack entry with one of `addresses` (IPv4 or IPv6, no prefix) as source or destination. */
export function conntrackFlush(addresses: readonly string[]): Promise<{ scanned: number; deleted: number }> {
  const records = Buffer.alloc(addresses.length * 17);
  addresses.forEach((a, i) => {
    const bytes = addressBytes(a);
    records[i * 17] = bytes.length === 4 ? 4 : 6;
    bytes.copy(records, i * 17 + 1);
  });
  return native.conntrackFlush(records);
}
