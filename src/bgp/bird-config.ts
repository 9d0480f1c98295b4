// BIRD 1.6's configuration for one node, as calico-node's confd renders it (its
// bird.cfg, bird_aggr.cfg and bird_ipam.cfg templates over getBGPConfig): the same
// protocols, names, filters and comments, so an operator's `birdcl show protocols` reads
// as it does on calico-node. IPv4 (bird); IPv6 (bird6) is not rendered yet.
import { createHash } from 'node:crypto';

import type { BgpConfigurationSpec, BgpNode, BgpState, IpPoolSpec } from './bgp-state.js';
import { renderAggr, renderIpam, type ServiceRoutes } from './bird-ipam.js';
import { isCommunityValue } from '../model/bgp.js';
import { unsafeValues } from './bird-values.js';
import { type BirdPeer, birdPeer, DEFAULT_AS, explicitPeerings, meshPeers, type PeerContext } from './peers.js';

export const BIRD_INT_MAX = 2147483647;
/** BIRD's preference for a route that must win over a local workload's (live migration). */
export const OVERRIDE_PREFERENCE = 200;

export interface BirdFiles {
  'bird.cfg': string;
  'bird_aggr.cfg': string;
  'bird_ipam.cfg': string;
}

export interface RenderOptions {
  /** CALICO_ROUTER_ID: an address, "hash" (from the node name), or unset (the node's IPv4 address). */
  routerId?: string | undefined;
}

export interface RenderResult {
  /** undefined while this node's Node resource is unknown (confd renders nothing then either). */
  files: BirdFiles | undefined;
  /** Inputs that could not be honoured, each to be reported once. */
  problems: string[];
}

/** The settings the templates read (confd's BirdBGPConfig, IPv4). */
export interface BirdConfig {
  node: BgpNode;
  asNumber: string;
  routerId: string;
  debugMode: string;
  peerDebugMode: string;
  listenAddress: string;
  listenPort: string;
  /** BGPConfiguration ignoredInterfaces: not read for device routes (as well as cali* and kube-ipvs*). */
  ignoredInterfaces: string[];
  normalRoutePriority: number;
  peers: BirdPeer[];
  /** Each advertised prefix with its community values ("aa:nn", "aa:nn:mm"), sorted. */
  communities: Array<{ cidr: string; values: string[] }>;
  pools: IpPoolSpec[];
  programClusterRoutes: string;
  services: ServiceRoutes;
  affinities: Array<{ cidr: string; state: string | undefined }>;
}

/** confd's HashToIPv4: the first four bytes of SHA-256 of the node name, outside multicast. */
export function hashToIPv4(nodeName: string): string {
  const h = createHash('sha256').update(nodeName).digest();
  const first = (h[0] as number) > 223 ? (h[0] as number) - 32 : (h[0] as number);
  return [first, h[1], h[2], h[3]].join('.');
}

export function renderBird(state: BgpState, hostname: string, opts: RenderOptions = {}): RenderResult {
  const problems = new Set<string>();
  const me = state.nodes.get(hostname);
  if (!me)
    return {
      files: undefined,
      problems: [`Node ${hostname} does not exist (yet): no BIRD configuration until it does`],
    };
  if (!opts.routerId && !me.ipv4) {
    return {
      files: undefined,
      problems: [`Node ${hostname} has no BGP IPv4 address and CALICO_ROUTER_ID is not set: BIRD needs a router ID`],
    };
  }
  const cfg = birdConfig(state, me, opts, problems);
  const unsafe = unsafeValues(cfg, opts.routerId);
  if (unsafe.length) return { files: undefined, problems: [...problems, ...unsafe] };
  return {
    files: { 'bird.cfg': renderMain(cfg), 'bird_aggr.cfg': renderAggr(cfg), 'bird_ipam.cfg': renderIpam(cfg) },
    problems: [...problems],
  };
}

