// nftables rendering, Calico's nftables-mode layout: one `calico` table per family, chain
// names prefixed by their iptables table ("filter-cali-INPUT"), base chains hooking the
// kernel at the iptables priorities, named sets for IP sets and verdict maps for dispatch.
// The text loads with `nft -f` and replaces any previous calico table atomically.
import { coveringMembers, isHostCidr } from '../../render/cover.js';
import type { Action, Family, IPSet, Match, Rule, Ruleset, TableName } from '../../render/model.js';
import { baseChainSpec } from '../../render/base-chains.js';
import { commentHashText, nftComment } from '../../render/comments.js';
import { baseChains, natTarget, portText, TABLES } from '../../render/model.js';
import { nftSetName, ruleHashes } from '../../render/names.js';

export const nftFamily = (f: Family) => (f === 4 ? 'ip' : 'ip6');
export const nftChainName = (table: TableName, chain: string) => `${table}-${chain}`;
const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
const q = (s: string) => JSON.stringify(s);
const list = (xs: string[]) => (xs.length === 1 ? (xs[0] as string) : `{ ${xs.join(', ')} }`);
const ifname = (name: string) => q(name.endsWith('+') ? `${name.slice(0, -1)}*` : name);

function match(m: Match, family: Family): string {
  const ip = nftFamily(family);
  const op = 'neg' in m && m.neg ? '!= ' : '';
  switch (m.k) {
    case 'proto':
      return `meta l4proto ${op}${m.proto}`;
    case 'net':
      return `${ip} ${m.dir[0]}addr ${op}${list(m.nets)}`;
    case 'set':
      return `${ip} ${m.dir[0]}addr ${op}@${nftSetName(m.set)}`;
    case 'ipPortSet':
      return `${ip} ${m.dir[0]}addr . meta l4proto . th ${m.dir === 'src' ? 'sport' : 'dport'} ${op}@${nftSetName(m.set)}`;
    case 'ports':
      return `th ${m.dir === 'src' ? 'sport' : 'dport'} ${op}${list(m.ranges.map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`)))}`;
    case 'icmp': {
      const icmp = family === 4 ? 'icmp' : 'icmpv6';
      if (m.code === undefined) return `${icmp} type ${op}${m.type}`;
      return m.neg
        ? `${icmp} type . ${icmp} code != { ${m.type} . ${m.code} }`
        : `${icmp} type ${m.type} ${icmp} code ${m.code}`;
    }
    case 'mark':
      return `meta mark & ${hex(m.mask)} ${m.neg ? '!=' : '=='} ${hex(m.value)}`;
    case 'ct':
      return `ct state ${m.states.map((s) => s.toLowerCase()).join(',')}`;
    case 'ctDnat':
      // Not `ct status != dnat`: nft (1.0.6) compiles that to the whole status word being
      // other than DNAT alone, true of nearly every connection (Felix's nftables mode has it).
      return m.neg ? 'ct status & dnat == 0' : 'ct status dnat';
    case 'iface':
      return `${m.dir === 'in' ? 'iifname' : 'oifname'} ${op}${ifname(m.name)}`;
    case 'addrType':
      return `fib ${m.dir[0]}addr${m.limitIfaceOut ? ' . oif' : ''} type ${op}local`;
    case 'rpfFailed':
      return 'fib saddr . mark . iif oif 0';
  }
}

function action(a: Action, table: TableName): string {
  switch (a.k) {
    case 'accept':
    case 'drop':
    case 'reject':
    case 'return':
    case 'notrack':
      return a.k;
    case 'jump':
    case 'goto':
      return `${a.k} ${nftChainName(table, a.chain)}`;
    case 'setMark':
      return `meta mark set meta mark & ${hex(~a.mask)} | ${hex(a.mark & a.mask)}${a.then ? ` ${action(a.then, table)}` : ''}`;
    case 'log':
      // Felix's nftables mode logs at level info (its iptables mode at 5, notice).
      return `${a.limit ? `limit rate ${a.limit.rate}${a.limit.burst ? ` burst ${a.limit.burst} packets` : ''} ` : ''}log prefix ${q(a.prefix)} level info`;
    case 'masquerade':
      return `masquerade${a.ports ? ` to :${portText(a.ports)}` : ''} fully-random`;
    case 'snat':
      return `snat to ${natTarget(a)} fully-random`;
    case 'dnat':
      return `dnat to ${a.to}`;
    case 'vmap':
      return `${a.iface === 'in' ? 'iifname' : 'oifname'} vmap @${nftChainName(table, a.map)}`;
  }
}

/** A rule's statement text without its comment: what its hash is computed from. */
export function nftRuleBody(r: Rule, family: Family, table: TableName): string {
  return [...r.match.map((m) => match(m, family)), 'counter', action(r.action, table)].join(' ');
}

/** What a rule's `cali:` hash covers: its statement and its comments. */
export function nftHashText(r: Rule, family: Family, table: TableName): string {
  return nftRuleBody(r, family, table) + commentHashText(r);
}

export function nftRuleTexts(chain: string, rules: Rule[], family: Family, table: TableName): string[] {
  const hashes = ruleHashes(
    chain,
    rules.map((r) => nftHashText(r, family, table)),
  );
  return rules.map((r, i) => `${nftRuleBody(r, family, table)} comment ${q(nftComment(hashes[i] as string, r))}`);
}

export function nftSetType(family: Family, set: IPSet): string {
  const addr = family === 4 ? 'ipv4_addr' : 'ipv6_addr';
  return set.kind === 'ipPort' ? `${addr} . inet_proto . inet_service` : addr;
}

/** An IP-set member as an nftables element ("10.0.0.1,tcp:80" -> "10.0.0.1 . tcp . 80"). */
export function nftElement(member: string): string {
  const comma = member.indexOf(',');
  if (comma < 0) return member;
  const [proto, port] = member.slice(comma + 1).split(':');
  return `${member.slice(0, comma)} . ${proto} . ${port}`;
}

/** A net set of host addresses only is a plain set of addresses (desired.ts, ipSetElemSteps). */
export const isHostSet = (set: IPSet) => set.kind === 'ip' || (set.kind === 'net' && set.members.every(isHostCidr));

export function nftSetElements(set: IPSet): string[] {
  if (isHostSet(set)) return [...new Set(set.members.map((m) => m.split('/')[0] as string))];
  return (set.kind === 'net' ? coveringMembers(set.members) : set.members).map(nftElement);
}

export function renderNft(rs: Ruleset): string {
  const fam = nftFamily(rs.family);
  const out: string[] = [`add table ${fam} calico`, `delete table ${fam} calico`, `table ${fam} calico {`];
  // Chains first (empty), so sets, maps and jumps may refer to any of them.
  for (const table of TABLES)
    for (const name of rs.tables[table].keys()) out.push(`\tchain ${nftChainName(table, name)} {}`);
  for (const set of rs.sets.values()) {
    const flags = set.kind === 'net' && !isHostSet(set) ? '; flags interval' : '';
    const elems = nftSetElements(set);
    out.push(
      `\tset ${nftSetName(set.name)} { type ${nftSetType(rs.family, set)}${flags};${elems.length ? ` elements = { ${elems.join(', ')} };` : ''} }`,
    );
  }
  for (const map of rs.maps) {
    const elems = [...map.entries].map(([iface, v]) => `${q(iface)} : ${action(v, map.table)}`);
    out.push(
      `\tmap ${nftChainName(map.table, map.name)} { type ifname : verdict;${elems.length ? ` elements = { ${elems.join(', ')} };` : ''} }`,
    );
  }
  for (const table of TABLES) {
    for (const chain of rs.tables[table].values()) {
      out.push(`\tchain ${nftChainName(table, chain.name)} {`);
      for (const r of nftRuleTexts(chain.name, chain.rules, rs.family, table)) out.push(`\t\t${r}`);
      out.push('\t}');
    }
  }
  for (const b of baseChains(rs)) {
    const h = baseChainSpec(b.table, b.builtin);
    const base = nftChainName(b.table, b.builtin);
    out.push(`\tchain ${base} {`);
    out.push(`\t\ttype ${h.type} hook ${b.builtin.toLowerCase()} priority ${h.priority}; policy accept;`);
    for (const r of nftRuleTexts(base, [...b.inserted, ...b.appended], rs.family, b.table)) out.push(`\t\t${r}`);
    out.push('\t}');
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}
