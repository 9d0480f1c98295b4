// L3RouteResolver, as Felix's: which node each pod CIDR lives on, from IP pools, IPAM blocks
// (a route per block via its node, and a /32 per address borrowed from another node's
// block), this node's workloads' IPs, nodes' host addresses and tunnel addresses. Every
// CIDR any of these names is a route; its RouteUpdate is computed from everything on the
// path from the widest CIDR containing it down to itself (the containing pool gives the
// pool type, NAT and cross-subnet; the most specific block, host or reference gives the
// node and the route types), exactly as Felix's flush walks its trie. Changes only mark
// CIDRs dirty; flush() sends what changed (RouteUpdate) and what went (RouteRemove).
import { blockHost, type IpamBlock, nonAffineAllocations } from '../model/ipam.js';
import type { InternalIpPool } from '../model/internal.js';
import { cidrContains, containingCidrs, hostAddress, parseCidr } from '../model/net.js';
import type { ResourceOf } from '../model/schemas.js';
import { type IPPoolType, RouteType, type RouteUpdate } from '../proto/messages.js';

type RefType = 'wep' | 'ipip' | 'vxlan' | 'wireguard';
export type RouteSource = 'CalicoIPAM' | 'WorkloadIPs';

interface RouteInfo {
  pool?: { type: IPPoolType; natOutgoing: boolean; crossSubnet: boolean };
  /** The node of the block (or borrowed address) routed here. */
  blockNode?: string;
  hostNodes: string[];
  refs: Array<{ node: string; type: RefType; count: number }>;
  sent: boolean;
  /** The last RouteUpdate sent, so an unchanged route is not sent again. */
  last?: string | undefined;
}

interface NodeInfo {
  v4Addr: string;
  /** The node's subnet ("192.0.2.0/24"), for CrossSubnet. */
  v4Cidr: string;
  v6Addr: string;
  v6Cidr: string;
  ipipAddr: string;
  vxlanAddr: string;
  vxlanV6Addr: string;
  /** The node's WireGuard device addresses (spec.wireguard), which calico-node allocates. */
  wireguardAddr: string;
  wireguardV6Addr: string;
  addresses: string[];
}

export interface RouteCallbacks {
  onRouteUpdate(route: RouteUpdate): void;
  onRouteRemove(dst: string): void;
}

const valid = (ri: RouteInfo) =>
  !!ri.pool || ri.blockNode !== undefined || ri.hostNodes.length > 0 || ri.refs.length > 0;
const sameNode = (a: NodeInfo, b: NodeInfo) =>
  a.v4Addr === b.v4Addr &&
  a.v4Cidr === b.v4Cidr &&
  a.v6Addr === b.v6Addr &&
  a.v6Cidr === b.v6Cidr &&
  a.ipipAddr === b.ipipAddr &&
  a.vxlanAddr === b.vxlanAddr &&
  a.vxlanV6Addr === b.vxlanV6Addr &&
  a.wireguardAddr === b.wireguardAddr &&
  a.wireguardV6Addr === b.wireguardV6Addr &&
  [...a.addresses].sort().join() === [...b.addresses].sort().join();

/** Felix's pool type: VXLAN if vxlanMode is not Never, else IPIP if ipipMode is not Never, else no encapsulation. */
export function poolType(pool: InternalIpPool): IPPoolType {
  if (pool.vxlanMode !== 'Never') return 'VXLAN';
  if (pool.ipipMode !== 'Never') return 'IPIP';
  return 'NO_ENCAP';
}

export class RouteResolver {
  readonly #me: string;
  readonly #cb: RouteCallbacks;
  readonly #info = new Map<string, RouteInfo>();
  readonly #dirty = new Set<string>();
  readonly #nodes = new Map<string, NodeInfo>();
  /** block CIDR -> its routes (dst -> node). */
  readonly #blockRoutes = new Map<string, Map<string, string>>();
  /** node -> the block and workload routes to it (to re-send when the node changes). */
  readonly #nodeRoutes = new Map<string, Map<string, number>>();
  readonly #pools = new Map<string, string>();
  readonly #workloadCidrs = new Map<string, string[]>();
  /** The IPAM blocks as received (few: one per 64 addresses), so a RouteSource switch can replay them. */
  readonly #blocks = new Map<string, IpamBlock>();
  #source: RouteSource = 'CalicoIPAM';

  constructor(hostname: string, cb: RouteCallbacks) {
    this.#me = hostname;
    this.#cb = cb;
  }

  // ---- inputs ----

