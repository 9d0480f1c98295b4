// Renders the desired state into one Ruleset per IP family: static chains, one chain pair
// per active policy and profile, endpoint chains with their dispatch entries, IP sets
// (each calc-graph set becomes cali40<id> and cali60<id>, members split by family) and the
// IP-pool sets NAT uses.
import { encapsulation } from '../../model/encapsulation.js';
import type { Config } from '../../config/params.js';
import { type ReleaseTraits, releaseOf, traitsOf } from '../../model/release.js';
import type { IPAMPool, Policy, Profile, WorkloadEndpoint } from '../../proto/messages.js';
import type { DesiredIPSet, DesiredState } from '../desired-state.js';
import { IPIP_DEVICE, VXLAN_DEVICE, VXLAN_DEVICE_V6 } from '../device-names.js';
import { workloadChains } from './endpoints.js';
import { bare, hostEndpointsFragment, type PolicyLookup, resolveHostEndpoints } from './host-endpoints.js';
import { allocateMarks } from './marks.js';
import type { SelectorOf } from './policy-groups.js';
import {
  addChain,
  emptyRuleset,
  type Family,
  type IPSet,
  type Rule,
  type Ruleset,
  type TableName,
  type Verdict,
} from './model.js';
import { endpointChain, EP, ipSetName } from './names.js';
import { actionsIn, chainsIn, type FilterActions, policyChains, profileChains, type RenderContext } from './policy.js';
import {
  addStaticChains,
  ALL_HOSTS_SET,
  ALL_VXLAN_SET,
  CIDR_BLOCK,
  cidrBlockChain,
  DISPATCH,
  FIP_DNAT,
  FIP_SNAT,
  MASQ_POOLS_SET,
  NAT_OUTGOING,
  natOutgoingChain,
  type Overlay,
  overlayChains,
  RPF_SKIP,
  type StaticOptions,
  IPVS,
  THIS_HOST_SET,
} from './static.js';
import { EndpointMarkMapper } from './endpoint-marks.js';
import { addIpvsChains, type EndpointNames, endpointSetMark, fromEndpointMark } from './kube-ipvs.js';

type AllPoolsSet = ReleaseTraits['allPoolsSet'];

export type RenderConfig = Pick<
  Config,
  | 'WorkloadSourceSpoofing'
  | 'NATOutgoingAddress'
  | 'NATPortRange'
  | 'NATOutgoingExclusions'
  | 'IptablesNATOutgoingInterfaceFilter'
  | 'ServiceLoopPrevention'
  | 'FloatingIPs'
  | 'IptablesMarkMask'
  | 'NftablesMarkMask'
  | 'IptablesFilterAllowAction'
  | 'IptablesMangleAllowAction'
  | 'IptablesFilterDenyAction'
  | 'NftablesFilterAllowAction'
  | 'NftablesMangleAllowAction'
  | 'NftablesFilterDenyAction'
  | 'VXLANEnabled'
  | 'VXLANPort'
  | 'IpInIpEnabled'
  | 'ExternalNodesCIDRList'
  | 'AllowVXLANPacketsFromWorkloads'
  | 'AllowIPIPPacketsFromWorkloads'
  | 'LogPrefix'
  | 'LogActionRateLimit'
  | 'LogActionRateLimitBurst'
  | 'InterfacePrefix'
  | 'DefaultEndpointToHostAction'
  | 'FailsafeInboundHostPorts'
  | 'FailsafeOutboundHostPorts'
  | 'Ipv6Support'
> &
  Partial<
    Pick<
      Config,
      | 'CalicoVersion'
      | 'FelixHostname'
      | 'WireguardEnabled'
      | 'WireguardEnabledV6'
      | 'WireguardListeningPort'
      | 'WireguardListeningPortV6'
      | 'WireguardInterfaceName'
      | 'WireguardInterfaceNameV6'
      | 'WireguardHostEncryptionEnabled'
      | 'IpInIpTunnelAddr'
      | 'IPv4VXLANTunnelAddr'
      | 'IPv6VXLANTunnelAddr'
      | 'KubeIPVSSupport'
      | 'KubeNodePortRanges'
    >
  >;

