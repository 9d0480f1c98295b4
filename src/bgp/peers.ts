// This node's BGP peerings, as confd computes them: the node-to-node mesh, then the
// BGPPeers - global ones (no node, no nodeSelector) first, then node-specific ones, then
// the reverse peerings that keep explicit peerings symmetric - each peering once (the
// first emitted wins, and a global peering hides a node-specific one to the same address
// and port), each turned into a BIRD protocol with its name, filters and options.
import { parseSelector } from '../native/selector.js';
import { parseDuration, splitPeerIP } from '../model/bgp.js';
import type { BgpNode, BgpPeerResource, BgpState } from './bgp-state.js';

/** A peering before it becomes a protocol (libcalico-go's backends.BGPPeer). */
export interface PeerData {
  ip: string;
  port: number;
  asNumber: number;
  localAsNumber: number;
  sourceAddr: string;
  ttlSecurity: number;
  keepNextHop: boolean;
  nextHopMode: string;
  calicoNode: boolean;
  rrClusterId: string;
  restartTime: string;
  keepaliveTime: string;
  numAllowLocalAs: number;
  reachableBy: string;
}

/** A BIRD `protocol bgp` (confd's BirdBGPPeer). */
export interface BirdPeer {
  name: string;
  ip: string;
  port: string;
  asNumber: string;
  localAsNumber: string;
  sourceAddr: string;
  ttlSecurity: string;
  sameAs: boolean;
  passive: boolean;
  gracefulRestart: string;
  keepaliveTime: string;
  routeReflector: boolean;
  rrClusterId: string;
  nextHopSelf: boolean;
  nextHopKeep: boolean;
  numAllowLocalAs: string;
  /** Static route needed to reach the peer (reachableBy). */
  reachableBy: string;
}

export const DEFAULT_AS = 64512;

/** Context every peering is computed in. */
export interface PeerContext {
  state: BgpState;
  hostname: string;
  /** Reported once by the caller: inputs the peerings cannot honour. */
  problems: Set<string>;
}

const globalAs = (c: PeerContext) => c.state.global()?.asNumber ?? DEFAULT_AS;
const nodeAs = (c: PeerContext, n: BgpNode) => n.asNumber ?? globalAs(c);
const nodePort = (c: PeerContext, name: string) =>
  c.state.perNode(name)?.listenPort ?? c.state.global()?.listenPort ?? 0;
const secondsText = (d: string | undefined) => (d === undefined ? '' : String(Math.round(parseDuration(d) ?? 0)));

