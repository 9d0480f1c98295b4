// iptables rendering, as Felix writes it: `iptables-restore --noflush` input per table with
// our chains declared (which flushes them), every rule tagged `-m comment --comment
// "cali:<hash>"`, hooks inserted at the top of the builtin chains (ChainInsertMode Insert)
// or appended, then the rules always appended (FORWARD's accept); and `ipset restore`
// input for the IP sets. Verdict maps become Felix's dispatch tree of `-i/-o <iface> -g
// <chain>` rules (dispatch.ts).
import type { Action, Family, IPSet, Match, Rule, Ruleset, TableName, VerdictMap } from '../../render/model.js';
import { baseChains, natTarget, portText, TABLES } from '../../render/model.js';
import { MAX_IPTABLES_COMMENT, ruleComments } from '../../render/comments.js';
import { ruleHashes } from '../../render/names.js';
import { initialHashsize } from '../../../native/ipset.js';
import { dispatchChains } from './dispatch.js';

const PROTO_NAMES: Record<number, string> = {
  1: 'icmp',
  6: 'tcp',
  17: 'udp',
  58: 'ipv6-icmp',
  132: 'sctp',
  136: 'udplite',
};
const hex = (n: number) => `0x${(n >>> 0).toString(16)}`;
const q = (s: string) => `"${s.replaceAll('"', '\\"')}"`;

function match(m: Match, family: Family): string {
  const not = 'neg' in m && m.neg ? '! ' : '';
  switch (m.k) {
    case 'proto':
      return `${not}-p ${PROTO_NAMES[m.proto] ?? m.proto}`;
    case 'net':
      if (m.nets.length !== 1)
        throw new Error('iptables rendering needs one CIDR per match (render with the iptables style)');
      return `${not}--${m.dir === 'src' ? 'source' : 'destination'} ${m.nets[0]}`;
    case 'set':
      return `-m set ${not}--match-set ${m.set} ${m.dir}`;
    case 'ipPortSet':
      return `-m set ${not}--match-set ${m.set} ${m.dir},${m.dir}`;
    case 'ports':
      return `-m multiport ${not}--${m.dir === 'src' ? 'source' : 'destination'}-ports ${m.ranges.map((r) => (r.first === r.last ? `${r.first}` : `${r.first}:${r.last}`)).join(',')}`;
    case 'icmp': {
      const t = m.code === undefined ? `${m.type}` : `${m.type}/${m.code}`;
      return family === 4 ? `-m icmp ${not}--icmp-type ${t}` : `-m icmp6 ${not}--icmpv6-type ${t}`;
    }
    case 'mark':
      return `-m mark ${not}--mark ${hex(m.value)}/${hex(m.mask)}`;
    case 'ct':
      return `-m conntrack --ctstate ${m.states.join(',')}`;
    case 'ctDnat':
      return `-m conntrack ${not}--ctstate DNAT`;
    case 'iface':
      return `${not}${m.dir === 'in' ? '-i' : '-o'} ${m.name}`;
    case 'addrType':
      return `-m addrtype ${not}--${m.dir}-type ${m.type}${m.limitIfaceOut ? ' --limit-iface-out' : ''}`;
    case 'rpfFailed':
      return '-m rpfilter --invert --validmark';
  }
}

function action(a: Action): string {
  switch (a.k) {
    case 'accept':
      return '-j ACCEPT';
    case 'drop':
      return '-j DROP';
    case 'reject':
      return '-j REJECT';
    case 'return':
      return '-j RETURN';
    case 'jump':
      return `-j ${a.chain}`;
    case 'goto':
      return `-g ${a.chain}`;
    case 'setMark':
      if (a.then) throw new Error('a mark-and-verdict rule is nftables only (render with the iptables style)');
      return `-j MARK --set-xmark ${hex(a.mark & a.mask)}/${hex(a.mask)}`;
    case 'log':
      return `${a.limit ? `-m limit --limit ${a.limit.rate}${a.limit.burst ? ` --limit-burst ${a.limit.burst}` : ''} ` : ''}-j LOG --log-prefix ${q(a.prefix)} --log-level 5`;
    case 'notrack':
      return '-j NOTRACK';
    case 'masquerade':
      return `-j MASQUERADE${a.ports ? ` --to-ports ${portText(a.ports)}` : ''} --random-fully`;
    case 'snat':
      return `-j SNAT --to-source ${natTarget(a)} --random-fully`;
    case 'dnat':
      return `-j DNAT --to-destination ${a.to}`;
    case 'vmap':
      throw new Error('a verdict map must be expanded before iptables rendering');
  }
}

