// Which routing tables WireGuard takes, as Felix's route-table index allocator: the
// indices of RouteTableRanges (or the deprecated RouteTableRange; default 1-250), lowest
// first, less the kernel's own (253-255). Felix grabs two, IPv4's then IPv6's, but both of
// its WireGuard instances program the first (wireguard.New reads RoutingTableIndex for
// either family; RoutingTableIndexV6 is allocated and never read, v3.31.7 and v3.32.1,
// seen in a run beside Felix: D40): IPv6 runs in the same index of its own family's tables,
// and only while the second could be grabbed. Taken whether or not WireGuard is on, so a
// node where it was on can be tidied up.
const RESERVED = new Set([253, 254, 255]);

export interface WireguardTables {
  v4: number | undefined;
  v6: number | undefined;
  /** The second index, which Felix allocates and leaves unused (an older palisade put IPv6 there). */
  spareV6: number | undefined;
}

export function wireguardTables(range: string, ranges: string): WireguardTables {
  const text = ranges.trim() || range.trim() || '1-250';
  const spans = [...text.matchAll(/(\d+)-(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
  const picked: number[] = [];
  // The two lowest indices in any span: at most two per span are needed.
  for (const [min, max] of spans.sort((a, b) => a[0] - b[0]))
    for (let i = min; i <= max && picked.length < 2 + spans.length * 2; i++)
      if (!RESERVED.has(i) && !picked.includes(i)) {
        picked.push(i);
        if (picked.filter((p) => p >= min && p <= max).length >= 2) break;
      }
  picked.sort((a, b) => a - b);
  const [first, second] = picked;
  return { v4: first, v6: second === undefined ? undefined : first, spareV6: second };
}