function nodesMatching(c: PeerContext, selector: string): BgpNode[] {
  const sel = parseSelector(selector);
  return [...c.state.nodes.values()]
    .filter((n) => sel.evaluate(n.labels))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** confd's nodeAsBGPPeers (IPv4 only): the node's address, AS, listen port, cluster ID. */
function nodeAsPeer(c: PeerContext, n: BgpNode, r: BgpPeerResource): PeerData | undefined {
  if (!n.ipv4) return undefined;
  return {
    ...fromResource(r),
    ip: n.ipv4,
    port: nodePort(c, n.name),
    asNumber: nodeAs(c, n),
    localAsNumber: 0,
    calicoNode: false,
    rrClusterId: n.rrClusterId,
    numAllowLocalAs: 0,
  };
}

/** The fields every peering of a BGPPeer shares (setPeerConfigFieldsFromV3Resource and the next-hop mode). */
function fromResource(r: BgpPeerResource): PeerData {
  const s = r.spec;
  return {
    ip: '',
    port: 0,
    asNumber: s.asNumber ?? 0,
    localAsNumber: s.localASNumber ?? 0,
    sourceAddr: s.sourceAddress ?? 'UseNodeIP',
    ttlSecurity: s.ttlSecurity ?? 0,
    keepNextHop: s.nextHopMode === undefined ? (s.keepOriginalNextHop ?? false) : false,
    nextHopMode: s.nextHopMode ?? '',
    calicoNode: false,
    rrClusterId: '',
    restartTime: secondsText(s.maxRestartTime),
    keepaliveTime: secondsText(s.keepaliveTime),
    numAllowLocalAs: s.numAllowedLocalASNumbers ?? 0,
    reachableBy: s.reachableBy ?? '',
  };
}

/** A BGPPeer with peerIP: one peering to that address (a Calico node's listen port when it is one). */
function explicitPeer(c: PeerContext, r: BgpPeerResource): PeerData | undefined {
  const parsed = splitPeerIP(r.spec.peerIP ?? '');
  if (!parsed || parsed.ip.includes(':')) return undefined;
  let port = parsed.port;
  if (port === 0) {
    const node = nodesWithIpAndAs(c, parsed.ip, r.spec.asNumber ?? 0, 0)[0];
    if (node) port = nodePort(c, node.name);
  }
  const calicoNode = [...c.state.nodes.values()].some((n) => n.ipv4 === parsed.ip);
  return { ...fromResource(r), ip: parsed.ip, port, calicoNode };
}

function nodesWithIpAndAs(c: PeerContext, ip: string, as: number, port: number): BgpNode[] {
  const want = as === 0 ? globalAs(c) : as;
  return [...c.state.nodes.values()].filter(
    (n) => (n.ipv4 === ip || n.ipv6 === ip) && nodeAs(c, n) === want && (port === 0 || nodePort(c, n.name) === port),
  );
}

function peersOf(c: PeerContext, r: BgpPeerResource): PeerData[] {
  if (r.spec.peerSelector) return nodesMatching(c, r.spec.peerSelector).flatMap((n) => nodeAsPeer(c, n, r) ?? []);
  const p = explicitPeer(c, r);
  return p ? [p] : [];
}

/** The nodes a BGPPeer applies to: its node, its nodeSelector's, or (global) undefined. */
function localNodesOf(c: PeerContext, r: BgpPeerResource): BgpNode[] | undefined {
  if (r.spec.nodeSelector) return nodesMatching(c, r.spec.nodeSelector);
  if (r.spec.node) return [...c.state.nodes.values()].filter((n) => n.name === r.spec.node);
  return undefined;
}

function reportUnsupported(c: PeerContext, r: BgpPeerResource): boolean {
  const s = r.spec as Record<string, unknown>;
  const name = `BGPPeer ${r.metadata.name}`;
  if (s.localWorkloadSelector) {
    c.problems.add(`${name}: localWorkloadSelector (peering with workloads) is not supported; the peer is skipped`);
    return true;
  }
  // Never peered unauthenticated or unfiltered (issue 52, issue 51 D8): a peering palisade
  // cannot secure or filter as asked is not brought up at all.
  let skip = false;
  if (s.password) {
    c.problems.add(
      `${name}: password (a Kubernetes secret reference) is not supported; the peering is not brought up rather than peer without it`,
    );
    skip = true;
  }
  if (r.spec.filters?.length) {
    c.problems.add(
      `${name}: filters (BGPFilter) are not supported; the peering is not brought up rather than export and import unfiltered`,
    );
    skip = true;
  }
  return skip;
}

/**
 * The explicit peerings for this node: [global, node-specific], each keyed by address and
 * port, as confd's updatePeersV1 emits them (only this node's are kept).
 */
export function explicitPeerings(c: PeerContext): { global: PeerData[]; node: PeerData[] } {
  const global = new Map<string, PeerData>();
  const node = new Map<string, PeerData>();
  const key = (p: PeerData) => `${p.ip}|${p.port}`;
  const emitNode = (p: PeerData) => {
    if (!global.has(key(p)) && !node.has(key(p))) node.set(key(p), p);
  };
  const peers = [...c.state.peers.values()]
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
    .filter((r) => !reportUnsupported(c, r));
  for (const r of peers) {
    if (localNodesOf(c, r) !== undefined) continue;
    for (const p of peersOf(c, r)) if (!global.has(key(p))) global.set(key(p), p);
  }
  for (const r of peers) {
    const locals = localNodesOf(c, r);
    if (locals === undefined || !locals.some((n) => n.name === c.hostname)) continue;
    for (const p of peersOf(c, r)) emitNode(p);
  }
  // Reverse peerings: this node is the remote end (peerSelector or peerIP and AS match it);
  // the other ends are the BGPPeer's local nodes (all nodes for a global one).
  for (const r of peers) {
    if (r.spec.reversePeering === 'Manual') continue;
    const me = c.state.nodes.get(c.hostname);
    if (!me || !isRemoteEnd(c, r, me)) continue;
    const others = localNodesOf(c, r) ?? nodesMatching(c, 'all()');
    for (const n of others) {
      const p = nodeAsPeer(c, n, r);
      if (p) emitNode(p);
    }
  }
  return { global: [...global.values()], node: [...node.values()] };
}

function isRemoteEnd(c: PeerContext, r: BgpPeerResource, me: BgpNode): boolean {
  if (r.spec.peerSelector) return nodesMatching(c, r.spec.peerSelector).some((n) => n.name === me.name);
  const parsed = splitPeerIP(r.spec.peerIP ?? '');
  if (!parsed || parsed.ip.includes(':')) return false;
  return nodesWithIpAndAs(c, parsed.ip, r.spec.asNumber ?? 0, parsed.port).some((n) => n.name === me.name);
}

/** The node-to-node mesh: every other node with an IPv4 address that is not a route reflector. */
export function meshPeers(c: PeerContext, me: BgpNode): BirdPeer[] {
  if (me.rrClusterId) return [];
  if (c.state.global()?.nodeToNodeMeshEnabled === false) return [];
  const g = c.state.global();
  if (g && (g as Record<string, unknown>).nodeMeshPassword) {
    c.problems.add(
      'BGPConfiguration default: nodeMeshPassword (a Kubernetes secret reference) is not supported; the node-to-node mesh is not brought up rather than peer without it',
    );
    return [];
  }
  const myAs = String(nodeAs(c, me));
  const out: BirdPeer[] = [];
  for (const n of c.state.nodes.values()) {
    if (!n.ipv4 || n.ipv4 === me.ipv4 || n.rrClusterId) continue;
    const as = String(nodeAs(c, n));
    const port = nodePort(c, n.name);
    out.push({
      ...emptyPeer(),
      name: `Mesh_${n.ipv4.replaceAll('.', '_')}`,
      ip: n.ipv4,
      port: port ? String(port) : '',
      asNumber: as,
      sourceAddr: me.ipv4,
      ttlSecurity: 'off',
      sameAs: as === myAs,
      gracefulRestart: secondsText(g?.nodeMeshMaxRestartTime),
      // One side connects, the other listens, so the two never race.
      passive: n.ipv4 > me.ipv4,
    });
  }
  return out;
}

function emptyPeer(): BirdPeer {
  return {
    name: '',
    ip: '',
    port: '',
    asNumber: '',
    localAsNumber: '',
    sourceAddr: '',
    ttlSecurity: 'off',
    sameAs: true,
    passive: false,
    gracefulRestart: '',
    keepaliveTime: '',
    routeReflector: false,
    rrClusterId: '',
    nextHopSelf: false,
    nextHopKeep: false,
    numAllowLocalAs: '',
    reachableBy: '',
  };
}

/** confd's buildPeerFromData: a peering as a BIRD protocol named `<prefix>_<ip>[_port_<n>]`. */
export function birdPeer(c: PeerContext, me: BgpNode, p: PeerData, prefix: 'Global' | 'Node'): BirdPeer | undefined {
  if (!p.ip || p.ip === me.ipv4) return undefined;
  const myAs = String(nodeAs(c, me));
  const peer: BirdPeer = {
    ...emptyPeer(),
    name: `${prefix}_${p.ip.replaceAll('.', '_')}${p.port > 0 ? `_port_${p.port}` : ''}`,
    ip: p.ip,
    port: p.port > 0 ? String(p.port) : '',
    asNumber: String(p.asNumber),
    localAsNumber: p.localAsNumber ? String(p.localAsNumber) : '',
    ttlSecurity: p.ttlSecurity > 0 ? String(p.ttlSecurity) : 'off',
    sourceAddr: p.sourceAddr === 'UseNodeIP' ? me.ipv4 : '',
    gracefulRestart: p.restartTime,
    keepaliveTime: p.keepaliveTime,
    numAllowLocalAs: p.numAllowLocalAs > 0 ? String(p.numAllowLocalAs) : '',
    nextHopSelf: p.nextHopMode === 'Self',
    nextHopKeep: p.nextHopMode === 'Keep',
    reachableBy: p.reachableBy,
  };
  const effectiveAs = peer.localAsNumber || myAs;
  peer.sameAs = peer.asNumber === effectiveAs;
  if (p.keepNextHop && peer.asNumber !== effectiveAs) peer.nextHopKeep = true;
  // This node is a route reflector: iBGP peers outside its cluster are its clients.
  if (peer.asNumber === effectiveAs && me.rrClusterId && p.rrClusterId !== me.rrClusterId) {
    peer.routeReflector = true;
    peer.rrClusterId = me.rrClusterId;
  }
  if (prefix === 'Global' && p.calicoNode && p.ip > me.ipv4) peer.passive = true;
  return peer;
}
