// The chains that do not depend on policy, as Felix's rules/static.go lays them out for the
// filter, raw, mangle and nat tables, and the hooks from the kernel's builtin chains.
// Dispatch to endpoint chains is a verdict-map lookup, then (for workloads) a drop: an
// interface we have no endpoint for is never let through (fail closed).
import type { FailsafePort } from '../../config/params.js';
import { type Cidr, parseCidr } from '../../model/net.js';
import { clearMark, markClear, markNotClear, markSet, setMark } from './blocks.js';
import type { Marks } from './marks.js';
import type { Action, Family, Hook, Match, PortRange, Rule, Ruleset, TableName, Verdict, VerdictMap } from './model.js';
import { addChain } from './model.js';
import { ipSetName } from './names.js';
import { type FilterActions, protocolNumber } from './policy.js';

export interface StaticOptions {
  family: Family;
  marks: Marks;
  interfacePrefixes: string[];
  defaultEndpointToHostAction: string;
  failsafeIn: FailsafePort[];
  failsafeOut: FailsafePort[];
  actions: FilterActions;
  /** Felix's NATOutgoingChain: what outgoing NAT translates to and what it leaves alone. */
  natOutgoing: NatOutgoing;
  /** The release's name for the set of all pools (model/release.ts allPoolsSet). */
  allPoolsSet: string;
  /** kube-proxy runs in IPVS mode (Felix's KubeIPVSSupportEnabled): KubeNodePortRanges. */
  ipvs?: { nodePorts: PortRange[] } | undefined;
}

/** Felix's IPVS chains (rules/static.go, rules/dispatch.go), rendered by kube-ipvs.ts. */
export const IPVS = {
  forwardCheck: 'cali-forward-check',
  forwardEndpointMark: 'cali-forward-endpoint-mark',
  setEndpointMark: 'cali-set-endpoint-mark',
  fromEndpointMark: 'cali-from-endpoint-mark',
} as const;

/** Felix's IPSetIDThisHostIPs: the addresses of the host's own interfaces (not workloads', not kube-ipvs0's). */
export const THIS_HOST_SET = 'this-host';

export const DISPATCH = {
  fromWl: 'cali-from-wl-dispatch',
  toWl: 'cali-to-wl-dispatch',
  fromHost: 'cali-from-host-endpoint',
  toHost: 'cali-to-host-endpoint',
  fromHostFwd: 'cali-from-hep-forward',
  toHostFwd: 'cali-to-hep-forward',
} as const;

/** Felix's chain of workload source prefixes exempt from the reverse-path check (rendered with the endpoints). */
export const RPF_SKIP = 'cali-rpf-skip';

/** Felix's floating-IP chains (nat), rendered with the endpoints. */
export const FIP_DNAT = 'cali-fip-dnat';
export const FIP_SNAT = 'cali-fip-snat';

export const MASQ_POOLS_SET = 'masq-ipam-pools';
export const NAT_OUTGOING = 'cali-nat-outgoing';

/** Felix's ChainCIDRBlock: ServiceLoopPrevention's drops (or rejects) of service CIDRs. */
export const CIDR_BLOCK = 'cali-cidr-block';

export interface NatOutgoing {
  /** NATOutgoingAddress: one address, or palisade's first-last range; "" masquerades. */
  address: string;
  /** NATPortRange (Felix's `MaxPort > 0`), or none. */
  ports: PortRange | undefined;
  /** NATOutgoingExclusions IPPoolsAndHostIPs: traffic to any node's address is not NATed. */
  excludeHosts: boolean;
  /** IptablesNATOutgoingInterfaceFilter: NAT only what leaves by this interface ("" any). */
  iface: string;
}

function portRules(
  ports: FailsafePort[],
  family: Family,
  portDir: 'src' | 'dst',
  netDir: 'src' | 'dst',
  accept: Verdict,
): Rule[] {
  const out: Rule[] = [];
  for (const p of ports) {
    if (p.net && p.net.includes(':') !== (family === 6)) continue;
    const m: Match[] = [
      { k: 'proto', proto: protocolNumber({ name: p.protocol }) },
      { k: 'ports', dir: portDir, ranges: [{ first: p.port, last: p.port }] },
    ];
    if (p.net) m.push({ k: 'net', dir: netDir, nets: [p.net] });
    out.push({ match: m, action: accept });
  }
  return out;
}

