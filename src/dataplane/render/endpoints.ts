// Endpoint chains, as Felix's rules/endpoints.go: conntrack first, then each tier (clear
// the pass mark, jump to each policy while nothing passed, return once one accepted, drop
// at the end of the tier unless its default action is Pass), then the profiles, then drop.
// Untracked and pre-DNAT host-endpoint chains only mark: the filter table decides later.
// A tier's policies are jumped to through their policy groups (policy-groups.ts).
import type { HostEndpoint, TierInfo, WorkloadEndpoint } from '../../proto/messages.js';
import { clearMark, markClear, markSet } from './blocks.js';
import type { Rule, Verdict } from './model.js';
import { endpointChain, EP, felixPolicyId, policyChain, profileChain } from './names.js';
import type { FilterActions, NamedChain, RenderContext } from './policy.js';
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
}

export const conntrackRules = (actions: FilterActions): Rule[] => [
  { match: [{ k: 'ct', states: ['RELATED', 'ESTABLISHED'] }], action: actions.filterAllow },
  { match: [{ k: 'ct', states: ['INVALID'] }], action: actions.filterDeny },
];

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
  if (spec.kind === 'normal' || spec.kind === 'forward') rules.push(...conntrackRules(ctx.actions));
  rules.push({ match: [], action: clearMark(marks.accept | marks.pass) });
  if (spec.failsafe) rules.push({ match: [], action: { k: 'jump', chain: spec.failsafe } });
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
 * cali-fhfw-/cali-thfw-), raw (untracked tiers) and mangle (pre-DNAT, ingress only).
 */
export function hostEndpointChains(ep: HostEndpoint, ctx: EndpointContext): HostEndpointChains {
  const n = ep.name;
  // A table's group chains: the endpoint's chains in filter, raw and mangle each jump to their own.
  const filterGroups: GroupChains = new Map();
  const rawGroups: GroupChains = new Map();
  const mangleGroups: GroupChains = new Map();
  const spec = (
    prefix: string,
    dir: 'in' | 'out',
    kind: ChainKind,
    tiers: TierInfo[],
    groups: GroupChains,
    failsafe?: EndpointChainSpec['failsafe'],
  ): NamedChain => {
    const name = endpointChain(prefix, n, ctx.iptables);
    return { name, rules: endpointRules({ name, dir, kind, tiers, profiles: ep.profileIds, failsafe }, ctx, groups) };
  };
  const filter = [
    spec(EP.fromHost, 'in', 'normal', ep.tiers, filterGroups, 'cali-failsafe-in'),
    spec(EP.toHost, 'out', 'normal', ep.tiers, filterGroups, 'cali-failsafe-out'),
    spec(EP.fromHostFwd, 'in', 'forward', ep.forwardTiers, filterGroups),
    spec(EP.toHostFwd, 'out', 'forward', ep.forwardTiers, filterGroups),
  ];
  const raw = ep.untrackedTiers.length
    ? [
        spec(EP.fromHost, 'in', 'untracked', ep.untrackedTiers, rawGroups, 'cali-failsafe-in'),
        spec(EP.toHost, 'out', 'untracked', ep.untrackedTiers, rawGroups, 'cali-failsafe-out'),
      ]
    : [];
  const mangle = ep.preDnatTiers.length
    ? [spec(EP.fromHost, 'in', 'preDnat', ep.preDnatTiers, mangleGroups, 'cali-failsafe-in')]
    : [];
  return {
    filter: [...filter, ...groupChains(filterGroups)],
    raw: [...raw, ...groupChains(rawGroups)],
    mangle: [...mangle, ...groupChains(mangleGroups)],
  };
}