  onPoolUpdate(cidr: string, pool: InternalIpPool | undefined): void {
    const old = this.#pools.get(cidr);
    if (old) {
      this.#update(old, (ri) => delete ri.pool);
      this.#markContained(old);
      this.#pools.delete(cidr);
    }
    if (!pool) return;
    const c = parseCidr(pool.cidr)?.text ?? pool.cidr;
    this.#pools.set(cidr, c);
    this.#update(
      c,
      (ri) =>
        (ri.pool = {
          type: poolType(pool),
          natOutgoing: pool.masquerade,
          crossSubnet: pool.ipipMode === 'CrossSubnet' || pool.vxlanMode === 'CrossSubnet',
        }),
    );
    this.#markContained(c);
  }

  /**
   * RouteSource: with WorkloadIPs the blocks route nothing (the caller then feeds every
   * node's workloads, not only this node's); with CalicoIPAM they do. Set once the
   * configuration is resolved; inputs that came before are kept and re-applied.
   */
  setRouteSource(source: RouteSource): void {
    if (source === this.#source) return;
    this.#source = source;
    for (const [cidr, block] of this.#blocks) this.#applyBlock(cidr, source === 'CalicoIPAM' ? block : undefined);
  }

  get routeSource(): RouteSource {
    return this.#source;
  }

  onBlockUpdate(cidr: string, block: IpamBlock | undefined): void {
    if (block) this.#blocks.set(cidr, block);
    else this.#blocks.delete(cidr);
    if (this.#source === 'CalicoIPAM') this.#applyBlock(cidr, block);
  }

  #applyBlock(cidr: string, block: IpamBlock | undefined): void {
    const want = new Map<string, string>();
    if (block) {
      for (const a of nonAffineAllocations(block)) if (a.host) want.set(parseCidr(a.address)?.text as string, a.host);
      const host = blockHost(block);
      if (host) want.set(parseCidr(block.cidr)?.text ?? block.cidr, host);
    }
    const had = this.#blockRoutes.get(cidr) ?? new Map<string, string>();
    for (const [dst, node] of had) {
      if (want.get(dst) === node) continue;
      this.#update(dst, (ri) => delete ri.blockNode);
      this.#nodeRoute(node, dst, -1);
    }
    for (const [dst, node] of want) {
      if (had.get(dst) === node) continue;
      this.#update(dst, (ri) => (ri.blockNode = node));
      this.#nodeRoute(node, dst, +1);
    }
    if (want.size) this.#blockRoutes.set(cidr, want);
    else this.#blockRoutes.delete(cidr);
  }

  /** A workload's IPs: this node's with CalicoIPAM routes, every node's with WorkloadIPs (as Felix registers them). */
  onWorkloadUpdate(key: string, hostname: string, nets: string[] | undefined): void {
    const old = this.#workloadCidrs.get(key) ?? [];
    const next = (nets ?? []).map((n) => parseCidr(n)?.text ?? n);
    if (old.join() === next.join()) return;
    for (const c of next) {
      this.#addRef(c, hostname, 'wep');
      this.#nodeRoute(hostname, c, +1);
    }
    for (const c of old) {
      this.#removeRef(c, hostname, 'wep');
      this.#nodeRoute(hostname, c, -1);
    }
    if (next.length) this.#workloadCidrs.set(key, next);
    else this.#workloadCidrs.delete(key);
  }

  onNodeUpdate(name: string, node: ResourceOf<'Node'> | undefined): void {
    const next = node && nodeInfoOf(node);
    const old = this.#nodes.get(name);
    if ((!next && !old) || (next && old && sameNode(old, next))) return;
    if (name === this.#me && old?.v4Cidr !== next?.v4Cidr) {
      // Our subnet changed: routes to nodes in the old or new subnet may change same_subnet.
      for (const dst of this.#info.keys()) this.#dirty.add(dst);
    }
    if (next) {
      if (next.ipipAddr) this.#addRef(`${next.ipipAddr}/32`, name, 'ipip');
      if (next.vxlanAddr) this.#addRef(`${next.vxlanAddr}/32`, name, 'vxlan');
      if (next.vxlanV6Addr) this.#addRef(parseCidr(next.vxlanV6Addr)?.text as string, name, 'vxlan');
      for (const a of [next.wireguardAddr, next.wireguardV6Addr])
        if (a) this.#addRef(parseCidr(a)?.text as string, name, 'wireguard');
    }
    if (old) {
      if (old.ipipAddr) this.#removeRef(`${old.ipipAddr}/32`, name, 'ipip');
      if (old.vxlanAddr) this.#removeRef(`${old.vxlanAddr}/32`, name, 'vxlan');
      if (old.vxlanV6Addr) this.#removeRef(parseCidr(old.vxlanV6Addr)?.text as string, name, 'vxlan');
      for (const a of [old.wireguardAddr, old.wireguardV6Addr])
        if (a) this.#removeRef(parseCidr(a)?.text as string, name, 'wireguard');
      for (const a of hostCidrs(old)) this.#update(a, (ri) => (ri.hostNodes = ri.hostNodes.filter((n) => n !== name)));
      this.#nodes.delete(name);
    }
    if (next) {
      this.#nodes.set(name, next);
      for (const a of hostCidrs(next)) this.#update(a, (ri) => ri.hostNodes.includes(name) || ri.hostNodes.push(name));
    }
    for (const dst of this.#nodeRoutes.get(name)?.keys() ?? []) this.#dirty.add(dst);
  }

  // ---- output ----

  flush(): void {
    for (const dst of this.#dirty) {
      const path = this.#path(dst);
      const ri = this.#info.get(dst);
      if (!ri || !path.length) continue;
      if (!valid(ri)) {
        if (ri.sent) this.#cb.onRouteRemove(dst);
        this.#info.delete(dst);
        continue;
      }
      const route = this.#routeFor(dst, path);
      const text = route && JSON.stringify(route);
      if (route && text !== ri.last) {
        this.#cb.onRouteUpdate(route);
        ri.sent = true;
        ri.last = text;
      }
    }
    this.#dirty.clear();
  }

  // ---- the computation, as Felix's flush ----

  #routeFor(dst: string, path: Array<[string, RouteInfo]>): RouteUpdate | undefined {
    const rt: RouteUpdate = {
      types: 0,
      ipPoolType: 'NONE',
      dst,
      dstNodeName: '',
      dstNodeIp: '',
      sameSubnet: false,
      natOutgoing: false,
      localWorkload: false,
      borrowed: false,
    };
    let crossSubnet = false;
    let blockNode: string | undefined;
    let blockTypes = 0;
    for (const [, ri] of path) {
      if (ri.pool) {
        if (ri.pool.type !== 'NONE') rt.ipPoolType = ri.pool.type;
        if (ri.pool.natOutgoing) rt.natOutgoing = true;
        if (ri.pool.crossSubnet) crossSubnet = true;
      }
      if (ri.blockNode !== undefined) {
        if (blockNode !== undefined && blockNode !== ri.blockNode) rt.borrowed = true;
        else blockNode = ri.blockNode;
        rt.dstNodeName = ri.blockNode;
        blockTypes |= ri.blockNode === this.#me ? RouteType.LOCAL_WORKLOAD : RouteType.REMOTE_WORKLOAD;
      }
      if (ri.hostNodes.length) {
        rt.dstNodeName = ri.hostNodes[0] as string;
        rt.types |= rt.dstNodeName === this.#me ? RouteType.LOCAL_HOST : RouteType.REMOTE_HOST;
      }
      const first = ri.refs[0];
      if (first) {
        rt.dstNodeName = first.node;
        if (blockNode !== undefined && blockNode !== first.node) rt.borrowed = true;
        if (first.type === 'wep') {
          if (first.node === this.#me) {
            rt.localWorkload = true;
            rt.types |= RouteType.LOCAL_WORKLOAD;
          } else {
            rt.types |= RouteType.REMOTE_WORKLOAD;
          }
        } else {
          rt.types |= first.node === this.#me ? RouteType.LOCAL_TUNNEL : RouteType.REMOTE_TUNNEL;
          const tt = { ipip: false, vxlan: false, wireguard: false };
          for (const r of ri.refs) if (r.node === first.node && r.type !== 'wep') tt[r.type] = true;
          rt.tunnelType = tt;
        }
      }
    }
    // As Felix: every block on the path adds its workload type, also to a tunnel or host
    // address inside it (a remote VTEP in its node's block is REMOTE_WORKLOAD|REMOTE_TUNNEL,
    // which is what makes the overlay route it straight onto the tunnel device; seen on
    // Felix v3.31.7's dataplane: "10.68.2.1 dev vxlan.calico scope link").
    rt.types |= blockTypes;
    const v6 = dst.includes(':');
    const node = rt.dstNodeName ? this.#nodes.get(rt.dstNodeName) : undefined;
    if (node) rt.dstNodeIp = v6 ? node.v6Addr : node.v4Addr;
    rt.sameSubnet = crossSubnet && this.#inOurSubnet(rt.dstNodeName, v6);
    if (dst === '0.0.0.0/32' || dst === '::/128') return undefined;
    return rt;
  }

  #inOurSubnet(name: string, v6: boolean): boolean {
    const mine = this.#nodes.get(this.#me);
    const other = this.#nodes.get(name);
    if (!mine || !other) return false;
    const subnet = parseCidr(v6 ? mine.v6Cidr : mine.v4Cidr);
    const addr = v6 ? other.v6Addr : other.v4Addr;
    return !!subnet && !!addr && cidrContains(subnet, addr);
  }

  /** The known CIDRs containing `dst`, widest first, ending with `dst` itself. */
  #path(dst: string): Array<[string, RouteInfo]> {
    const c = parseCidr(dst);
    if (!c) return [];
    const out: Array<[string, RouteInfo]> = [];
    for (const k of containingCidrs(c)) {
      const ri = this.#info.get(k);
      if (ri) out.push([k, ri]);
    }
    return out;
  }

  #update(cidr: string, f: (ri: RouteInfo) => void): void {
    let ri = this.#info.get(cidr);
    if (!ri) this.#info.set(cidr, (ri = { hostNodes: [], refs: [], sent: false }));
    f(ri);
    this.#dirty.add(cidr);
    if (!valid(ri) && !ri.sent) {
      this.#info.delete(cidr);
      this.#dirty.delete(cidr);
    }
  }

  #markContained(pool: string): void {
    const p = parseCidr(pool);
    if (!p) return;
    for (const k of this.#info.keys()) {
      const c = parseCidr(k);
      if (c && c.version === p.version && c.prefix >= p.prefix && cidrContains(p, c.address)) this.#dirty.add(k);
    }
  }

  #addRef(cidr: string, node: string, type: RefType): void {
    this.#update(cidr, (ri) => {
      const r = ri.refs.find((x) => x.node === node && x.type === type);
      if (r) r.count++;
      else ri.refs.push({ node, type, count: 1 });
    });
  }

  #removeRef(cidr: string, node: string, type: RefType): void {
    this.#update(cidr, (ri) => {
      const i = ri.refs.findIndex((x) => x.node === node && x.type === type);
      if (i < 0) return;
      const r = ri.refs[i] as { count: number };
      if (--r.count === 0) ri.refs.splice(i, 1);
    });
  }

  #nodeRoute(node: string, dst: string, delta: number): void {
    let m = this.#nodeRoutes.get(node);
    if (!m) this.#nodeRoutes.set(node, (m = new Map()));
    const n = (m.get(dst) ?? 0) + delta;
    if (n > 0) m.set(dst, n);
    else m.delete(dst);
    if (!m.size) this.#nodeRoutes.delete(node);
  }
}