/**
 * Felix's failsafe chains. In raw, before conntrack, replies to the other direction's
 * failsafe traffic are let through too (by source port), so they never fall into untracked
 * policy and leave half a connection untracked; filter then accepts them by conntrack.
 */
function failsafeChain(o: StaticOptions, dir: 'in' | 'out', table: TableName, accept: Verdict): Rule[] {
  const own = dir === 'in' ? o.failsafeIn : o.failsafeOut;
  const other = dir === 'in' ? o.failsafeOut : o.failsafeIn;
  const netDir = dir === 'in' ? 'src' : 'dst';
  const rules = portRules(own, o.family, 'dst', netDir, accept);
  if (table === 'raw') rules.push(...portRules(other, o.family, 'src', netDir, accept));
  return rules;
}

const wildcard = (prefix: string) => `${prefix}+`;

/** An empty verdict map of the ruleset's, which endpoints' fragments fill. */
export function dispatchMap(rs: Ruleset, table: TableName, name: string): VerdictMap {
  const map: VerdictMap = { name, table, entries: new Map() };
  rs.maps.push(map);
  return map;
}

/** A workload dispatch chain: the map lookup, then the deny action ("Unknown interface"): it fails closed. */
function dispatchChain(rs: Ruleset, table: TableName, name: string, iface: 'in' | 'out', deny: Verdict): VerdictMap {
  const map = dispatchMap(rs, table, name);
  addChain(rs, table, name, [
    { match: [], action: { k: 'vmap', iface, map: name } },
    { match: [], action: deny, comment: 'Unknown interface' },
  ]);
  return map;
}

export interface DispatchMaps {
  fromWl: VerdictMap;
  toWl: VerdictMap;
  fromHost: VerdictMap;
  toHost: VerdictMap;
  fromHostFwd: VerdictMap;
  toHostFwd: VerdictMap;
  rawFromHost: VerdictMap;
  rawToHost: VerdictMap;
  mangleFromHost: VerdictMap;
  mangleToHost: VerdictMap;
}

/**
 * What the overlay adds to the static chains (Felix's VXLANEnabled, decided from the IP
 * pools when unset): the VXLAN port, when VXLAN is on for this family.
 */
export interface Overlay {
  vxlanPort?: number | undefined;
  /** IPIP is on (Felix's IPIPEnabled). */
  ipip?: boolean | undefined;
  /** WireGuard is on for this family: its listening port. */
  wireguardPort?: number | undefined;
  /** WireGuard host encryption: the devices (IPv4's, IPv6's) whose packets need no incoming mark. */
  wireguardHostDevices?: [string, string] | undefined;
  /**
   * The tunnel devices host traffic may leave by with the wrong local source (Felix's
   * tunnelIfaces: tunl0 and vxlan.calico once this node has their tunnel address,
   * WireGuard's device while it is on): masqueraded to the device's own address.
   */
  tunnelDevices?: string[] | undefined;
}

/** Felix's ChainSetWireguardIncomingMark. */
export const WIREGUARD_INCOMING_MARK = 'cali-wireguard-incoming-mark';

/** Felix's IPSetIDAllVXLANSourceNets: the underlay addresses of every node's VTEP. */
export const ALL_VXLAN_SET = 'all-vxlan-net';
/** Felix's IPSetIDAllHostNets: every node's address (and ExternalNodesCIDRList). */
export const ALL_HOSTS_SET = 'all-hosts-net';

/**
 * cali-INPUT and cali-OUTPUT, as Felix's filterInputChain / filterOutputChain. With VXLAN
 * on, VXLAN to a local address is accepted only from known VTEPs and dropped from anyone
 * else (so no host can inject packets into the overlay), and VXLAN to other VTEPs is let
 * out whatever host-endpoint policy says (or a host policy could cut the overlay).
 */
