// Which routing tables WireGuard takes, as Felix's route-table index allocator: the
// indices of RouteTableRanges (or the deprecated RouteTableRange; default 1-250), lowest
// first, less the kernel's own (253-255); IPv4's table is the first, IPv6's the second.
// Taken whether or not WireGuard is on, so a node where it was on can be tidied up.
const RESERVED = new Set([253, 254, 255]);

export function wireguardTables(range: string, ranges: string): { v4: number | undefined; v6: number | undefined } {
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
  return { v4: picked[0], v6: picked[1] };
}