/** Felix's KubeIPVSSupportEnabled, once the agent has resolved Auto (agent/kube-proxy-ipvs.ts). */
export const ipvsOn = (config: Pick<RenderConfig, 'KubeIPVSSupport'>) => config.KubeIPVSSupport === 'Enabled';

/** Members are CIDRs or "addr,proto:port": the address part tells the family. */
function isV6(member: string): boolean {
  const comma = member.indexOf(',');
  return (comma < 0 ? member : member.slice(0, comma)).includes(':');
}

export function familyMembers(members: Iterable<string>, family: Family): string[] {
  const out: string[] = [];
  for (const m of members) if (isV6(m) === (family === 6)) out.push(m);
  return out;
}

export type Style = 'nftables' | 'iptables';

/** What one source (a policy, an endpoint...) contributes: chains and dispatch entries. */
export interface Fragment {
  /** `shared`: a policy group's chain, which other fragments may hold too (same name, same rules). */
  chains: Array<{ table: TableName; name: string; rules: Rule[]; shared?: boolean }>;
  entries: Array<{ table: TableName; map: string; iface: string; verdict: Verdict }>;
}

/**
 * As Felix's MarkMask(): nftables mode takes its mark bits from NftablesMarkMask, iptables mode from IptablesMarkMask.
 */
export function contextOf(config: RenderConfig, family: Family, style: Style): RenderContext {
  const mask = style === 'iptables' ? config.IptablesMarkMask : config.NftablesMarkMask;
  const log = { prefix: config.LogPrefix, rateLimit: config.LogActionRateLimit, burst: config.LogActionRateLimitBurst };
  const encapFromWorkloads = {
    vxlanPort: config.VXLANPort,
    allowVxlan: config.AllowVXLANPacketsFromWorkloads,
    allowIpip: config.AllowIPIPPacketsFromWorkloads,
  };
  const ipvs = ipvsOn(config);
  const marks = allocateMarks(mask, !!(config.WireguardEnabled || config.WireguardEnabledV6), ipvs);
  return {
    family,
    marks,
    ...(ipvs ? { endpointMarks: new EndpointMarkMapper(marks.endpoint) } : {}),
    iptables: style === 'iptables',
    log,
    actions: filterActions(config, style),
    spoofing: config.WorkloadSourceSpoofing === 'Any',
    floatingIps: config.FloatingIPs === 'Enabled',
    encapFromWorkloads,
    policyIds: traitsOf(releaseOf(config.CalicoVersion ?? '')).policyIds,
  };
}

/**
 * As Felix's FilterAllowAction()/MangleAllowAction()/FilterDenyAction(): the Nftables* parameters in nftables mode, the
 * Iptables* ones in iptables mode.
 */
function filterActions(config: RenderConfig, style: Style): FilterActions {
  const nft = style === 'nftables';
  const allow = (v: string): Verdict => (v === 'RETURN' ? { k: 'return' } : { k: 'accept' });
  return {
    filterAllow: allow(nft ? config.NftablesFilterAllowAction : config.IptablesFilterAllowAction),
    mangleAllow: allow(nft ? config.NftablesMangleAllowAction : config.IptablesMangleAllowAction),
    filterDeny:
      (nft ? config.NftablesFilterDenyAction : config.IptablesFilterDenyAction) === 'REJECT'
        ? { k: 'reject' }
        : { k: 'drop' },
  };
}

function staticOptions(config: RenderConfig, ctx: RenderContext): StaticOptions {
  return {
    family: ctx.family,
    marks: ctx.marks,
    interfacePrefixes: config.InterfacePrefix,
    defaultEndpointToHostAction: config.DefaultEndpointToHostAction,
    actions: ctx.actions,
    natOutgoing: {
      address: config.NATOutgoingAddress,
      ports: config.NATPortRange,
      excludeHosts: config.NATOutgoingExclusions === 'IPPoolsAndHostIPs',
      iface: config.IptablesNATOutgoingInterfaceFilter,
    },
    failsafeIn: config.FailsafeInboundHostPorts,
    failsafeOut: config.FailsafeOutboundHostPorts,
    allPoolsSet: allPoolsSetOf(config),
    ...(ipvsOn(config) ? { ipvs: { nodePorts: config.KubeNodePortRanges ?? [] } } : {}),
  };
}