// As Felix: the rule's comments right after the hash comment, then matches, then the action.
const body = (r: Rule, family: Family) =>
  [
    ...ruleComments(r).map((c) => `-m comment --comment ${q(c.slice(0, MAX_IPTABLES_COMMENT))}`),
    ...r.match.map((m) => match(m, family)),
    action(r.action),
  ].join(' ');

/** `-A <chain> ...` lines for one chain (no verdict maps left), with Felix's chained `cali:` hashes. */
export function iptablesRuleLines(chain: string, rules: Rule[], family: Family, hashSeed = chain): string[] {
  const bodies = rules.map((r) => body(r, family));
  const hashes = ruleHashes(
    hashSeed,
    bodies.map((b) => `-A ${chain} ${b}`),
  );
  return bodies.map((b, i) => `-A ${chain} -m comment --comment "cali:${hashes[i]}" ${b}`);
}

/** A chain's lines, a chain holding a verdict map becoming Felix's dispatch tree (dispatch.ts). */
export function iptablesChainLines(
  chain: string,
  rules: Rule[],
  family: Family,
  maps: Map<string, VerdictMap>,
): Map<string, string[]> {
  return new Map(dispatchChains(chain, rules, maps).map((c) => [c.name, iptablesRuleLines(c.name, c.rules, family)]));
}

/** Our rules in one builtin chain: the hook jumps (at its top, or appended) and those always appended. */
export interface BaseLines {
  inserted: string[];
  appended: string[];
}

/**
 * One table's base chains as `-A` lines. The appended rules hash apart from the inserted
 * ones (Felix seeds them with "<chain>*appends*"), so the same rule in both never shares a hash.
 */
export function baseChainLines(
  rs: Pick<Ruleset, 'hooks' | 'appends' | 'family'>,
  table: TableName,
): Map<string, BaseLines> {
  const out = new Map<string, BaseLines>();
  for (const b of baseChains(rs)) {
    if (b.table !== table) continue;
    out.set(b.builtin, {
      inserted: iptablesRuleLines(b.builtin, b.inserted, rs.family),
      appended: iptablesRuleLines(b.builtin, b.appended, rs.family, `${b.builtin}*appends*`),
    });
  }
  return out;
}

/** A builtin chain's lines in the order they go in: inserted at its top (Insert) or appended, then the appends. */
export function baseChainScript(builtin: BaseLines, insertMode: 'Insert' | 'Append'): string[] {
  const top = builtin.inserted.map((l, i) => (insertMode === 'Insert' ? l.replace(/^-A (\S+)/, `-I $1 ${i + 1}`) : l));
  return [...top, ...builtin.appended];
}

export function renderIptables(rs: Ruleset, insertMode: 'Insert' | 'Append' = 'Insert'): string {
  const out: string[] = [];
  for (const table of TABLES) {
    const chains = rs.tables[table];
    const base = baseChainLines(rs, table);
    if (!chains.size && !base.size) continue;
    const maps = new Map(rs.maps.filter((m) => m.table === table).map((m) => [m.name, m]));
    out.push(`*${table}`);
    const lines = new Map<string, string[]>();
    for (const chain of chains.values())
      for (const [name, l] of iptablesChainLines(chain.name, chain.rules, rs.family, maps)) lines.set(name, l);
    for (const name of lines.keys()) out.push(`:${name} - [0:0]`);
    for (const b of base.values()) for (const l of baseChainScript(b, insertMode)) out.push(l);
    for (const l of lines.values()) for (const x of l) out.push(x);
    out.push('COMMIT');
  }
  return `${out.join('\n')}\n`;
}

const IPSET_TYPE: Record<IPSet['kind'], string> = { ip: 'hash:ip', net: 'hash:net', ipPort: 'hash:ip,port' };

/** `ipset restore` input: create (or keep), flush and fill every set, each sized as the agent creates it. */
export function renderIpsets(rs: Ruleset, maxSize = 1048576): string {
  const out: string[] = [];
  const family = rs.family === 4 ? 'inet' : 'inet6';
  for (const set of rs.sets.values()) {
    const hashsize = initialHashsize(set.members.length, maxSize);
    out.push(
      `create ${set.name} ${IPSET_TYPE[set.kind]} family ${family}${hashsize ? ` hashsize ${hashsize}` : ''} maxelem ${maxSize} -exist`,
      `flush ${set.name}`,
    );
    for (const m of set.members) out.push(`add ${set.name} ${m}`);
  }
  return `${out.join('\n')}\n`;
}