export function overlayChains(
  o: StaticOptions,
  overlay: Overlay,
): Array<{ table: TableName; name: string; rules: Rule[] }> {
  const { marks } = o;
  const allow = o.actions.filterAllow;
  const deny = o.actions.filterDeny;
  const denyWord = deny.k === 'reject' ? 'Reject' : 'Drop';
  const acceptIfMarked = (comment?: string): Rule => ({ match: [markSet(marks.accept)], action: allow, comment });
  const vxlanSet = ipSetName(o.family, ALL_VXLAN_SET);
  const hostsSet = ipSetName(o.family, ALL_HOSTS_SET);
  const ipip: Match = { k: 'proto', proto: 4 };
  const v = o.family === 4 ? 'IPv4' : 'IPv6';
  const port = (n: number): Match[] => [{ k: 'ports', dir: 'dst', ranges: [{ first: n, last: n }] }];
  const vxlan = (n: number): Match[] => [{ k: 'proto', proto: 17 }, ...port(n)];

  const input: Rule[] = [];
  const local: Match = { k: 'addrType', dir: 'dst', type: 'LOCAL' };
  if (overlay.ipip) {
    // The protocol number, not its name, which the kernel may not know.
    input.push(
      {
        match: [ipip, { k: 'set', dir: 'src', set: hostsSet }, local],
        action: allow,
        comment: 'Allow IPIP packets from Calico hosts',
      },
      { match: [ipip], action: deny, comment: `${denyWord} IPIP packets from non-Calico hosts` },
    );
  }
  if (overlay.vxlanPort !== undefined) {
    input.push(
      {
        match: [...vxlan(overlay.vxlanPort), { k: 'set', dir: 'src', set: vxlanSet }, local],
        action: allow,
        comment: `Allow ${v} VXLAN packets from allowed hosts`,
      },
      {
        match: [...vxlan(overlay.vxlanPort), local],
        // As Felix v3.31.7: a plain drop for IPv4, the configured deny action for IPv6.
        action: o.family === 4 ? { k: 'drop' } : deny,
        comment: `${o.family === 4 ? 'Drop' : denyWord} ${v} VXLAN packets from non-allowed hosts`,
      },
    );
  }
  if (overlay.wireguardPort !== undefined) {
    // As Felix: a host policy cannot cut WireGuard between nodes; the peers' keys and allowed
    // IPs are what admit its packets.
    input.push({
      match: [{ k: 'proto', proto: 17 }, ...port(overlay.wireguardPort), local],
      action: allow,
      comment: `Allow incoming ${v} Wireguard packets`,
    });
  }
  if (o.ipvs) {
    // IPVS traffic (to a Service, or a NodePort) is forwarded, though it reaches INPUT:
    // marked with its endpoint's number, it skips the to-host rules and gets the endpoints'
    // policy in cali-OUTPUT.
    input.push(
      { match: [], action: clearMark(marks.endpoint) },
      { match: [], action: { k: 'jump', chain: IPVS.forwardCheck } },
      { match: [markNotClear(marks.endpoint)], action: { k: 'return' } },
    );
  }
  for (const p of o.interfacePrefixes)
    input.push({
      match: [{ k: 'iface', dir: 'in', name: wildcard(p) }],
      action: { k: 'goto', chain: 'cali-wl-to-host' },
    });
  input.push(
    acceptIfMarked(),
    { match: [], action: clearMark(marks.all) },
    { match: [], action: { k: 'jump', chain: DISPATCH.fromHost } },
    acceptIfMarked('Host endpoint policy accepted packet.'),
  );

  const output: Rule[] = [acceptIfMarked()];
  // A goto, so the forward chain's return goes on in OUTPUT, past our host rules.
  if (o.ipvs)
    output.push({ match: [markNotClear(marks.endpoint)], action: { k: 'goto', chain: IPVS.forwardEndpointMark } });
  for (const p of o.interfacePrefixes)
    output.push({
      match: [{ k: 'iface', dir: 'out', name: wildcard(p) }],
      action: { k: 'return' },
      comment: 'Return if to workload',
    });
  if (overlay.ipip) {
    output.push({
      match: [ipip, { k: 'set', dir: 'dst', set: hostsSet }, { k: 'addrType', dir: 'src', type: 'LOCAL' }],
      action: allow,
      comment: 'Allow IPIP packets to other Calico hosts',
    });
  }
  if (overlay.vxlanPort !== undefined) {
    output.push({
      match: [
        ...vxlan(overlay.vxlanPort),
        { k: 'addrType', dir: 'src', type: 'LOCAL' },
        { k: 'set', dir: 'dst', set: vxlanSet },
      ],
      action: allow,
      comment: `Allow ${v} VXLAN packets to other allowed hosts`,
    });
  }
  if (overlay.wireguardPort !== undefined) {
    output.push({
      match: [{ k: 'proto', proto: 17 }, ...port(overlay.wireguardPort), { k: 'addrType', dir: 'src', type: 'LOCAL' }],
      action: allow,
      comment: `Allow outgoing ${v} Wireguard packets`,
    });
  }
  // A DNATed packet's egress host-endpoint policy runs in mangle cali-POSTROUTING, after
  // routing has chosen the interface the new destination leaves by.
  output.push(
    { match: [], action: clearMark(marks.all) },
    { match: [{ k: 'ctDnat', neg: true }], action: { k: 'jump', chain: DISPATCH.toHost } },
    acceptIfMarked('Host endpoint policy accepted packet.'),
  );
  return [
    { table: 'filter', name: 'cali-INPUT', rules: input },
    { table: 'filter', name: 'cali-OUTPUT', rules: output },
    ...rawChains(o, overlay),
    { table: 'nat', name: 'cali-POSTROUTING', rules: natPostrouting(overlay.tunnelDevices ?? []) },
  ];
}

