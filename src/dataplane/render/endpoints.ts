// Endpoint chains, as Felix's rules/endpoints.go: conntrack first, then each tier (clear
// the pass mark, jump to each policy while nothing passed, return once one accepted, drop
// at the end of the tier unless its default action is Pass), then the profiles, then drop.
// Untracked and pre-DNAT host-endpoint chains only mark: the filter table decides later.
// A tier's policies are jumped to through their policy groups (policy-groups.ts).
import type { HostEndpoint, TierInfo, WorkloadEndpoint } from '../../proto/messages.js';
import { clearMark, markClear, markSet, setMark } from './blocks.js';
import type { Match, Rule, Verdict } from './model.js';
import { endpointChain, EP, felixPolicyId, policyChain, profileChain } from './names.js';
import { actionsIn, type NamedChain, type RenderContext } from './policy.js';
import { groupChainName, groupChainRules, groupPolicies, inlined, type SelectorOf } from './policy-groups.js';

export type EndpointContext = Pick<
  RenderContext,
  'marks' | 'iptables' | 'actions' | 'encapFromWorkloads' | 'policyIds'
> & {
  /** The active policies' selectors, which group them; without it every policy is jumped to directly. */
  selectorOf?: SelectorOf | undefined;
};

/** Group chains an endpoint's chains jump to, by name (one table's). */
type GroupChains = Map<string, Rule[]>;

type ChainKind = 'normal' | 'untracked' | 'preDnat' | 'forward';

interface EndpointChainSpec {
  name: string;
  dir: 'in' | 'out';
  kind: ChainKind;
  tiers: TierInfo[];
  profiles: string[];
  failsafe?: 'cali-failsafe-in' | 'cali-failsafe-out' | undefined;
  /** Workload egress: drop VXLAN and IPIP that would carry traffic around policy. */
  dropEncap?: boolean;
  /** What established flows get (the filter allow action unless said). */
  allow?: Verdict | undefined;
}

/**
 * Felix's appendConntrackRules: established flows allowed, invalid ones denied. An allow
 * that does not accept (RETURN) sets the accept bit first, so the caller still sees it.
 */
function conntrackRules(allow: Verdict, deny: Verdict, marks: EndpointContext['marks']): Rule[] {
  const established: Match = { k: 'ct', states: ['RELATED', 'ESTABLISHED'] };
  return [
    ...(allow.k === 'accept' ? [] : [{ match: [established], action: setMark(marks.accept) }]),
    { match: [established], action: allow },
    { match: [{ k: 'ct', states: ['INVALID'] }], action: deny },
  ];
}

/** Felix's comments name the deny action: "Drop ..." or "Reject ...". */
const denyWord = (v: Verdict) => (v.k === 'reject' ? 'Reject' : 'Drop');

// The chains a tier's rules jump to for its policies: each policy, or its group's chain.
function policyTargets(
  policies: readonly string[],
  dir: 'in' | 'out',
  tier: string,
  ctx: EndpointContext,
  groups: GroupChains,
): string[] {
  const chainOf = (id: string) => policyChain(dir, felixPolicyId(id, tier, ctx.policyIds), ctx.iptables);
  if (!ctx.selectorOf) return policies.map(chainOf);
  const targets: string[] = [];
  for (const g of groupPolicies(policies, dir, ctx.selectorOf, tier)) {
    if (inlined(g)) {
      targets.push(chainOf(g.policies[0] as string));
      continue;
    }
    const name = groupChainName(g, ctx.policyIds);
    if (!groups.has(name)) groups.set(name, groupChainRules(g, ctx.marks, ctx.iptables, ctx.policyIds));
    targets.push(name);
  }
  return targets;
}

/** The group chains, shared by every endpoint that uses them. */
const groupChains = (groups: GroupChains): NamedChain[] =>
  [...groups].map(([name, rules]) => ({ name, rules, shared: true }));

function endpointRules(spec: EndpointChainSpec, ctx: EndpointContext, groups: GroupChains): Rule[] {
  const { marks } = ctx;
  const deny = ctx.actions.filterDeny;
  const rules: Rule[] = [];
  if (spec.kind !== 'untracked') rules.push(...conntrackRules(spec.allow ?? ctx.actions.filterAllow, deny, marks));
  // Failsafes first, as Felix: they accept outright, so the order is only what `iptables-save` shows.
  if (spec.failsafe) rules.push({ match: [], action: { k: 'jump', chain: spec.failsafe } });
  rules.push({ match: [], action: clearMark(marks.accept | marks.pass) });
  if (spec.dropEncap) {
    const encap = ctx.encapFromWorkloads ?? { vxlanPort: 4789, allowVxlan: false, allowIpip: false };
    const port = encap.vxlanPort;
    if (!encap.allowVxlan)
      rules.push({
        match: [
          { k: 'proto', proto: 17 },
          { k: 'ports', dir: 'dst', ranges: [{ first: port, last: port }] },
        ],
        action: deny,
        comment: `${denyWord(deny)} VXLAN encapped packets originating in workloads`,
      });
    if (!encap.allowIpip)
      rules.push({
        match: [{ k: 'proto', proto: 4 }],
        action: deny,
        comment: `${denyWord(deny)} IPinIP encapped packets originating in workloads`,
      });
  }
  for (const tier of spec.tiers) {
    const policies = spec.dir === 'in' ? tier.ingressPolicies : tier.egressPolicies;
    if (!policies.length) continue;
    rules.push({ match: [], action: clearMark(marks.pass), comment: `Start of tier ${tier.name}` });
    for (const chain of policyTargets(policies, spec.dir, tier.name, ctx, groups)) {
      rules.push({ match: [markClear(marks.pass)], action: { k: 'jump', chain } });
      if (spec.kind === 'untracked') rules.push({ match: [markSet(marks.accept)], action: { k: 'notrack' } });
      rules.push({ match: [markSet(marks.accept)], action: { k: 'return' }, comment: 'Return if policy accepted' });
    }
    if ((spec.kind === 'normal' || spec.kind === 'forward') && tier.defaultAction !== 'Pass') {
      rules.push({
        match: [markClear(marks.pass)],
        action: deny,
        comment: `${denyWord(deny)} if no policies passed packet`,
      });
    }
  }
  if (
    spec.kind === 'forward' &&
    !spec.tiers.some((t) => (spec.dir === 'in' ? t.ingressPolicies : t.egressPolicies).length)
  ) {
    rules.push({
      match: [],
      action: { k: 'setMark', mark: marks.accept, mask: marks.accept },
      comment: 'Allow forwarded traffic by default',
    });
    rules.push({ match: [], action: { k: 'return' }, comment: 'Return for accepted forward traffic' });
  }
  if (spec.kind === 'normal') {
    for (const p of spec.profiles) {
      rules.push({ match: [], action: { k: 'jump', chain: profileChain(spec.dir, p, ctx.iptables) } });
      rules.push({ match: [markSet(marks.accept)], action: { k: 'return' }, comment: 'Return if profile accepted' });
    }
    rules.push({ match: [], action: deny, comment: `${denyWord(deny)} if no profiles matched` });
  }
  return rules;
}