/** The release's set of all pools, which NAT outgoing does not masquerade to. */
export function allPoolsSetOf(config: Pick<RenderConfig, 'CalicoVersion'>): AllPoolsSet {
  return traitsOf(releaseOf(config.CalicoVersion ?? '')).allPoolsSet;
}

/** Static chains, hooks and the empty dispatch maps. */
export function staticRuleset(config: RenderConfig, ctx: RenderContext): Ruleset {
  const rs = emptyRuleset(ctx.family);
  const o = staticOptions(config, ctx);
  addStaticChains(rs, o);
  if (o.ipvs) addIpvsChains(rs, { ...o, nodePorts: o.ipvs.nodePorts });
  return rs;
}

type OverlayState = Pick<DesiredState, 'overlayPools' | 'vtepParents' | 'hostAddrs' | 'hostAddrsV6'>;

/**
 * Which overlays are on for this family, as their managers decide (`encapsulation`):
 * VXLANEnabled / IpInIpEnabled or an IPv4 pool using them; IPv6 VXLAN from IPv6 pools,
 * while IPv6 is programmed at all.
 */
export function overlayOf(state: Pick<OverlayState, 'overlayPools'>, config: RenderConfig, family: Family): Overlay {
  const e = encapsulation(config, state.overlayPools);
  const wg = wireguardOf(config);
  if (family === 6) {
    const vxlan = !!config.Ipv6Support && e.vxlanV6;
    return {
      ...(vxlan ? { vxlanPort: config.VXLANPort } : {}),
      ...(config.WireguardEnabledV6 ? { wireguardPort: config.WireguardListeningPortV6 } : {}),
      ...wg,
      ...tunnels([
        [vxlan && !!config.IPv6VXLANTunnelAddr, VXLAN_DEVICE_V6],
        [!!config.WireguardEnabledV6, config.WireguardInterfaceNameV6 ?? ''],
      ]),
    };
  }
  return {
    ...(e.vxlan ? { vxlanPort: config.VXLANPort } : {}),
    ...(e.ipip ? { ipip: true } : {}),
    ...(config.WireguardEnabled ? { wireguardPort: config.WireguardListeningPort } : {}),
    ...wg,
    ...tunnels([
      [e.ipip && !!config.IpInIpTunnelAddr, IPIP_DEVICE],
      [e.vxlan && !!config.IPv4VXLANTunnelAddr, VXLAN_DEVICE],
      [!!config.WireguardEnabled, config.WireguardInterfaceName ?? ''],
    ]),
  };
}

/**
 * Felix's tunnelIfaces, in its order: an overlay's device once this node has its tunnel
 * address (calico-node allocates it; a change restarts the agent), WireGuard's while it is on.
 */
function tunnels(candidates: Array<[boolean, string]>): Overlay {
  const devices = candidates.filter(([on, name]) => on && name !== '').map(([, name]) => name);
  return devices.length ? { tunnelDevices: devices } : {};
}

/** Host encryption's devices, for the raw incoming-mark chain (both families' devices, as Felix's). */
function wireguardOf(config: RenderConfig): Overlay {
  if (!config.WireguardHostEncryptionEnabled || !(config.WireguardEnabled || config.WireguardEnabledV6)) return {};
  return { wireguardHostDevices: [config.WireguardInterfaceName ?? '', config.WireguardInterfaceNameV6 ?? ''] };
}

/** cali-INPUT and cali-OUTPUT (filter and raw) with the overlays' rules: they replace the static ones. */
export function overlayFragment(
  state: Pick<OverlayState, 'overlayPools'>,
  config: RenderConfig,
  ctx: RenderContext,
): Fragment {
  return {
    chains: overlayChains(staticOptions(config, ctx), overlayOf(state, config, ctx.family)),
    entries: [],
  };
}

/** Felix's masqManager: cali-nat-outgoing's rules while the family has a natOutgoing pool. */
export function natOutgoingFragment(pools: Iterable<IPAMPool>, config: RenderConfig, ctx: RenderContext): Fragment {
  const active = [...pools].some((p) => p.masquerade && isV6(p.cidr) === (ctx.family === 6));
  return {
    chains: [{ table: 'nat', name: NAT_OUTGOING, rules: natOutgoingChain(staticOptions(config, ctx), active) }],
    entries: [],
  };
}

