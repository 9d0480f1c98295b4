// The second wall against BIRD syntax injection (issue 51 D3). Validation keeps every value
// that reaches a BIRD file to its syntax (addresses, CIDRs, interface globs, community
// numbers), but a value interpolated into bird.cfg is code to BIRD: one holding a quote, a
// semicolon or a brace ends its statement and starts the writer's own (an extra static
// route, a whole extra peer, and `bird -p` accepts it). So before anything is written each
// interpolated value is checked again against the only characters those syntaxes use; a
// value with any other is refused, nothing is rendered, and BIRD keeps its previous
// configuration.
import { parseIp } from '../model/net.js';
import type { BirdConfig } from './bird-config.js';

/** Addresses, CIDRs, numbers, protocol names and interface globs: nothing BIRD's grammar gives meaning to. */
const SAFE = /^[A-Za-z0-9_.:/*+-]*$/;

const PEER_FIELDS = [
  'name',
  'ip',
  'port',
  'asNumber',
  'localAsNumber',
  'sourceAddr',
  'ttlSecurity',
  'gracefulRestart',
  'keepaliveTime',
  'numAllowLocalAs',
  'reachableBy',
] as const;

/** The input-derived values `c` interpolates, each with the field it came from. */
function interpolated(c: BirdConfig): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ['the router ID', c.routerId],
    ['the AS number', c.asNumber],
    ['the listen address', c.listenAddress],
    ['the listen port', c.listenPort],
  ];
  for (const [i, name] of c.ignoredInterfaces.entries()) out.push([`BGPConfiguration ignoredInterfaces[${i}]`, name]);
  for (const a of c.communities) {
    out.push(['BGPConfiguration prefixAdvertisements cidr', a.cidr]);
    for (const v of a.values) out.push([`BGPConfiguration communities of ${a.cidr}`, v]);
  }
  for (const p of c.peers) {
    for (const f of PEER_FIELDS) out.push([`peer ${p.name} ${f}`, p[f]]);
    out.push([`peer ${p.name} rrClusterId`, p.rrClusterId]);
  }
  // A route reflector's peers carry its cluster ID: checked whether or not one does yet.
  out.push([`Node ${c.node.name} spec.bgp.routeReflectorClusterID`, c.node.rrClusterId]);
  for (const p of c.pools) out.push(['IPPool cidr', p.cidr]);
  for (const a of c.affinities) out.push(['block affinity cidr', a.cidr], ['block affinity state', a.state ?? '']);
  const s = c.services;
  for (const [what, list] of [
    ['serviceClusterIPs, serviceExternalIPs or serviceLoadBalancerIPs', [...s.advertised, ...s.rejected]],
    ['serviceExternalIPs', s.externalIPs],
    ['serviceLoadBalancerIPs', s.loadBalancerIPs],
  ] as const)
    for (const v of list) out.push([`BGPConfiguration ${what}`, v]);
  return out;
}

/** A value quoted for a log line: JSON, at most 64 characters of it. */
export function quoted(v: string): string {
  const j = JSON.stringify(v);
  return j.length > 64 ? `${j.slice(0, 60)}..." (${v.length} characters)` : j;
}

/** Why `c` must not be rendered: each value that could change BIRD's syntax, or an unusable router ID. */
export function unsafeValues(c: BirdConfig, routerIdOption: string | undefined): string[] {
  const problems: string[] = [];
  for (const [field, value] of interpolated(c)) {
    if (SAFE.test(value)) continue;
    const ch = [...value].find((x) => !SAFE.test(x)) as string;
    problems.push(
      `${field} ${quoted(value)} holds ${JSON.stringify(ch)}, which is not part of its syntax and could rewrite BIRD's configuration: nothing is rendered; BIRD keeps its previous configuration`,
    );
  }
  const id = parseIp(c.routerId);
  if (!problems.length && (!id || c.routerId.includes(':')))
    problems.push(
      `the router ID ${quoted(c.routerId)} (${routerIdOption ? 'CALICO_ROUTER_ID' : "the node's IPv4 address"}) is not an IPv4 address: nothing is rendered`,
    );
  return problems;
}
