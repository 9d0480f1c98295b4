// nftables interval sets refuse overlapping elements, while Calico IP sets routinely hold
// a network and addresses inside it. The kernel set gets the covering members only (same
// membership); the rest are implied. CIDRs nest or are disjoint, so one sweep suffices.
import { addressToBigInt } from '../../model/net.js';

function range(cidr: string): [bigint, bigint] | undefined {
  const [addr, len] = cidr.split('/') as [string, string?];
  if (!addr.includes('.') && !addr.includes(':')) return undefined;
  const bits = addr.includes(':') ? 128n : 32n;
  const host = bits - (len === undefined ? bits : BigInt(Number(len)));
  const start = (addressToBigInt(addr) >> host) << host;
  return [start, start + (1n << host) - 1n];
}

/** "10.0.0.1/32", "fd00::1/128": one address, which no other member can be inside but itself. */
export function isHostCidr(m: string): boolean {
  const slash = m.indexOf('/');
  if (slash < 0) return false;
  const len = m.slice(slash + 1);
  return m.includes(':') ? len === '128' : len === '32';
}

/** The members not inside another member, in input order. */
export function coveringMembers(members: readonly string[]): string[] {
  // Workload addresses (the common case, and the big sets) are host routes: none can
  // hold another, only repeat it.
  if (members.length < 2) return [...members];
  if (members.every(isHostCidr)) return [...new Set(members)];
  const ranges = members.map((m, i) => {
    const r = range(m);
    return { i, start: r ? r[0] : 0n, end: r ? r[1] : -1n, ok: !!r };
  });
  const sorted = ranges
    .filter((r) => r.ok)
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.end > b.end ? -1 : a.end < b.end ? 1 : 0));
  const keep = new Set<number>(ranges.filter((r) => !r.ok).map((r) => r.i));
  let coverEnd = -1n;
  let first = true;
  for (const r of sorted) {
    if (first || r.start > coverEnd) {
      keep.add(r.i);
      coverEnd = r.end;
      first = false;
    }
  }
  return members.filter((_, i) => keep.has(i));
}