/**
 * Felix's StaticNATPostroutingChains: floating IPs, outgoing NAT, then per tunnel device
 * host traffic leaving by it from a local address that is not the device's own (a socket
 * bound to another address, or a Service's DNAT making the kernel pick the wrong source)
 * masqueraded to the device's address. Workload sources are not local, so never caught.
 */
function natPostrouting(tunnels: string[]): Rule[] {
  const rules: Rule[] = [
    { match: [], action: { k: 'jump', chain: FIP_SNAT } },
    { match: [], action: { k: 'jump', chain: NAT_OUTGOING } },
  ];
  for (const name of tunnels)
    rules.push({
      match: [
        { k: 'iface', dir: 'out', name },
        { k: 'addrType', dir: 'src', type: 'LOCAL', neg: true, limitIfaceOut: true },
        { k: 'addrType', dir: 'src', type: 'LOCAL' },
      ],
      action: { k: 'masquerade' },
    });
  return rules;
}

/**
 * raw, as Felix's StaticRawPreroutingChain and StaticRawOutputChain: workload traffic is
 * marked, may skip the strict reverse-path check (cali-rpf-skip: allowSpoofedSourcePrefixes),
 * must pass it (no spoofing), and is not subject to untracked host-endpoint policy. With
 * VXLAN on, VXLAN is not tracked: it uses other source ports each way, so conntrack would
 * hold an unreplied flow per packet stream (found diffing against Felix v3.31.7).
 */
function rawChains(o: StaticOptions, overlay: Overlay): Array<{ table: TableName; name: string; rules: Rule[] }> {
  const { marks } = o;
  const accepted: Rule = { match: [markSet(marks.accept)], action: { k: 'accept' } };
  const notrack: Rule[] =
    overlay.vxlanPort === undefined
      ? []
      : [
          {
            match: [
              { k: 'proto', proto: 17 },
              { k: 'ports', dir: 'dst', ranges: [{ first: overlay.vxlanPort, last: overlay.vxlanPort }] },
            ],
            action: { k: 'notrack' },
          },
        ];
  const fromWl = marks.scratch0;
  const wgMark: Rule[] = overlay.wireguardHostDevices
    ? [{ match: [], action: { k: 'jump', chain: WIREGUARD_INCOMING_MARK } }]
    : [];
  const pre: Rule[] = [{ match: [], action: clearMark(marks.all) }, ...wgMark, ...notrack];
  for (const p of o.interfacePrefixes)
    pre.push({ match: [{ k: 'iface', dir: 'in', name: wildcard(p) }], action: setMark(fromWl) });
  pre.push(
    { match: [markSet(fromWl)], action: { k: 'jump', chain: RPF_SKIP } },
    { match: [markSet(fromWl), { k: 'rpfFailed' }], action: { k: 'drop' } },
    { match: [markClear(fromWl)], action: { k: 'jump', chain: DISPATCH.fromHost } },
    accepted,
  );
  const out: Rule[] = [
    { match: [], action: clearMark(marks.all) },
    { match: [], action: { k: 'jump', chain: DISPATCH.toHost } },
    ...notrack,
    accepted,
  ];
  return [
    { table: 'raw', name: 'cali-PREROUTING', rules: pre },
    { table: 'raw', name: 'cali-OUTPUT', rules: out },
    ...(overlay.wireguardHostDevices ? [wireguardIncomingMark(o, overlay.wireguardHostDevices)] : []),
  ];
}