/** cali-tw-<iface> (ingress policy) and cali-fw-<iface> (egress); a non-active endpoint only drops. */
export function workloadChains(ep: WorkloadEndpoint, ctx: EndpointContext): NamedChain[] {
  const tw = endpointChain(EP.toWl, ep.name, ctx.iptables);
  const fw = endpointChain(EP.fromWl, ep.name, ctx.iptables);
  if (ep.state !== 'active') {
    const drop: Rule[] = [{ match: [], action: ctx.actions.filterDeny, comment: 'Endpoint admin disabled' }];
    return [
      { name: tw, rules: drop },
      { name: fw, rules: drop },
    ];
  }
  const groups: GroupChains = new Map();
  return [
    {
      name: tw,
      rules: endpointRules(
        { name: tw, dir: 'in', kind: 'normal', tiers: ep.tiers, profiles: ep.profileIds },
        ctx,
        groups,
      ),
    },
    {
      name: fw,
      rules: endpointRules(
        { name: fw, dir: 'out', kind: 'normal', tiers: ep.tiers, profiles: ep.profileIds, dropEncap: true },
        ctx,
        groups,
      ),
    },
    ...groupChains(groups),
  ];
}

export interface HostEndpointChains {
  filter: NamedChain[];
  raw: NamedChain[];
  mangle: NamedChain[];
}

/**
 * A host endpoint's chains: filter (cali-fh-/cali-th- with failsafes, and the forward pair
 * cali-fhfw-/cali-thfw-), raw (untracked tiers) and mangle: pre-DNAT ingress (cali-fh-,
 * when it has such tiers) and, always, the normal egress policy again (cali-th-) for host
 * traffic that was DNATed, which mangle cali-POSTROUTING sends it. That one returns
 * instead of accepting, as Felix's HostEndpointToMangleEgressChains: mangle is where other
 * programs change packets that allowed traffic may still need changed.
 */
export function hostEndpointChains(ep: HostEndpoint, ctx: EndpointContext): HostEndpointChains {
  const n = ep.name;
  // A table's chains jump to that table's own group chains, and deny as that table can
  // (no REJECT outside filter: Felix's policy chains in raw and mangle drop).
  const specIn = (table: 'filter' | 'raw' | 'mangle') => {
    const groups: GroupChains = new Map();
    const c = { ...ctx, actions: actionsIn(ctx.actions, table) };
    const spec = (
      prefix: string,
      dir: 'in' | 'out',
      kind: ChainKind,
      tiers: TierInfo[],
      failsafe?: EndpointChainSpec['failsafe'],
      allow?: Verdict,
    ): NamedChain => {
      const name = endpointChain(prefix, n, ctx.iptables);
      const profiles = ep.profileIds;
      return { name, rules: endpointRules({ name, dir, kind, tiers, profiles, failsafe, allow }, c, groups) };
    };
    return { spec, groups: () => groupChains(groups) };
  };
  const f = specIn('filter');
  const filter = [
    f.spec(EP.fromHost, 'in', 'normal', ep.tiers, 'cali-failsafe-in'),
    f.spec(EP.toHost, 'out', 'normal', ep.tiers, 'cali-failsafe-out'),
    f.spec(EP.fromHostFwd, 'in', 'forward', ep.forwardTiers),
    f.spec(EP.toHostFwd, 'out', 'forward', ep.forwardTiers),
  ];
  const r = specIn('raw');
  const raw = ep.untrackedTiers.length
    ? [
        r.spec(EP.fromHost, 'in', 'untracked', ep.untrackedTiers, 'cali-failsafe-in'),
        r.spec(EP.toHost, 'out', 'untracked', ep.untrackedTiers, 'cali-failsafe-out'),
      ]
    : [];
  const m = specIn('mangle');
  const mangle = [
    ...(ep.preDnatTiers.length
      ? [m.spec(EP.fromHost, 'in', 'preDnat', ep.preDnatTiers, 'cali-failsafe-in', ctx.actions.mangleAllow)]
      : []),
    m.spec(EP.toHost, 'out', 'normal', ep.tiers, 'cali-failsafe-out', { k: 'return' }),
  ];
  return {
    filter: [...filter, ...f.groups()],
    raw: [...raw, ...r.groups()],
    mangle: [...mangle, ...m.groups()],
  };
}
