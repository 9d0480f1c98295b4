// Host endpoints resolved to interfaces as Felix's endpoint manager resolves them: each
// host interface (not a workload's) takes the host endpoint that names it, or else one
// whose expectedIPs include one of its addresses (the smallest endpoint ID when several
// match); an all-interfaces endpoint (`interfaceName: "*"`, the smallest ID if several)
// becomes the default of the host dispatch chains, under the chain suffix
// "any-interface-at-all". The dispatch chains themselves are rendered here with that
// default, so they change with the resolution. Without the host's interfaces (`palisade
// plan`), every named interface is taken as present and an endpoint with only expectedIPs
// resolves to nothing.
import { endpointSetMark } from './kube-ipvs.js';
import type { HostEndpoint, Policy, Profile } from '../../proto/messages.js';
import { policyKey } from '../desired-state.js';
import { hostEndpointChains } from './endpoints.js';
import type { Rule, TableName, Verdict } from './model.js';
import { endpointChain, EP, felixPolicyId, policyChain, profileChain } from './names.js';
import { actionsIn, chainsIn, policyChains, profileChains, type RenderContext } from './policy.js';
import type { SelectorOf } from './policy-groups.js';
import type { Fragment } from './ruleset.js';
import { DISPATCH } from './static.js';

export const ALL_INTERFACES = 'any-interface-at-all';

export interface HostEndpointResolution {
  /** Interface -> host endpoint ID. */
  byIface: Map<string, string>;
  /** The all-interfaces endpoint's ID, if one applies. */
  wildcard?: string | undefined;
}

/** An address without its prefix length (the interface table's addresses carry one). */
export const bare = (addr: string) => addr.replace(/\/\d+$/, '');

/**
 * `hostIfaces`: the host's interfaces (workload interfaces left out) and their addresses;
 * undefined when they are not known.
 */
export function resolveHostEndpoints(
  heps: ReadonlyMap<string, HostEndpoint>,
  hostIfaces: ReadonlyMap<string, readonly string[]> | undefined,
): HostEndpointResolution {
  const ids = [...heps.keys()].sort();
  const out: HostEndpointResolution = { byIface: new Map() };
  out.wildcard = ids.find((id) => heps.get(id)?.name === '*');
  const ifaces =
    hostIfaces ??
    new Map(
      ids
        .map((id) => heps.get(id)?.name ?? '')
        .filter((n) => n && n !== '*')
        .map((n) => [n, [] as string[]]),
    );
  for (const [iface, addrs] of ifaces) {
    const have = new Set(addrs.map(bare));
    const best = ids.find((id) => {
      const ep = heps.get(id) as HostEndpoint;
      if (ep.name === '*') return false;
      if (ep.name) return ep.name === iface;
      return [...ep.expectedIpv4Addrs, ...ep.expectedIpv6Addrs].some((a) => have.has(bare(a)));
    });
    if (best !== undefined) out.byIface.set(iface, best);
  }
  return out;
}

const gotoIn =
  (ctx: Pick<RenderContext, 'iptables'>) =>
  (prefix: string, iface: string): Verdict => ({ k: 'goto', chain: endpointChain(prefix, iface, ctx.iptables) });

/**
 * The host dispatch chains: the map lookup, then (with an all-interfaces endpoint) its chains as the default, as
 * Felix's hostDispatchChains.
 */
function dispatchChains(
  wildcard: HostEndpoint | undefined,
  prefixes: readonly string[],
  preDnat: boolean,
  ctx: RenderContext,
) {
  const goto = gotoIn(ctx);
  const lookup = (iface: 'in' | 'out', map: string): Rule => ({ match: [], action: { k: 'vmap', iface, map } });
  const def = (prefix: string): Rule[] => (wildcard ? [{ match: [], action: goto(prefix, ALL_INTERFACES) }] : []);
  // Never the wildcard endpoint's egress policy for traffic to a local workload. Only mangle
  // needs it (Felix's ToHostDispatchChains): filter cali-OUTPUT returns such traffic first.
  const skipWorkloads: Rule[] = wildcard
    ? prefixes.map((p) => ({
        match: [{ k: 'iface', dir: 'out', name: `${p}+` }],
        action: { k: 'return' },
        comment: 'Skip egress WHEP policy for traffic to local workload',
      }))
    : [];
  const chains: Array<{ table: TableName; name: string; rules: Rule[] }> = [
    { table: 'filter', name: DISPATCH.fromHost, rules: [lookup('in', DISPATCH.fromHost), ...def(EP.fromHost)] },
    {
      table: 'filter',
      name: DISPATCH.toHost,
      rules: [lookup('out', DISPATCH.toHost), ...def(EP.toHost)],
    },
    {
      table: 'filter',
      name: DISPATCH.fromHostFwd,
      rules: [lookup('in', DISPATCH.fromHostFwd), ...def(EP.fromHostFwd)],
    },
    { table: 'filter', name: DISPATCH.toHostFwd, rules: [lookup('out', DISPATCH.toHostFwd), ...def(EP.toHostFwd)] },
    // Felix does not apply untracked policy through an all-interfaces endpoint.
    { table: 'raw', name: DISPATCH.fromHost, rules: [lookup('in', DISPATCH.fromHost)] },
    { table: 'raw', name: DISPATCH.toHost, rules: [lookup('out', DISPATCH.toHost)] },
    {
      table: 'mangle',
      name: DISPATCH.fromHost,
      rules: [lookup('in', DISPATCH.fromHost), ...(preDnat ? def(EP.fromHost) : [])],
    },
    {
      table: 'mangle',
      name: DISPATCH.toHost,
      rules: [lookup('out', DISPATCH.toHost), ...skipWorkloads, ...def(EP.toHost)],
    },
  ];
  return chains;
}