/**
 * Felix's WireguardIncomingMarkChain: with host encryption, packets from anywhere but
 * loopback, the WireGuard devices and workloads carry WireGuard's mark, so the reply to
 * an encrypted peer's host address passes the reverse-path check (src_valid_mark).
 */
function wireguardIncomingMark(
  o: StaticOptions,
  devices: [string, string],
): { table: TableName; name: string; rules: Rule[] } {
  const ret = (name: string): Rule => ({ match: [{ k: 'iface', dir: 'in', name }], action: { k: 'return' } });
  return {
    table: 'raw',
    name: WIREGUARD_INCOMING_MARK,
    rules: [
      ret('lo'),
      ...devices.map(ret),
      ...o.interfacePrefixes.map((p) => ret(wildcard(p))),
      { match: [], action: setMark(o.marks.wireguard) },
    ],
  };
}

/**
 * Felix's StaticManglePostroutingChain: host-endpoint egress policy for what cali-OUTPUT
 * left alone, host traffic that was DNATed (to a Service, say). Forwarded packets carry the
 * accept bit (FORWARD's appended rules) and return at once. RETURN, not ACCEPT: mangle may
 * hold other programs' packet changes that allowed traffic still needs.
 */
function manglePostrouting(o: StaticOptions): Rule[] {
  const { marks } = o;
  return [
    { match: [markSet(marks.accept)], action: { k: 'return' } },
    // IPVS-forwarded traffic carries its endpoint's mark: no host-endpoint egress policy.
    ...(o.ipvs ? [{ match: [markNotClear(marks.endpoint)], action: { k: 'return' } } as Rule] : []),
    { match: [], action: clearMark(marks.all) },
    { match: [{ k: 'ctDnat' }], action: { k: 'jump', chain: DISPATCH.toHost } },
    { match: [markSet(marks.accept)], action: { k: 'return' }, comment: 'Host endpoint policy accepted packet.' },
  ];
}

