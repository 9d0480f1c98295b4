// Policy and profile chains (cali-pi-/po-/pri-/pro-), as Felix's rules/policy.go renders a
// proto Rule: criteria ANDed, positive ports ORed with named ports, rules of the other IP
// version (or with CIDRs only of the other version) left out; allow = set the accept mark
// and return, pass = set the pass mark and return, deny = drop.
import type { EndpointMarkMapper } from './endpoint-marks.js';
import type { PolicyIds } from '../../model/release.js';
import type { Policy, Profile, Protocol, Rule as ProtoRule } from '../../proto/messages.js';
import { blockRules, markSet, setMark } from './blocks.js';
import { coveringMembers } from './cover.js';
import type { Marks } from './marks.js';
import type { Action, Family, Match, PortRange, Rule, Verdict } from './model.js';
import { ipSetName, felixPolicyId, policyChain, profileChain } from './names.js';

const PROTOCOLS: Record<string, number> = { tcp: 6, udp: 17, icmp: 1, icmpv6: 58, sctp: 132, udplite: 136 };

export function protocolNumber(p: Protocol): number {
  if ('number' in p) return p.number;
  const n = PROTOCOLS[p.name.toLowerCase()];
  if (n === undefined) throw new Error(`unknown protocol "${p.name}"`);
  return n;
}

const isV6 = (cidr: string) => cidr.includes(':');
const ofFamily = (nets: readonly string[], family: Family) => nets.filter((n) => isV6(n) === (family === 6));

export interface RenderContext {
  family: Family;
  marks: Marks;
  /**
   * iptables style: one CIDR per match and at most 15 multiport slots, so several CIDRs (or
   * more ports) become OR blocks and several negated CIDRs one block each.
   */
  iptables: boolean;
  /** LogPrefix (with Felix's %t %k %n %p specifiers), LogActionRateLimit ("" for none) and its burst. */
  log?: { prefix: string; rateLimit: string; burst: number } | undefined;
  /** Whose rules are rendered, for the log prefix's specifiers. */
  owner?: LogOwner | undefined;
  /**
   * Felix's configured verdicts (the Iptables- or Nftables- FilterAllowAction, MangleAllowAction and FilterDenyAction).
   */
  actions: FilterActions;
  /** WorkloadSourceSpoofing Any: endpoints may be exempt from the reverse-path check. */
  spoofing?: boolean;
  /**
   * Workload egress drops encapsulated traffic (VXLAN to this port, IPIP) unless allowed (Allow*PacketsFromWorkloads).
   */
  encapFromWorkloads?: { vxlanPort: number; allowVxlan: boolean; allowIpip: boolean } | undefined;
  /** FloatingIPs Enabled: workloads' ipNATs are programmed. */
  floatingIps?: boolean;
  /** How the cluster's release names policy chains (default: 3.32's, by kind). */
  policyIds?: PolicyIds | undefined;
  /** kube-proxy IPVS support is on: each endpoint's mark (render/kube-ipvs.ts). */
  endpointMarks?: EndpointMarkMapper | undefined;
}

export interface FilterActions {
  /** Where Felix accepts in the filter table: accept, or return to the kernel's chain. */
  filterAllow: Verdict;
  mangleAllow: Verdict;
  /** Where Felix drops in the filter table: drop, or reject. */
  filterDeny: Verdict;
}

export const DEFAULT_ACTIONS: FilterActions = {
  filterAllow: { k: 'accept' },
  mangleAllow: { k: 'accept' },
  filterDeny: { k: 'drop' },
};

/** The actions for rules rendered into `table`: REJECT and the allow choices are the filter (and mangle) table's. */
export function actionsIn(actions: FilterActions, table: 'filter' | 'raw' | 'mangle' | 'nat'): FilterActions {
  return table === 'filter' ? actions : { ...DEFAULT_ACTIONS, mangleAllow: actions.mangleAllow };
}

export interface LogOwner {
  /** Felix's kind short name ("np", "gnp"..., "pro" for a profile). */
  kind: string;
  name: string;
  namespace: string;
  tier: string;
}