function birdConfig(state: BgpState, me: BgpNode, opts: RenderOptions, problems: Set<string>): BirdConfig {
  const g = state.global();
  const mine = state.perNode(me.name);
  const ctx: PeerContext = { state, hostname: me.name, problems };
  reportIgnored(g, problems);
  const level = (mine?.logSeverityScreen ?? g?.logSeverityScreen)?.toLowerCase();
  const logLevel = level === undefined ? undefined : level === 'debug' || level === 'info' ? level : 'none';
  const routerId = opts.routerId === 'hash' ? hashToIPv4(me.name) : opts.routerId || me.ipv4;
  const listenPort = mine?.listenPort ?? g?.listenPort;
  const explicit = explicitPeerings(ctx);
  const peers = [
    ...meshPeers(ctx, me),
    ...explicit.global.flatMap((p) => birdPeer(ctx, me, p, 'Global') ?? []),
    ...explicit.node.flatMap((p) => birdPeer(ctx, me, p, 'Node') ?? []),
  ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const v4 = (c: string) => !c.includes(':');
  const pools = [...state.pools.values()].filter((p) => v4(p.cidr));
  const birdIpip = g?.programClusterRoutes === 'Enabled' || g?.programClusterRoutes === 'EnabledIPIPOnly';
  if (birdIpip && pools.some((p) => p.ipipMode === 'Always' || p.ipipMode === 'CrossSubnet')) {
    problems.add(
      `BGPConfiguration default: programClusterRoutes ${g?.programClusterRoutes} asks BIRD to program IPIP routes, which needs Calico's BIRD fork (krt_tunnel); Debian's BIRD cannot, so they are not programmed`,
    );
  }
  if ([...state.pools.values()].some((p) => !v4(p.cidr)) || me.ipv6)
    problems.add('IPv6 BGP (bird6) is not supported yet: only IPv4 routes are advertised');
  return {
    node: me,
    asNumber: String(me.asNumber ?? g?.asNumber ?? DEFAULT_AS),
    routerId,
    debugMode: logLevel === 'none' ? '' : logLevel === 'debug' ? 'all' : '{ states }',
    peerDebugMode:
      logLevel === 'none' ? '' : logLevel === 'debug' ? 'debug all;' : 'debug { states, routes, filters, events };',
    listenAddress: g?.bindMode === 'NodeIP' ? me.ipv4 : '',
    listenPort: listenPort ? String(listenPort) : '',
    ignoredInterfaces: g?.ignoredInterfaces ?? [],
    normalRoutePriority: g?.ipv4NormalRoutePriority ?? 1024,
    peers,
    communities: communities(mine?.prefixAdvertisements ? mine : g),
    pools,
    programClusterRoutes: g?.programClusterRoutes ?? 'EnabledNoEncapOnly',
    services: serviceRoutes(g, me.labels[EXCLUDE_LABEL] === 'true'),
    affinities: [...state.affinities.values()].filter((a) => v4(a.cidr)),
  };
}

function reportIgnored(g: BgpConfigurationSpec | undefined, problems: Set<string>): void {
  if (!g) return;
  const known = new Set([
    'logSeverityScreen',
    'nodeToNodeMeshEnabled',
    'asNumber',
    'serviceClusterIPs',
    'serviceExternalIPs',
    'serviceLoadBalancerIPs',
    'listenPort',
    'bindMode',
    'communities',
    'prefixAdvertisements',
    'nodeMeshMaxRestartTime',
    'ignoredInterfaces',
    'programClusterRoutes',
    'ipv4NormalRoutePriority',
    'ipv6NormalRoutePriority',
    'nodeMeshPassword',
  ]);
  for (const field of Object.keys(g))
    if (!known.has(field)) problems.add(`BGPConfiguration default: ${field} is not supported and is ignored`);
}

function communities(spec: BgpConfigurationSpec | undefined): BirdConfig['communities'] {
  const out: BirdConfig['communities'] = [];
  for (const adv of spec?.prefixAdvertisements ?? []) {
    if (adv.cidr.includes(':')) continue;
    const values = new Set<string>();
    for (const c of adv.communities ?? []) {
      const v = isCommunityValue(c) ? c : spec?.communities?.find((d) => d.name === c)?.value;
      if (v) values.add(v);
    }
    if (values.size) out.push({ cidr: adv.cidr, values: [...values].sort() });
  }
  return out;
}

function communityStatement(v: string): string {
  const p = v.split(':');
  return p.length === 2
    ? `bgp_community.add((${p[0]}, ${p[1]}));`
    : `bgp_large_community.add((${p[0]}, ${p[1]}, ${p[2]}));`;
}

const singleAddress = (c: string) => c.endsWith('/32') || c.endsWith('/128');

/** A node with this label "true" advertises no service ranges (it still never programs them from BGP). */
const EXCLUDE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

/**
 * Service ranges every node advertises (ClusterIPs, and external and load-balancer ranges that are not single
 * addresses).
 */
function serviceRoutes(g: BgpConfigurationSpec | undefined, excluded: boolean): ServiceRoutes {
  const cidrs = (l: Array<{ cidr?: string | undefined }> | undefined) =>
    (l ?? []).flatMap((x) => (x.cidr && !x.cidr.includes(':') ? [x.cidr] : []));
  const external = cidrs(g?.serviceExternalIPs);
  const lb = cidrs(g?.serviceLoadBalancerIPs);
  const aggregate = (g as Record<string, unknown> | undefined)?.serviceLoadBalancerAggregation !== 'Disabled';
  const advertised = [
    ...cidrs(g?.serviceClusterIPs),
    ...external.filter((c) => !singleAddress(c)),
    ...(aggregate ? lb.filter((c) => !singleAddress(c)) : []),
  ];
  const all = [...new Set(advertised)];
  return { advertised: excluded ? [] : all, rejected: all, externalIPs: external, loadBalancerIPs: lb };
}

function renderMain(c: BirdConfig): string {
  const out: string[] = [];
  out.push('function apply_communities ()', '{');
  for (const r of c.communities)
    out.push(
      `      if ( net ~ ${r.cidr} ) then {`,
      ...r.values.map((v) => `          ${communityStatement(v)}`),
      '      }',
    );
  out.push('}', '');
  out.push(
    'template kernel kernel_template {',
    '  learn;             # Learn all alien routes from the kernel',
    "  persist;           # Don't remove routes on bird shutdown",
    '  scan time 2;       # Scan kernel routing table every 2 seconds',
    '  import all;',
    '}',
    '',
  );
  out.push('template direct direct_template {');
  if (c.debugMode) out.push(`  debug ${c.debugMode};`);
  const direct = [...c.ignoredInterfaces.map((i) => `-"${i}"`), '-"cali*"', '-"kube-ipvs*"', '"*"'];
  out.push(`  interface ${direct.join(', ')};`, '}', '');
  out.push('# Generated by palisade bgp', 'include "bird_aggr.cfg";', 'include "bird_ipam.cfg";', '');
  out.push(`router id ${c.routerId};`);
  if (c.listenAddress || c.listenPort) {
    out.push(
      '# BGP listen configuration',
      `listen bgp${c.listenAddress ? ` address ${c.listenAddress}` : ''}${c.listenPort ? ` port ${c.listenPort}` : ''};`,
    );
  }
  out.push(
    '',
    '# Configure synchronization between routing tables and kernel.',
    'protocol kernel from kernel_template {',
    '  export filter calico_kernel_programming; # Default is export none',
  );
  out.push(
    '  graceful restart;  # Turn on graceful restart to reduce potential flaps in',
    '                     # routes when reloading BIRD configuration.',
    '  merge paths on;    # Allow export multipath routes (ECMP)',
    '}',
    '',
  );
  out.push('# Watch interface up/down events.', 'protocol device {');
  if (c.debugMode) out.push(`  debug ${c.debugMode};`);
  out.push(
    '  scan time 2;    # Scan interfaces every 2 seconds',
    '}',
    '',
    'protocol direct from direct_template {',
    '}',
    '',
  );
  if (!c.node.ipv4) {
    out.push('# IPv4 disabled on this node.');
    return `${out.join('\n')}\n`;
  }
  out.push('# Template for all BGP clients', 'template bgp bgp_template {');
  if (c.peerDebugMode) out.push(`  ${c.peerDebugMode}`);
  out.push(
    '  description "Connection to BGP peer";',
    `  local as ${c.asNumber};`,
    '  gateway recursive; # This should be the default, but just in case.',
    '  add paths on;',
  );
  out.push(
    '  graceful restart;  # See comment in kernel section about graceful restart.',
    '  connect delay time 2;',
    '  connect retry time 5;',
    '  error wait time 5,30;',
    '}',
    '',
  );
  out.push('# -------------- BGP Filters ------------------', '# No v4 BGPFilters configured');
  if (!c.peers.length) out.push('# No BGP peers configured for this node');
  else out.push('# BGP Protocol Configurations', ...c.peers.flatMap((p) => protocolLines(p, c)));
  return `${out.join('\n')}\n`;
}

function protocolLines(p: BirdPeer, c: BirdConfig): string[] {
  const out = [`protocol bgp ${p.name} from bgp_template {`];
  if (p.localAsNumber) out.push(`  local as ${p.localAsNumber};`);
  out.push(`  neighbor ${p.ip}${p.port ? ` port ${p.port}` : ''} as ${p.asNumber};`);
  if (p.sourceAddr) out.push(`  source address ${p.sourceAddr};  # The local address we use for the TCP connection`);
  if (p.ttlSecurity === 'off') out.push('  ttl security off;', '  multihop;');
  else out.push('  ttl security on;', `  multihop ${p.ttlSecurity};`);
  out.push('  import filter {', ...importFilter(c).map((l) => `    ${l}`), '  };');
  out.push(
    '  export filter {',
    ...exportFilter(p, c).map((l) => `    ${l}`),
    '  };  # Only want to export routes for workloads.',
  );
  if (p.passive) out.push('  passive on;');
  if (p.gracefulRestart) out.push(`  graceful restart time ${p.gracefulRestart};`);
  if (p.keepaliveTime) out.push(`  keepalive time ${p.keepaliveTime};`);
  if (p.routeReflector && p.rrClusterId) out.push('  rr client;', `  rr cluster id ${p.rrClusterId};`);
  if (p.nextHopKeep) out.push('  next hop keep;');
  if (p.nextHopSelf) out.push('  next hop self;');
  if (p.numAllowLocalAs) out.push(`  allow local as ${p.numAllowLocalAs};`);
  out.push('}');
  return out;
}

// A higher-than-normal priority route wins over a local workload route in the kernel.
function importFilter(c: BirdConfig): string[] {
  return [
    `if (defined(bgp_local_pref)&&(bgp_local_pref > ${BIRD_INT_MAX - c.normalRoutePriority})) then`,
    `  preference = ${OVERRIDE_PREFERENCE};`,
    'accept;',
  ];
}

// krt_metric and bgp_local_pref carry the route's priority both ways (re-exported BGP
// routes keep their local preference; local ones derive it from the kernel metric).
function exportFilter(p: BirdPeer, c: BirdConfig): string[] {
  return [
    'if (defined(source) && source = RTS_BGP && defined(bgp_local_pref)) then {',
    `  krt_metric = ${BIRD_INT_MAX} - bgp_local_pref;`,
    '} else {',
    `  if (!defined(krt_metric)) then { krt_metric = ${c.normalRoutePriority}; }`,
    `  bgp_local_pref = ${BIRD_INT_MAX} - krt_metric;`,
    '}',
    `calico_export_to_bgp_peers(${p.sameAs});`,
    'reject;',
  ];
}