/**
 * One endpoint's chains under `iface`, and its dispatch entries (none for the all-interfaces name, which is the default
 * instead).
 */
function endpointFragment(
  ep: HostEndpoint,
  iface: string,
  ctx: RenderContext,
  wildcard: boolean,
  selectorOf: SelectorOf | undefined,
): Fragment {
  const goto = gotoIn(ctx);
  const c = hostEndpointChains({ ...ep, name: iface }, { ...ctx, selectorOf });
  // Felix: no untracked policy for an all-interfaces endpoint.
  const raw = wildcard ? [] : c.raw;
  const f: Fragment = {
    chains: [...chainsIn('filter', c.filter), ...chainsIn('raw', raw), ...chainsIn('mangle', c.mangle)],
    entries: [],
  };
  if (wildcard) return f;
  for (const [map, prefix] of [
    [DISPATCH.fromHost, EP.fromHost],
    [DISPATCH.toHost, EP.toHost],
    [DISPATCH.fromHostFwd, EP.fromHostFwd],
    [DISPATCH.toHostFwd, EP.toHostFwd],
  ] as const) {
    f.entries.push({ table: 'filter', map, iface, verdict: goto(prefix, iface) });
  }
  if (raw.length) {
    f.entries.push({ table: 'raw', map: DISPATCH.fromHost, iface, verdict: goto(EP.fromHost, iface) });
    f.entries.push({ table: 'raw', map: DISPATCH.toHost, iface, verdict: goto(EP.toHost, iface) });
  }
  if (ep.preDnatTiers.length)
    f.entries.push({ table: 'mangle', map: DISPATCH.fromHost, iface, verdict: goto(EP.fromHost, iface) });
  f.entries.push({ table: 'mangle', map: DISPATCH.toHost, iface, verdict: goto(EP.toHost, iface) });
  const mark = endpointSetMark(iface, ctx);
  f.chains.push(...mark.chains);
  f.entries.push(...mark.entries);
  return f;
}

/** The policies (by the desired state's policyKey) and profiles the host endpoints' egress chains jump to. */
export interface HostEgressSources {
  policies: Map<string, { tier: string; name: string }>;
  profiles: Set<string>;
}

/** What the active host endpoints' normal egress policy uses (the mangle egress chains need it in mangle too). */
export function hostEgressSources(
  heps: ReadonlyMap<string, HostEndpoint>,
  resolution: HostEndpointResolution,
): HostEgressSources {
  const out: HostEgressSources = { policies: new Map(), profiles: new Set() };
  const ids = new Set([
    ...resolution.byIface.values(),
    ...(resolution.wildcard === undefined ? [] : [resolution.wildcard]),
  ]);
  for (const id of ids) {
    const ep = heps.get(id);
    if (!ep) continue;
    for (const t of ep.tiers)
      for (const name of t.egressPolicies) out.policies.set(policyKey({ tier: t.name, name }), { tier: t.name, name });
    for (const p of ep.profileIds) out.profiles.add(p);
  }
  return out;
}

/** Looks up what hostEgressSources() names. */
export interface PolicyLookup {
  policy(key: string): { name: string; tier: string; policy: Policy } | undefined;
  profile(name: string): Profile | undefined;
}

/**
 * The egress chains of the policies and profiles the mangle egress chains jump to, in mangle
 * (Felix writes every policy into every table and programs what is referenced). One gone
 * from the state meanwhile is an empty chain: nothing matches, so the tier's drop applies.
 */
function mangleEgressPolicies(
  sources: HostEgressSources,
  lookup: PolicyLookup,
  ctx: RenderContext,
): Fragment['chains'] {
  const c = { ...ctx, actions: actionsIn(ctx.actions, 'mangle') };
  const chains: Fragment['chains'] = [];
  for (const [key, { tier, name }] of sources.policies) {
    const p = lookup.policy(key);
    const out = p ? policyChains(p.name, p.policy, c, p.tier)[1] : undefined;
    const chain = out?.name ?? policyChain('out', felixPolicyId(name, tier, ctx.policyIds), ctx.iptables);
    chains.push({ table: 'mangle', name: chain, rules: out?.rules ?? [] });
  }
  for (const name of sources.profiles) {
    const p = lookup.profile(name);
    const out = p ? profileChains(name, p, c)[1] : undefined;
    chains.push({ table: 'mangle', name: profileChain('out', name, ctx.iptables), rules: out?.rules ?? [] });
  }
  return chains;
}

/** Every host endpoint's chains and dispatch entries, and the host dispatch chains, for one resolution. */
export function hostEndpointsFragment(
  heps: ReadonlyMap<string, HostEndpoint>,
  resolution: HostEndpointResolution,
  ctx: RenderContext,
  workloadPrefixes: readonly string[],
  selectorOf: SelectorOf | undefined,
  lookup: PolicyLookup,
): Fragment {
  const f: Fragment = { chains: [], entries: [] };
  f.chains.push(...mangleEgressPolicies(hostEgressSources(heps, resolution), lookup, ctx));
  const add = (g: Fragment) => {
    f.chains.push(...g.chains);
    f.entries.push(...g.entries);
  };
  for (const [iface, id] of [...resolution.byIface].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    add(endpointFragment(heps.get(id) as HostEndpoint, iface, ctx, false, selectorOf));
  const wild = resolution.wildcard !== undefined ? heps.get(resolution.wildcard) : undefined;
  if (wild) add(endpointFragment(wild, ALL_INTERFACES, ctx, true, selectorOf));
  const preDnat = !!wild && wild.preDnatTiers.length > 0;
  f.chains.push(...dispatchChains(wild, workloadPrefixes, preDnat, ctx));
  return f;
}