export function addStaticChains(rs: Ruleset, o: StaticOptions): DispatchMaps {
  const { marks, family } = o;
  // Felix accepts with its configured allow action in the filter and mangle tables; raw accepts.
  const allowIn = {
    filter: o.actions.filterAllow,
    mangle: o.actions.mangleAllow,
    raw: { k: 'accept' },
    nat: { k: 'accept' },
  } as const;
  const acceptIfMarked = (comment?: string, table: TableName = 'filter'): Rule => ({
    match: [markSet(marks.accept)],
    action: allowIn[table],
    comment,
  });
  const fromWorkload = (): Match[][] => o.interfacePrefixes.map((p) => [{ k: 'iface', dir: 'in', name: wildcard(p) }]);
  const toWorkload = (): Match[][] => o.interfacePrefixes.map((p) => [{ k: 'iface', dir: 'out', name: wildcard(p) }]);

  // filter cali-INPUT and cali-OUTPUT, raw cali-PREROUTING and cali-OUTPUT, nat cali-POSTROUTING:
  // they depend on the overlay (overlayChains)
  for (const c of overlayChains(o, {})) addChain(rs, c.table, c.name, c.rules);

  const toHost: Rule[] = [];
  if (family === 6) {
    // Neighbour discovery and MLD must reach the host whatever the policy says.
    for (const t of [130, 131, 132, 133, 135, 136])
      toHost.push({
        match: [
          { k: 'proto', proto: 58 },
          { k: 'icmp', type: t },
        ],
        action: o.actions.filterAllow,
      });
  }
  toHost.push({ match: [], action: { k: 'jump', chain: DISPATCH.fromWl } });
  const def = o.defaultEndpointToHostAction;
  toHost.push({
    match: [],
    action: { k: def === 'Accept' ? 'accept' : def === 'Return' ? 'return' : 'drop' },
    comment: 'Configured DefaultEndpointToHostAction',
  });
  addChain(rs, 'filter', 'cali-wl-to-host', toHost);

  const forward: Rule[] = [
    // The accept bit survives (Felix: allCalicoMarkBits &^ MarkAccept): a packet a pre-DNAT or
    // untracked policy accepted skips the forward host-endpoint policy. Clearing it first made
    // the test below always true (found by diffing against Felix v3.31.7: docs/compatibility.md).
    { match: [], action: clearMark((marks.all & ~marks.accept) >>> 0) },
    { match: [markClear(marks.accept)], action: { k: 'jump', chain: DISPATCH.fromHostFwd } },
  ];
  for (const m of fromWorkload()) forward.push({ match: m, action: { k: 'jump', chain: DISPATCH.fromWl } });
  for (const m of toWorkload()) forward.push({ match: m, action: { k: 'jump', chain: DISPATCH.toWl } });
  forward.push(
    { match: [], action: { k: 'jump', chain: DISPATCH.toHostFwd } },
    // Felix's chain is there, empty, whether or not anything is blocked: cidrBlockChain.
    { match: [], action: { k: 'jump', chain: CIDR_BLOCK } },
  );
  addChain(rs, 'filter', 'cali-FORWARD', forward);
  addChain(rs, 'filter', CIDR_BLOCK, []);
  // Felix's StaticFilterForwardAppendRules: what policy allowed is accepted at the end of
  // FORWARD, after the rules other programs keep there (kube-proxy's drop of invalid
  // conntrack state, Docker's chains), not at our jump at its top; then every forwarded
  // packet carries the accept bit, which keeps it out of mangle cali-POSTROUTING's
  // host-endpoint policy (found by diffing against Felix v3.31.7: docs/compatibility.md D4).
  rs.appends.push({
    table: 'filter',
    builtin: 'FORWARD',
    rules: [acceptIfMarked('Policy explicitly accepted packet.'), { match: [], action: setMark(marks.accept) }],
  });

  // Failsafes accept outright, whatever the allow actions say (Felix: r.Allow()): with
  // IptablesFilterAllowAction RETURN a failsafe that returned would go on into the
  // host-endpoint policy it exists to bypass (found diffing against Felix v3.31.7).
  for (const table of ['filter', 'raw', 'mangle'] as const) {
    addChain(rs, table, 'cali-failsafe-in', failsafeChain(o, 'in', table, { k: 'accept' }));
    addChain(rs, table, 'cali-failsafe-out', failsafeChain(o, 'out', table, { k: 'accept' }));
  }
  const maps: DispatchMaps = {
    fromWl: dispatchChain(rs, 'filter', DISPATCH.fromWl, 'in', o.actions.filterDeny),
    toWl: dispatchChain(rs, 'filter', DISPATCH.toWl, 'out', o.actions.filterDeny),
    // Host endpoint dispatch chains depend on the endpoints (an all-interfaces one is their
    // default): host-endpoints.ts renders them; only their maps are static.
    fromHost: dispatchMap(rs, 'filter', DISPATCH.fromHost),
    toHost: dispatchMap(rs, 'filter', DISPATCH.toHost),
    fromHostFwd: dispatchMap(rs, 'filter', DISPATCH.fromHostFwd),
    toHostFwd: dispatchMap(rs, 'filter', DISPATCH.toHostFwd),
    rawFromHost: dispatchMap(rs, 'raw', DISPATCH.fromHost),
    rawToHost: dispatchMap(rs, 'raw', DISPATCH.toHost),
    mangleFromHost: dispatchMap(rs, 'mangle', DISPATCH.fromHost),
    mangleToHost: dispatchMap(rs, 'mangle', DISPATCH.toHost),
  };

  // mangle: pre-DNAT host-endpoint policy.
  const manglePre: Rule[] = [
    { match: [{ k: 'ct', states: ['RELATED', 'ESTABLISHED'] }], action: o.actions.mangleAllow },
    acceptIfMarked(undefined, 'mangle'),
  ];
  // No skip for workload traffic (an earlier palisade returned it here): with an
  // all-interfaces host endpoint, Felix applies its pre-DNAT policy to packets from
  // workloads too, and so must we (docs/compatibility.md).
  manglePre.push(
    { match: [], action: { k: 'jump', chain: DISPATCH.fromHost } },
    acceptIfMarked('Host endpoint policy accepted packet.', 'mangle'),
  );
  addChain(rs, 'mangle', 'cali-PREROUTING', manglePre);
  addChain(rs, 'mangle', 'cali-POSTROUTING', manglePostrouting(o));

  // nat, as Felix's: floating IPs (cali-fip-dnat, cali-fip-snat: rendered with the
  // endpoints), then outgoing NAT.
  addChain(rs, 'nat', 'cali-PREROUTING', [{ match: [], action: { k: 'jump', chain: FIP_DNAT } }]);
  addChain(rs, 'nat', 'cali-OUTPUT', [{ match: [], action: { k: 'jump', chain: FIP_DNAT } }]);
  // Its rules follow the pools (natOutgoingChain, rendered with them); empty, it is still Felix's.
  addChain(rs, 'nat', NAT_OUTGOING, []);

  const hooks: Hook[] = [
    { table: 'raw', builtin: 'PREROUTING', chain: 'cali-PREROUTING' },
    { table: 'raw', builtin: 'OUTPUT', chain: 'cali-OUTPUT' },
    { table: 'mangle', builtin: 'PREROUTING', chain: 'cali-PREROUTING' },
    { table: 'mangle', builtin: 'POSTROUTING', chain: 'cali-POSTROUTING' },
    { table: 'nat', builtin: 'PREROUTING', chain: 'cali-PREROUTING' },
    { table: 'nat', builtin: 'OUTPUT', chain: 'cali-OUTPUT' },
    { table: 'nat', builtin: 'POSTROUTING', chain: 'cali-POSTROUTING' },
    { table: 'filter', builtin: 'INPUT', chain: 'cali-INPUT' },
    { table: 'filter', builtin: 'FORWARD', chain: 'cali-FORWARD' },
    { table: 'filter', builtin: 'OUTPUT', chain: 'cali-OUTPUT' },
  ];
  rs.hooks.push(...hooks);
  return maps;
}

