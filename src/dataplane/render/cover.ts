// nftables interval sets refuse overlapping elements, while Calico IP sets routinely hold
// a network and addresses inside it. The kernel set gets the covering members only (same
// membership); the rest are implied. CIDRs nest or are disjoint, so one sweep suffices.
function v4Range(cidr: string): [bigint, bigint] | undefined {
  const [addr, len = '32'] = cidr.split('/');
  const parts = (addr as string).split('.');
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) n = (n << 8n) | BigInt(Number(p));
  const host = 32n - BigInt(Number(len));
  const start = (n >> host) << host;
  return [start, start + (1n << host) - 1n];
}

function v6Range(cidr: string): [bigint, bigint] | undefined {
  const [addr, len = '128'] = cidr.split('/');
  const halves = (addr as string).split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? (halves[0] as string).split(':') : [];
  const tail = halves.length === 2 && halves[1] ? (halves[1] as string).split(':') : [];
  const groups = halves.length === 2 ? [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail] : head;
  if (groups.length !== 8) return undefined;
  let n = 0n;
  for (const g of groups) n = (n << 16n) | BigInt(parseInt(g, 16));
  const host = 128n - BigInt(Number(len));
  const start = (n >> host) << host;
  return [start, start + (1n << host) - 1n];
}

/** The members not inside another member, in input order. */
export function coveringMembers(members: readonly string[]): string[] {
  if (members.length < 2) return [...members];
  const ranges = members.map((m, i) => {
    const r = m.includes(':') ? v6Range(m) : v4Range(m);
    return { i, start: r ? r[0] : 0n, end: r ? r[1] : -1n, ok: !!r };
  });
  const sorted = ranges.filter((r) => r.ok).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.end > b.end ? -1 : a.end < b.end ? 1 : 0));
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