/** Felix's serviceLoopManager: cali-cidr-block with the family's service CIDRs. */
export function cidrBlockFragment(
  state: Pick<DesiredState, 'serviceCidrs'>,
  config: RenderConfig,
  ctx: RenderContext,
): Fragment {
  const rules = cidrBlockChain(state.serviceCidrs, ctx.family, config.ServiceLoopPrevention);
  return { chains: [{ table: 'filter', name: CIDR_BLOCK, rules }], entries: [] };
}

/**
 * The overlays' sets, each while its overlay is on (undefined otherwise, so it goes):
 * all-vxlan-net (the other nodes' VTEPs' underlay addresses) and all-hosts-net (every node's address
 * and ExternalNodesCIDRList, the sources IPIP is accepted from).
 */
export function overlaySets(
  state: OverlayState,
  config: RenderConfig,
  family: Family,
): Array<{ name: string; set: IPSet | undefined }> {
  const o = overlayOf(state, config, family);
  const set = (id: string, on: boolean, members: string[]) => {
    const name = ipSetName(family, id);
    return { name, set: on ? { name, kind: 'net' as const, members: [...new Set(members)].sort() } : undefined };
  };
  // Other nodes' VTEPs only, as Felix's vxlanManager (it keeps the local one apart): VXLAN
  // claiming to come from this node's own address is not let in.
  const vteps = [...state.vtepParents]
    .filter(([node]) => node !== config.FelixHostname)
    .map(([, p]) => (family === 4 ? p.v4 : p.v6))
    .filter((a) => a !== '');
  // As Felix's hostsIPSetManager: IPIP's sources, and what NATOutgoingExclusions
  // IPPoolsAndHostIPs leaves alone (IPv6 too, without ExternalNodesCIDRList).
  const hosts =
    family === 4
      ? [...state.hostAddrs.values(), ...familyMembers(config.ExternalNodesCIDRList, family)]
      : [...state.hostAddrsV6.values()];
  const hostsOn = !!o.ipip || config.NATOutgoingExclusions === 'IPPoolsAndHostIPs';
  return [set(ALL_VXLAN_SET, o.vxlanPort !== undefined, vteps), set(ALL_HOSTS_SET, hostsOn, hosts)];
}

const goto = (prefix: string, iface: string, ctx: RenderContext): Verdict => ({
  k: 'goto',
  chain: endpointChain(prefix, iface, ctx.iptables),
});

// Untracked and pre-DNAT policies only ever run from raw / mangle host-endpoint chains.
export function policyFragment(id: string, tier: string, policy: Policy, ctx: RenderContext): Fragment {
  const table: TableName = policy.untracked ? 'raw' : policy.preDnat ? 'mangle' : 'filter';
  return {
    chains: chainsIn(table, policyChains(id, policy, { ...ctx, actions: actionsIn(ctx.actions, table) }, tier)),
    entries: [],
  };
}

export function profileFragment(name: string, profile: Profile, ctx: RenderContext): Fragment {
  return { chains: chainsIn('filter', profileChains(name, profile, ctx)), entries: [] };
}

/**
 * Felix's cali-rpf-skip: each workload's allowSpoofedSourcePrefixes (with
 * WorkloadSourceSpoofing Any) accepted in raw before the reverse-path check. One fragment
 * for all workloads, re-rendered when any changes.
 */
export function rpfSkipFragment(weps: Iterable<WorkloadEndpoint>, ctx: RenderContext): Fragment {
  const rules: Rule[] = [];
  if (ctx.spoofing) {
    for (const ep of [...weps].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      for (const p of familyMembers(ep.allowSpoofedSourcePrefixes, ctx.family)) {
        rules.push({
          match: [
            { k: 'iface', dir: 'in', name: ep.name },
            { k: 'net', dir: 'src', nets: [p] },
          ],
          action: { k: 'accept' },
        });
      }
    }
  }
  return { chains: [{ table: 'raw', name: RPF_SKIP, rules }], entries: [] };
}

/**
 * Felix's floating IPs: each workload's ipNATs (external -> internal address) as DNAT in
 * cali-fip-dnat and SNAT back in cali-fip-snat; programmed when FloatingIPs is Enabled,
 * as Felix's floating-IP manager. One fragment for all workloads.
 */
