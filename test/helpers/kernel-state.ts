// Kernel state in a form two runs can compare: `nft -j` output without handles and
// counters, chains and sets sorted by name (a re-created chain gets a new handle and lists
// elsewhere), set elements sorted (a hash set lists in no fixed order), each chain's
// rules kept in their order. Also the snapshot of what is not ours, compared byte for byte.

type Sh = (cmd: string, args: string[]) => string;

interface NftObject {
  [kind: string]: Record<string, unknown>;
}

function clean(v: Record<string, unknown>): Record<string, unknown> {
  const out = { ...v };
  delete out.handle;
  if (Array.isArray(out.expr)) out.expr = (out.expr as Array<Record<string, unknown>>).filter((e) => !('counter' in e));
  if (Array.isArray(out.elem)) out.elem = [...(out.elem as unknown[])].map((e) => JSON.stringify(e)).sort();
  return out;
}

/** One table as a canonical JSON string; '' when the table does not exist. */
export function nftTableState(sh: Sh, family: string, table: string): string {
  let raw: string;
  try {
    raw = sh('nft', ['-j', 'list', 'table', family, table]);
  } catch {
    return '';
  }
  const objs = (JSON.parse(raw) as { nftables: NftObject[] }).nftables.filter((o) => !('metainfo' in o));
  const chains: Record<string, unknown> = {};
  const sets: Record<string, unknown> = {};
  const rules: Record<string, unknown[]> = {};
  for (const o of objs) {
    const [kind, v] = Object.entries(o)[0] as [string, Record<string, unknown>];
    const name = String(v.name ?? '');
    if (kind === 'chain') chains[name] = clean(v);
    else if (kind === 'set' || kind === 'map') sets[`${kind}:${name}`] = clean(v);
    else if (kind === 'rule') (rules[String(v.chain)] ??= []).push(clean(v));
  }
  const sorted = (r: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify({ chains: sorted(chains), sets: sorted(sets), rules: sorted(rules) }, null, 1);
}

/**
 * Everything on the node that is not ours, as text: other nft tables, iptables rules,
 * routes and neighbour entries other than those to our workloads (`ours`: their addresses).
 */
export function foreignState(sh: Sh, ours: string[]): string {
  const tables = sh('nft', ['list', 'tables'])
    .split('\n')
    .filter((l) => l && !/^table (ip6? calico|arp calico-arp)$/.test(l));
  const nft = tables.map((t) => sh('nft', ['list', ...t.split(' ')])).join('');
  const iptables = sh('iptables-save', [])
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
  // IPv4 only: the kernel adds IPv6 link-local routes to interfaces whenever their
  // address autoconfiguration finishes, which no one here does. `ip route` omits
  // "proto boot" (its default), so our routes are recognised by destination.
  const notOurs = (l: string) => l !== '' && !ours.includes(l.split(' ')[0] ?? '');
  const routes = sh('ip', ['-4', 'route', 'show', 'table', 'all']).split('\n').filter(notOurs).join('\n');
  const neigh = sh('ip', ['-4', 'neigh', 'show', 'nud', 'permanent']).split('\n').filter(notOurs).sort().join('\n');
  return [nft, iptables, routes, neigh].join('\n----\n');
}
