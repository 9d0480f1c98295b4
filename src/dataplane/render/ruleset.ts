// Renders the desired state into one Ruleset per IP family: static chains, one chain pair
// per active policy and profile, endpoint chains with their dispatch entries, IP sets
// (each calc-graph set becomes cali40<id> and cali60<id>, members split by family) and the
// IP-pool sets NAT uses.
import type { Config } from '../../config/params.js';
import type { DesiredState } from '../desired-state.js';
import { hostEndpointChains, workloadChains } from './endpoints.js';
import { allocateMarks, type Marks } from './marks.js';
import { addChain, emptyRuleset, type Family, type IPSet, type Ruleset, type TableName } from './model.js';
import { endpointChain, EP, ipSetName } from './names.js';
import { type NamedChain, policyChains, profileChains } from './policy.js';
import { addStaticChains, ALL_POOLS_SET, MASQ_POOLS_SET } from './static.js';

export type RenderConfig = Pick<
  Config,
  'IptablesMarkMask' | 'InterfacePrefix' | 'DefaultEndpointToHostAction' | 'FailsafeInboundHostPorts' | 'FailsafeOutboundHostPorts' | 'Ipv6Support'
>;

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

export function renderRuleset(state: DesiredState, config: RenderConfig, family: Family, style: Style): Ruleset {
  const marks: Marks = allocateMarks(config.IptablesMarkMask);
  const rs = emptyRuleset(family);
  const maps = addStaticChains(rs, {
    family,
    marks,
    interfacePrefixes: config.InterfacePrefix,
    defaultEndpointToHostAction: config.DefaultEndpointToHostAction,
    failsafeIn: config.FailsafeInboundHostPorts,
    failsafeOut: config.FailsafeOutboundHostPorts,
  });
  const ctx = { family, marks, iptables: style === 'iptables' };
  const put = (table: TableName, chains: NamedChain[]) => {
    for (const c of chains) addChain(rs, table, c.name, c.rules);
  };

  for (const [id, s] of state.ipsets) {
    const set: IPSet = { name: ipSetName(family, id), kind: s.type === 'IP_AND_PORT' ? 'ipPort' : 'net', members: familyMembers(s.members, family) };
    rs.sets.set(set.name, set);
  }
  const pools = [...state.pools.values()].filter((p) => isV6(p.cidr) === (family === 6));
  for (const [name, members] of [
    [ALL_POOLS_SET, pools.map((p) => p.cidr)],
    [MASQ_POOLS_SET, pools.filter((p) => p.masquerade).map((p) => p.cidr)],
  ] as const) {
    rs.sets.set(ipSetName(family, name), { name: ipSetName(family, name), kind: 'net', members: [...members] });
  }

  // Untracked and pre-DNAT policies only ever run from raw / mangle host-endpoint chains.
  for (const { tier, name, policy } of state.policies.values()) {
    const chains = policyChains(tier, name, policy, ctx);
    put(policy.untracked ? 'raw' : policy.preDnat ? 'mangle' : 'filter', chains);
  }
  for (const [name, profile] of state.profiles) put('filter', profileChains(name, profile, ctx));

  for (const ep of state.weps.values()) {
    put('filter', workloadChains(ep, marks));
    maps.toWl.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.toWl, ep.name) });
    maps.fromWl.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.fromWl, ep.name) });
  }
  for (const ep of state.heps.values()) {
    // An all-interfaces host endpoint ("*") has no interface of its own to dispatch on.
    if (!ep.name || ep.name === '*') continue;
    const c = hostEndpointChains(ep, marks);
    put('filter', c.filter);
    maps.fromHost.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.fromHost, ep.name) });
    maps.toHost.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.toHost, ep.name) });
    maps.fromHostFwd.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.fromHostFwd, ep.name) });
    maps.toHostFwd.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.toHostFwd, ep.name) });
    if (c.raw.length) {
      put('raw', c.raw);
      maps.rawFromHost.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.fromHost, ep.name) });
      maps.rawToHost.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.toHost, ep.name) });
    }
    if (c.mangle.length) {
      put('mangle', c.mangle);
      maps.mangleFromHost.entries.set(ep.name, { k: 'goto', chain: endpointChain(EP.fromHost, ep.name) });
    }
  }
  return rs;
}

/** The families to program: IPv4 always, IPv6 when Ipv6Support is on. */
export function families(config: Pick<Config, 'Ipv6Support'>): Family[] {
  return config.Ipv6Support ? [4, 6] : [4];
}