export function floatingIpFragment(weps: Iterable<WorkloadEndpoint>, ctx: RenderContext): Fragment {
  const dnat: Rule[] = [];
  const snat: Rule[] = [];
  if (ctx.floatingIps) {
    const pairs = new Map<string, string>();
    for (const ep of weps) for (const n of ctx.family === 4 ? ep.ipv4Nat : ep.ipv6Nat) pairs.set(n.extIp, n.intIp);
    const byExt = [...pairs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [ext, int] of byExt)
      dnat.push({ match: [{ k: 'net', dir: 'dst', nets: [ext] }], action: { k: 'dnat', to: int } });
    for (const [ext, int] of [...byExt].sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      snat.push({
        match: [
          { k: 'net', dir: 'dst', nets: [int] },
          { k: 'net', dir: 'src', nets: [int] },
        ],
        action: { k: 'snat', to: ext },
      });
    }
  }
  return {
    chains: [
      { table: 'nat', name: FIP_DNAT, rules: dnat },
      { table: 'nat', name: FIP_SNAT, rules: snat },
    ],
    entries: [],
  };
}

/** A workload the dataplane dispatches to (workloadFragment renders its chains). */
const dispatched = (ep: WorkloadEndpoint, ctx: RenderContext) =>
  !ep.allowSpoofedSourcePrefixes.length || !!ctx.spoofing;

/** `selectorOf`: the active policies' selectors, which put them in Felix's policy groups. */
export function workloadFragment(ep: WorkloadEndpoint, ctx: RenderContext, selectorOf?: SelectorOf): Fragment {
  if (!dispatched(ep, ctx)) {
    // Felix refuses such an endpoint ("source IP spoofing requested but not enabled"): its
    // interface is not dispatched, so its traffic meets the fail-closed drop.
    return { chains: [], entries: [] };
  }
  const mark = endpointSetMark(ep.name, ctx);
  return {
    chains: [...chainsIn('filter', workloadChains(ep, { ...ctx, selectorOf })), ...mark.chains],
    entries: [
      { table: 'filter', map: DISPATCH.toWl, iface: ep.name, verdict: goto(EP.toWl, ep.name, ctx) },
      { table: 'filter', map: DISPATCH.fromWl, iface: ep.name, verdict: goto(EP.fromWl, ep.name, ctx) },
      ...mark.entries,
    ],
  };
}

/**
 * The active endpoints' names, as cali-from-endpoint-mark dispatches them (undefined
 * without IPVS support).
 */
export function endpointNamesOf(
  state: Pick<DesiredState, 'weps' | 'heps' | 'hostIfaces'>,
  ctx: RenderContext,
): EndpointNames | undefined {
  if (!ctx.endpointMarks) return undefined;
  const workloads = [...state.weps.values()].filter((ep) => dispatched(ep, ctx)).map((ep) => ep.name);
  const hosts = [...resolveHostEndpoints(state.heps, state.hostIfaces).byIface.keys()];
  return { workloads, hosts };
}

/** Felix's cali-from-endpoint-mark over these endpoints; their marks released when gone. */
export function fromEndpointMarkFragment(names: EndpointNames, ctx: RenderContext): Fragment {
  ctx.endpointMarks?.retain(new Set([...names.workloads, ...names.hosts]));
  return {
    chains: [{ table: 'filter', name: IPVS.fromEndpointMark, rules: fromEndpointMark(names, ctx) }],
    entries: [],
  };
}

/**
 * Felix's this-host set (hostIPManager): the addresses of the host's own interfaces, not
 * workloads' and not kube-ipvs0's (the interface monitor skips InterfaceExclude), which
 * cali-forward-check tells Services from. Only with IPVS support, its one user here.
 */
export function thisHostSet(
  state: Pick<DesiredState, 'hostIfaces'>,
  config: RenderConfig,
  family: Family,
): { name: string; set: IPSet | undefined } {
  const name = ipSetName(family, THIS_HOST_SET);
  if (!ipvsOn(config)) return { name, set: undefined };
  const members = new Set<string>();
  for (const addrs of state.hostIfaces?.values() ?? [])
    for (const a of addrs.map(bare)) if (a.includes(':') === (family === 6)) members.add(a);
  return { name, set: { name, kind: 'ip', members: [...members].sort() } };
}