/**
 * Felix's NATOutgoingChain and makeNATOutgoingRuleIPTables: while the family has a
 * natOutgoing pool (`active`, Felix's masqManager), from such a pool to anywhere outside
 * all pools (and, with IPPoolsAndHostIPs, outside every node's address), by the filter
 * interface when one is set; masqueraded or, with NATOutgoingAddress, source-NATed. With
 * NATPortRange, TCP and UDP get its ports and return; the rest (ICMP) is translated without.
 */
export function natOutgoingChain(
  o: Pick<StaticOptions, 'family' | 'natOutgoing' | 'allPoolsSet'>,
  active: boolean,
): Rule[] {
  if (!active) return [];
  const { family } = o;
  const n = o.natOutgoing;
  const match = (proto?: number): Match[] => [
    { k: 'set', dir: 'src', set: ipSetName(family, MASQ_POOLS_SET) },
    { k: 'set', dir: 'dst', set: ipSetName(family, o.allPoolsSet), neg: true },
    ...(n.excludeHosts ? [{ k: 'set', dir: 'dst', set: ipSetName(family, ALL_HOSTS_SET), neg: true } as const] : []),
    ...(proto === undefined ? [] : [{ k: 'proto', proto } as const]),
    ...(n.iface ? [{ k: 'iface', dir: 'out', name: n.iface } as const] : []),
  ];
  const [first, last] = n.address.split('-');
  const to = first && first.includes(':') === (family === 6) ? first : undefined;
  const nat = (ports?: PortRange): Action =>
    to
      ? { k: 'snat', to, ...(last ? { toLast: last } : {}), ...(ports ? { ports } : {}) }
      : { k: 'masquerade', ...(ports ? { ports } : {}) };
  if (!n.ports) return [{ match: match(), action: nat() }];
  return [6, 17]
    .flatMap((proto): Rule[] => [
      { match: match(proto), action: nat(n.ports) },
      { match: match(proto), action: { k: 'return' } },
    ])
    .concat([{ match: match(), action: nat() }]);
}

/**
 * Felix's BlockedCIDRsToIptablesChains: each of the family's service CIDRs (in Felix's
 * order, sorted as text) dropped or rejected; none with ServiceLoopPrevention Disabled.
 */
export function cidrBlockChain(cidrs: readonly string[], family: Family, action: string): Rule[] {
  if (action !== 'Drop' && action !== 'Reject') return [];
  const verdict: Verdict = action === 'Drop' ? { k: 'drop' } : { k: 'reject' };
  return [...cidrs]
    .sort()
    .map((c) => parseCidr(c))
    .filter((c) => c !== undefined && c.version === family)
    .map((c) => ({ match: [{ k: 'net', dir: 'dst', nets: [(c as Cidr).text] }], action: verdict }));
}