/**
 * A Node's addresses as the resolver uses them: bgp addresses (their subnet for CrossSubnet), else InternalIP then
 * ExternalIP addresses.
 */
export function nodeInfoOf(node: ResourceOf<'Node'>): NodeInfo | undefined {
  const info: NodeInfo = {
    v4Addr: '',
    v4Cidr: '',
    v6Addr: '',
    v6Cidr: '',
    ipipAddr: '',
    vxlanAddr: '',
    vxlanV6Addr: '',
    wireguardAddr: '',
    wireguardV6Addr: '',
    addresses: [],
  };
  const set = (text: string | undefined, v6: boolean) => {
    if (!text) return;
    const c = parseCidr(text);
    const addr = hostAddress(text);
    if (!c || !addr || (c.version === 6) !== v6) return;
    if (v6) [info.v6Addr, info.v6Cidr] = [addr, c.text];
    else [info.v4Addr, info.v4Cidr] = [addr, c.text];
  };
  const bgp = node.spec.bgp;
  if (bgp?.ipv4Address || bgp?.ipv6Address) {
    set(bgp.ipv4Address, false);
    set(bgp.ipv6Address, true);
  } else {
    const find = (type: string, v6: boolean) =>
      node.spec.addresses?.find((a) => a.type === type && a.address.includes(':') === v6)?.address;
    set(find('InternalIP', false) ?? find('ExternalIP', false), false);
    set(find('InternalIP', true) ?? find('ExternalIP', true), true);
  }
  if (!info.v4Addr && !info.v6Addr) return undefined;
  info.ipipAddr = bgp?.ipv4IPIPTunnelAddr ?? '';
  info.vxlanAddr = node.spec.ipv4VXLANTunnelAddr ?? '';
  info.vxlanV6Addr = node.spec.ipv6VXLANTunnelAddr ?? '';
  // Only well-formed addresses of the right family (a bad one would be a route to nowhere).
  info.wireguardAddr = addressOf(node.spec.wireguard?.interfaceIPv4Address, 4);
  info.wireguardV6Addr = addressOf(node.spec.wireguard?.interfaceIPv6Address, 6);
  for (const a of node.spec.addresses ?? []) {
    const ip = hostAddress(a.address);
    if (ip) info.addresses.push(ip);
  }
  return info;
}

/** `text`'s address when it is one of `version`, else "". */
function addressOf(text: string | undefined, version: 4 | 6): string {
  return text && parseCidr(text)?.version === version ? (hostAddress(text) ?? '') : '';
}

function hostCidrs(n: NodeInfo): string[] {
  const all = new Set([n.v4Addr, n.v6Addr, ...n.addresses].filter(Boolean));
  return [...all].map((a) => parseCidr(a)?.text as string);
}