/** Felix's generateLogPrefix: %t tier, %k kind, %n name, %p namespace/name (name for global kinds). */
export function logPrefix(template: string, owner: LogOwner | undefined): string {
  const t = template || 'calico-packet';
  if (!t.includes('%')) return t;
  const o = owner ?? { kind: 'unknown', name: 'unknown', namespace: '', tier: '' };
  return t.replace(/%[tknp]/g, (s) =>
    s === '%k' ? o.kind : s === '%n' ? o.name : s === '%t' ? o.tier : o.namespace ? `${o.namespace}/${o.name}` : o.name,
  );
}

/** multiport takes 15 ports, a range counting as two. */
export function portChunks(ranges: PortRange[]): PortRange[][] {
  const chunks: PortRange[][] = [];
  let cur: PortRange[] = [];
  let slots = 0;
  for (const r of ranges) {
    const n = r.first === r.last ? 1 : 2;
    if (slots + n > 15) {
      chunks.push(cur);
      cur = [];
      slots = 0;
    }
    cur.push(r);
    slots += n;
  }
  if (cur.length) chunks.push(cur);
  return chunks;
}

/** The kernel rules for one proto Rule in one family ([] if it cannot match there). */
export function renderProtoRule(r: ProtoRule, ctx: RenderContext): Rule[] {
  const rendered = kernelRules(r, ctx);
  // Felix puts a rule's annotations on every kernel rule it becomes ("key=value"; sorted here, Felix's order is a
  // map's).
  if (r.annotations && Object.keys(r.annotations).length) {
    const notes = Object.entries(r.annotations)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`);
    for (const k of rendered) k.annotations = notes;
  }
  return rendered;
}

function kernelRules(r: ProtoRule, ctx: RenderContext): Rule[] {
  const { family, marks } = ctx;
  if (r.ipVersion !== undefined && r.ipVersion !== family) return [];
  const proto = r.protocol && protocolNumber(r.protocol);
  if ((proto === 1 && family === 6) || (proto === 58 && family === 4)) return [];
  const srcNet = ofFamily(r.srcNet, family);
  const dstNet = ofFamily(r.dstNet, family);
  if ((r.srcNet.length && !srcNet.length) || (r.dstNet.length && !dstNet.length)) return [];
  // As Felix's filterNets: negated CIDRs all of the other family, or a negated catch-all,
  // drop the rule for this family too (rendering it without them made a v6-only notNets
  // deny or allow every IPv4 packet; found diffing against Felix v3.31.7).
  const notSrcNet = ofFamily(r.notSrcNet, family);
  const notDstNet = ofFamily(r.notDstNet, family);
  if ((r.notSrcNet.length && !notSrcNet.length) || (r.notDstNet.length && !notDstNet.length)) return [];
  if ([...notSrcNet, ...notDstNet].some((n) => /^(0\.0\.0\.0|::)\/0$/.test(n))) return [];

  const m: Match[] = [];
  const blocks: Match[][][] = [];
  if (proto !== undefined) m.push({ k: 'proto', proto });
  if (r.notProtocol) m.push({ k: 'proto', proto: protocolNumber(r.notProtocol), neg: true });
  const nets = (dir: 'src' | 'dst', list: string[], neg: boolean) => {
    if (!list.length) return;
    // iptables takes one -s (and one -d) per rule: a negated CIDR beside a positive one of
    // the same direction is a block of its own (found diffing against Felix v3.31.7).
    const positive = (dir === 'src' ? srcNet : dstNet).length > 0;
    if (!ctx.iptables || (list.length === 1 && !(neg && positive)))
      m.push(neg ? { k: 'net', dir, nets: list, neg } : { k: 'net', dir, nets: list });
    else if (!neg) blocks.push(list.map((n) => [{ k: 'net', dir, nets: [n] }]));
    else for (const n of list) blocks.push([[{ k: 'net', dir, nets: [n], neg: true }]]);
  };
  nets('src', srcNet, false);
  nets('dst', dstNet, false);
  nets('src', notSrcNet, true);
  nets('dst', notDstNet, true);
  for (const id of r.srcIpSetIds) m.push({ k: 'set', dir: 'src', set: ipSetName(family, id) });
  for (const id of r.dstIpSetIds) m.push({ k: 'set', dir: 'dst', set: ipSetName(family, id) });
  for (const id of r.notSrcIpSetIds) m.push({ k: 'set', dir: 'src', set: ipSetName(family, id), neg: true });
  for (const id of r.notDstIpSetIds) m.push({ k: 'set', dir: 'dst', set: ipSetName(family, id), neg: true });

  for (const dir of ['src', 'dst'] as const) {
    const ranges = dir === 'src' ? r.srcPorts : r.dstPorts;
    const named = dir === 'src' ? r.srcNamedPortIpSetIds : r.dstNamedPortIpSetIds;
    const alts: Match[][] = [];
    // As Felix's AppendPortMatchBlock, a numeric-port alternative carries the protocol
    // (iptables' multiport refuses a rule without one).
    const protoMatch: Match[] = proto !== undefined ? [{ k: 'proto', proto }] : [];
    if (ranges.length) {
      if (ctx.iptables)
        for (const chunk of portChunks(ranges)) alts.push([...protoMatch, { k: 'ports', dir, ranges: chunk }]);
      else alts.push([...protoMatch, { k: 'ports', dir, ranges }]);
    }
    for (const id of named) alts.push([{ k: 'ipPortSet', dir, set: ipSetName(family, id) }]);
    if (dir === 'dst')
      for (const id of r.dstIpPortSetIds) alts.push([{ k: 'ipPortSet', dir, set: ipSetName(family, id) }]);
    if (alts.length === 1) m.push(...(alts[0] as Match[]).filter((x) => x.k !== 'proto'));
    else if (alts.length > 1) blocks.push(alts);
    const notRanges = dir === 'src' ? r.notSrcPorts : r.notDstPorts;
    if (notRanges.length) {
      for (const chunk of ctx.iptables ? portChunks(notRanges) : [notRanges])
        m.push({ k: 'ports', dir, ranges: chunk, neg: true });
    }
    for (const id of dir === 'src' ? r.notSrcNamedPortIpSetIds : r.notDstNamedPortIpSetIds)
      m.push({ k: 'ipPortSet', dir, set: ipSetName(family, id), neg: true });
  }
  if (r.icmpType !== undefined) m.push({ k: 'icmp', type: r.icmpType, code: r.icmpCode });
  if (r.notIcmpType !== undefined) m.push({ k: 'icmp', type: r.notIcmpType, code: r.notIcmpCode, neg: true });

  const finals = (match: Match[]): Rule[] => actionRules(r.action, match, ctx);
  if (blocks.length) return blockRules(blocks, m, finals, marks);
  return ctx.iptables ? finals(m) : expandLists(m).flatMap(finals);
}

// iptables' MARK does not end a rule, so allow and pass take a second rule to return;
// nftables sets the mark and returns in one (half the rules the kernel walks).
const MAX_EXPANSION = 8;

const rangesDisjoint = (ranges: PortRange[]) => {
  const sorted = [...ranges].sort((a, b) => a.first - b.first);
  return sorted.every((r, i) => i === 0 || r.first > (sorted[i - 1] as PortRange).last);
};

/**
 * nftables: short lists become one rule per value instead of an anonymous set, and a
 * negated list becomes one negated match per value. The kernel binds every anonymous set
 * by walking the whole transaction, which makes a cold apply quadratic (docs/dataplane.md).
 * Only disjoint values are split (a packet then matches at most one of the rules, so even
 * a log action fires once), and only while the rules stay few.
 */
export function expandLists(match: Match[]): Match[][] {
  let variants: Match[][] = [[]];
  for (const m of match) {
    const listed = m.k === 'ports' ? m.ranges.length : m.k === 'net' ? m.nets.length : 1;
    if (listed <= 1) {
      for (const v of variants) v.push(m);
      continue;
    }
    if ((m.k === 'ports' || m.k === 'net') && m.neg) {
      for (const v of variants) {
        if (m.k === 'ports') for (const r of m.ranges) v.push({ k: 'ports', dir: m.dir, ranges: [r], neg: true });
        else if (m.k === 'net') for (const n of m.nets) v.push({ k: 'net', dir: m.dir, nets: [n], neg: true });
      }
      continue;
    }
    const disjoint =
      m.k === 'ports'
        ? rangesDisjoint(m.ranges)
        : m.k === 'net'
          ? coveringMembers(m.nets).length === m.nets.length
          : false;
    if (!disjoint || variants.length * listed > MAX_EXPANSION) {
      for (const v of variants) v.push(m);
      continue;
    }
    const singles: Match[] =
      m.k === 'ports'
        ? m.ranges.map((r) => ({ k: 'ports', dir: m.dir, ranges: [r] }))
        : m.k === 'net'
          ? m.nets.map((n) => ({ k: 'net', dir: m.dir, nets: [n] }))
          : [m];
    variants = variants.flatMap((v) => singles.map((single) => [...v, single]));
  }
  return variants;
}

// Sets the verdict mark and returns from the policy chain: one rule in nft, Felix's two
// (set, then return if set) in iptables.
function markAndReturn(match: Match[], mark: number, comment: string, iptables: boolean): Rule[] {
  if (!iptables) return [{ match, action: { ...setMark(mark), then: { k: 'return' } } as Action }];
  return [
    { match, action: setMark(mark) },
    { match: [markSet(mark)], action: { k: 'return' }, comment },
  ];
}

function actionRules(action: string, match: Match[], ctx: RenderContext): Rule[] {
  const { marks, iptables } = ctx;
  switch (action) {
    case 'allow':
      return markAndReturn(match, marks.accept, 'Return if policy accepted', iptables);
    case 'next-tier':
    case 'pass':
      return markAndReturn(match, marks.pass, 'Return if policy passed', iptables);
    case 'deny':
      return [{ match, action: ctx.actions.filterDeny }];
    case 'log': {
      const limit = ctx.log?.rateLimit ? { rate: ctx.log.rateLimit, burst: ctx.log.burst } : undefined;
      return [{ match, action: { k: 'log', prefix: `${logPrefix(ctx.log?.prefix ?? '', ctx.owner)}: `, limit } }];
    }
    default:
      throw new Error(`unknown rule action "${action}"`);
  }
}

function rulesOf(rules: ProtoRule[], ctx: RenderContext): Rule[] {
  const out: Rule[] = [];
  for (const r of rules) out.push(...renderProtoRule(r, ctx));
  return out;
}

export interface NamedChain {
  name: string;
  rules: Rule[];
  /** A policy group's chain: endpoints share it, and it goes with the last of them. */
  shared?: boolean;
}

/** Named chains as a fragment's, in one table. */
export const chainsIn = <T extends string>(table: T, chains: NamedChain[]) =>
  chains.map((c) => ({ table, name: c.name, rules: c.rules, ...(c.shared ? { shared: true } : {}) }));

/** A policy's chains, named after Felix's PolicyID.ID() (`id`); the tier is not part of the name. */
export function policyChains(id: string, p: Policy, ctx: RenderContext, tier = ''): NamedChain[] {
  const kind = id.slice(0, id.indexOf('/'));
  const name = id.slice(kind.length + 1 + (p.namespace ? p.namespace.length + 1 : 0));
  ctx = { ...ctx, owner: { kind, name, namespace: p.namespace, tier } };
  return [
    {
      name: policyChain('in', felixPolicyId(id, tier, ctx.policyIds), ctx.iptables),
      rules: rulesOf(p.inboundRules, ctx),
    },
    {
      name: policyChain('out', felixPolicyId(id, tier, ctx.policyIds), ctx.iptables),
      rules: rulesOf(p.outboundRules, ctx),
    },
  ];
}

export function profileChains(name: string, p: Profile, ctx: RenderContext): NamedChain[] {
  ctx = { ...ctx, owner: { kind: 'pro', name, namespace: '', tier: '' } };
  return [
    { name: profileChain('in', name, ctx.iptables), rules: rulesOf(p.inboundRules, ctx) },
    { name: profileChain('out', name, ctx.iptables), rules: rulesOf(p.outboundRules, ctx) },
  ];
}
