// The rule model both renderings share: Felix's generictables, reduced to what palisade
// renders. A Ruleset is everything of one IP family: four tables of chains, the IP sets
// and the verdict maps (dispatch). Matches in one rule are ANDed; a match holding a list
// (nets, ports) matches any of it. Renderers lower what their syntax lacks (iptables has
// no anonymous sets: see lower.ts).

export type Family = 4 | 6;
export type TableName = 'filter' | 'raw' | 'mangle' | 'nat';
export const TABLES: readonly TableName[] = ['raw', 'mangle', 'nat', 'filter'];
export type Dir = 'src' | 'dst';
export type CtState = 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'NEW' | 'UNTRACKED';

export interface PortRange {
  first: number;
  last: number;
}

export type Match =
  | { k: 'proto'; proto: number; neg?: boolean }
  | { k: 'net'; dir: Dir; nets: string[]; neg?: boolean }
  | { k: 'set'; dir: Dir; set: string; neg?: boolean }
  /** Address and port (named ports): `ip,proto:port` members. */
  | { k: 'ipPortSet'; dir: Dir; set: string; neg?: boolean }
  /** Needs a proto match on tcp, udp or sctp before it. */
  | { k: 'ports'; dir: Dir; ranges: PortRange[]; neg?: boolean }
  | { k: 'icmp'; type: number; code?: number | undefined; neg?: boolean }
  /** (packet mark & mask) == value */
  | { k: 'mark'; value: number; mask: number; neg?: boolean }
  | { k: 'ct'; states: CtState[] }
  /** The connection was destination-NATed (iptables `--ctstate DNAT`, nft `ct status dnat`). */
  | { k: 'ctDnat'; neg?: boolean }
  /** Interface name; a trailing `+` matches any name with that prefix. */
  | { k: 'iface'; dir: 'in' | 'out'; name: string; neg?: boolean }
  /**
   * The address's type is local; with `limitIfaceOut` (source only, output hooks) local to
   * the interface the packet leaves by, not just to the host (iptables' --limit-iface-out).
   */
  | { k: 'addrType'; dir: Dir; type: 'LOCAL'; neg?: boolean; limitIfaceOut?: boolean }
  /** The strict reverse-path check failed (Felix's RPFCheckFailed: no route back out of the input interface). */
  | { k: 'rpfFailed' };

export type Verdict =
  | { k: 'accept' }
  | { k: 'drop' }
  | { k: 'reject' }
  | { k: 'return' }
  | { k: 'jump'; chain: string }
  | { k: 'goto'; chain: string };

export type Action =
  | Verdict
  /**
   * Sets the bits of `mark` within `mask` and clears the rest of `mask`; then, in
   * nftables only (a statement and a verdict in one rule), `then`.
   */
  | { k: 'setMark'; mark: number; mask: number; then?: Verdict }
  /** Felix's log action: the prefix as the kernel prints it, and LogActionRateLimit/Burst when set. */
  | { k: 'log'; prefix: string; limit?: { rate: string; burst: number } | undefined }
  | { k: 'notrack' }
  /** Masquerade (fully random ports, as Felix where the kernel has it), to `ports` only when given (NATPortRange). */
  | { k: 'masquerade'; ports?: PortRange | undefined }
  /**
   * Source NAT to an address, or the range `to`..`toLast` (palisade's NATOutgoingAddress
   * range), and to `ports` only when given; fully random ports, as Felix.
   */
  | { k: 'snat'; to: string; toLast?: string | undefined; ports?: PortRange | undefined }
  | { k: 'dnat'; to: string }
  /** Looks the interface up in a verdict map; falls through when it is absent. */
  | { k: 'vmap'; iface: 'in' | 'out'; map: string };

export interface Rule {
  match: Match[];
  action: Action;
  comment?: string | undefined;
  /** A policy rule's metadata.annotations, as "key=value" comments (Felix renders them so). */
  annotations?: string[] | undefined;
}

export interface Chain {
  name: string;
  rules: Rule[];
}

/** A kernel hook into one of our chains (the builtin chain's name, as iptables knows it). */
export interface Hook {
  table: TableName;
  builtin: 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING';
  chain: string;
}

/**
 * Rules kept at the end of a kernel base chain, after other programs' rules (Felix's
 * AppendRules): in iptables mode they follow whatever kube-proxy or Docker put in the
 * builtin chain; in nftables mode the base chain is ours and they follow our jump.
 */
export interface BaseAppend {
  table: TableName;
  builtin: Hook['builtin'];
  rules: Rule[];
}

export interface VerdictMap {
  name: string;
  table: TableName;
  /** Interface name -> verdict (jump or goto). */
  entries: Map<string, Verdict>;
}

/** `ip`: plain addresses (Felix's hash:ip, its this-host set); `net`: CIDRs; `ipPort`: address and port. */
export type SetKind = 'ip' | 'net' | 'ipPort';

export interface IPSet {
  /** Kernel name, as iptables mode names it (cali40..., cali60...). */
  name: string;
  kind: SetKind;
  members: string[];
}

export interface Ruleset {
  family: Family;
  tables: Record<TableName, Map<string, Chain>>;
  hooks: Hook[];
  appends: BaseAppend[];
  maps: VerdictMap[];
  sets: Map<string, IPSet>;
}

/** A kernel base chain's rules of ours: `inserted` (our hook jumps) first, then the appended ones. */
export interface BaseChain {
  table: TableName;
  builtin: Hook['builtin'];
  inserted: Rule[];
  appended: Rule[];
}

/** The hooks and the appended rules, per base chain, in the order the ruleset lists them. */
export function baseChains(rs: Pick<Ruleset, 'hooks' | 'appends'>): BaseChain[] {
  const out = new Map<string, BaseChain>();
  const of = (table: TableName, builtin: Hook['builtin']) => {
    const key = `${table} ${builtin}`;
    let b = out.get(key);
    if (!b) out.set(key, (b = { table, builtin, inserted: [], appended: [] }));
    return b;
  };
  for (const h of rs.hooks) of(h.table, h.builtin).inserted.push(hookRule(h));
  for (const a of rs.appends) of(a.table, a.builtin).appended.push(...a.rules);
  return [...out.values()];
}

/** The one rule of a base chain: jump to our chain (both nftables renderings use it, so they hash it alike). */
export function hookRule(h: Hook): Rule {
  return { match: [], action: { k: 'jump', chain: h.chain } };
}

export function emptyRuleset(family: Family): Ruleset {
  return {
    family,
    tables: { filter: new Map(), raw: new Map(), mangle: new Map(), nat: new Map() },
    hooks: [],
    appends: [],
    maps: [],
    sets: new Map(),
  };
}

export function addChain(rs: Ruleset, table: TableName, name: string, rules: Rule[]): void {
  rs.tables[table].set(name, { name, rules });
}

/** A NAT port range as both iptables and nft spell it: "first-last". */
export function portText(p: PortRange): string {
  return `${p.first}-${p.last}`;
}

/** Where SNAT translates to, as iptables and nft spell it: "a[-b][:first-last]" (IPv4 only, as NATOutgoingAddress). */
export function natTarget(a: { to: string; toLast?: string | undefined; ports?: PortRange | undefined }): string {
  return `${a.to}${a.toLast ? `-${a.toLast}` : ''}${a.ports ? `:${portText(a.ports)}` : ''}`;
}