export function ipSetOf(id: string, s: DesiredIPSet, family: Family): IPSet {
  return {
    name: ipSetName(family, id),
    kind: s.type === 'IP_AND_PORT' ? 'ipPort' : 'net',
    members: familyMembers(s.members, family),
  };
}

const loadBalancerOnly = (p: IPAMPool) => p.allowedUses.length === 1 && p.allowedUses[0] === 'LoadBalancer';

/** The IP-pool sets NAT uses: all pools, and those with natOutgoing. */
export function poolSets(pools: Iterable<IPAMPool>, family: Family, allPoolsSet: AllPoolsSet): IPSet[] {
  const mine = [...pools].filter((p) => isV6(p.cidr) === (family === 6));
  return [
    {
      name: ipSetName(family, allPoolsSet),
      kind: 'net',
      // network-ip-pools leaves out pools only for LoadBalancer addresses (Felix's masq manager):
      // traffic from a natOutgoing pool to a LoadBalancer address is masqueraded.
      members: mine.filter((p) => allPoolsSet !== 'network-ip-pools' || !loadBalancerOnly(p)).map((p) => p.cidr),
    },
    {
      name: ipSetName(family, MASQ_POOLS_SET),
      kind: 'net',
      members: mine.filter((p) => p.masquerade).map((p) => p.cidr),
    },
  ];
}

export function addFragment(rs: Ruleset, f: Fragment): void {
  for (const c of f.chains) addChain(rs, c.table, c.name, c.rules);
  for (const e of f.entries)
    rs.maps.find((m) => m.name === e.map && m.table === e.table)?.entries.set(e.iface, e.verdict);
}

export function renderRuleset(state: DesiredState, config: RenderConfig, family: Family, style: Style): Ruleset {
  const ctx = contextOf(config, family, style);
  const rs = staticRuleset(config, ctx);
  for (const [id, s] of state.ipsets) {
    const set = ipSetOf(id, s, family);
    rs.sets.set(set.name, set);
  }
  for (const set of poolSets(state.pools.values(), family, allPoolsSetOf(config))) rs.sets.set(set.name, set);
  for (const { set } of overlaySets(state, config, family)) if (set) rs.sets.set(set.name, set);
  const thisHost = thisHostSet(state, config, family).set;
  if (thisHost) rs.sets.set(thisHost.name, thisHost);
  addFragment(rs, overlayFragment(state, config, ctx));
  addFragment(rs, cidrBlockFragment(state, config, ctx));
  addFragment(rs, natOutgoingFragment(state.pools.values(), config, ctx));
  for (const { name, tier, policy } of state.policies.values())
    addFragment(rs, policyFragment(name, tier, policy, ctx));
  for (const [name, profile] of state.profiles) addFragment(rs, profileFragment(name, profile, ctx));
  const selectorOf = state.policySelector;
  for (const ep of state.weps.values()) addFragment(rs, workloadFragment(ep, ctx, selectorOf));
  addFragment(rs, rpfSkipFragment(state.weps.values(), ctx));
  addFragment(rs, floatingIpFragment(state.weps.values(), ctx));
  addFragment(
    rs,
    hostEndpointsFragment(
      state.heps,
      resolveHostEndpoints(state.heps, state.hostIfaces),
      ctx,
      config.InterfacePrefix,
      selectorOf,
      policyLookupOf(state),
    ),
  );
  const names = endpointNamesOf(state, ctx);
  if (names) addFragment(rs, fromEndpointMarkFragment(names, ctx));
  return rs;
}

/** The state's policies and profiles, as the host endpoints' mangle egress chains look them up. */
export function policyLookupOf(state: Pick<DesiredState, 'policies' | 'profiles'>): PolicyLookup {
  return { policy: (key) => state.policies.get(key), profile: (name) => state.profiles.get(name) };
}

/** The families to program: IPv4 always, IPv6 when Ipv6Support is on. */
export function families(config: Pick<Config, 'Ipv6Support'>): Family[] {
  return config.Ipv6Support ? [4, 6] : [4];
}
