// What one family's WireGuard should be, from the dataplane messages, as Felix's
// wireguard.Wireguard keeps it: each node's endpoint (its host address), public key and
// CIDRs (its blocks, borrowed workload addresses, tunnel addresses and, with host
// encryption, its host addresses), and this node's own CIDRs, key and device address.
// A peer is programmed only with an endpoint and a key no other node claims. From that:
// the device's peers and the routing table's routes. No I/O here.
import { type Cidr, cidrContains, hostAddress, parseCidr } from '../../model/net.js';
import { RouteType, type ToDataplane } from '../../proto/messages.js';
import type { WgPeer } from '../../native/wg.js';

export interface NodeData {
  /** The node's host address of this family ("" until known). */
  endpoint: string;
  /** base64; "" when the node has none. */
  publicKey: string;
  cidrs: Set<string>;
}

export interface PeerOptions {
  family: 4 | 6;
  hostname: string;
  /** WireguardHostEncryptionEnabled */
  hostEncryption: boolean;
  listenPort: number;
  /** WireguardPersistentKeepAlive, seconds */
  keepalive: number;
}

/** A WireGuard table route: via the device, thrown back to the main table, or (WireguardRequired) unreachable. */
export interface WgRoute {
  dst: string;
  type: 'device' | 'throw' | 'unreachable';
}

const WORKLOAD_OR_TUNNEL =
  RouteType.LOCAL_WORKLOAD | RouteType.REMOTE_WORKLOAD | RouteType.LOCAL_TUNNEL | RouteType.REMOTE_TUNNEL;

export class WireguardPeers {
  readonly nodes = new Map<string, NodeData>();
  /** Which node each CIDR is on. */
  readonly #owner = new Map<string, string>();
  /** How many other nodes claim each key (a shared key programs none of them). */
  readonly #claims = new Map<string, number>();
  /** This node's address of the family (the device's address under host encryption without a tunnel address). */
  hostAddr = '';
  /** This node's WireGuard device address (the Node's spec.wireguard), "" for none. */
  tunnelAddr = '';
  /** This node's public key as the datastore has it ("" for none). */
  publishedKey = '';
  readonly #o: PeerOptions;

  constructor(o: PeerOptions) {
    this.#o = o;
  }

  /** Applies a message; true when it changed what the device or its table should be. */
  onUpdate(msg: ToDataplane): boolean {
    const v6 = this.#o.family === 6;
    switch (msg.type) {
      case 'HostMetadataUpdate':
      case 'HostMetadataV6Update': {
        if ((msg.type === 'HostMetadataV6Update') !== v6) return false;
        const addr = msg.type === 'HostMetadataUpdate' ? msg.ipv4Addr : msg.ipv6Addr;
        // In the kernel's spelling, which a read-back of the device gives.
        return this.#setEndpoint(msg.hostname, hostAddress(addr) ?? '');
      }
      case 'HostMetadataRemove':
      case 'HostMetadataV6Remove':
        if ((msg.type === 'HostMetadataV6Remove') !== v6) return false;
        return this.#setEndpoint(msg.hostname, '');
      case 'WireguardEndpointUpdate':
      case 'WireguardEndpointV6Update': {
        if ((msg.type === 'WireguardEndpointV6Update') !== v6) return false;
        const key = msg.type === 'WireguardEndpointUpdate' ? msg.publicKey : msg.publicKeyV6;
        const addr = msg.type === 'WireguardEndpointUpdate' ? msg.interfaceIpv4Addr : msg.interfaceIpv6Addr;
        return this.#setKey(msg.hostname, key, addr);
      }
      case 'WireguardEndpointRemove':
      case 'WireguardEndpointV6Remove':
        if ((msg.type === 'WireguardEndpointV6Remove') !== v6) return false;
        return this.#setKey(msg.hostname, '', '');
      case 'RouteUpdate':
        return this.#route(msg.route.dst, msg.route.dstNodeName, msg.route.types);
      case 'RouteRemove':
        return this.#route(msg.dst, '', 0);
      default:
        return false;
    }
  }

  #node(name: string): NodeData {
    let n = this.nodes.get(name);
    if (!n) this.nodes.set(name, (n = { endpoint: '', publicKey: '', cidrs: new Set() }));
    return n;
  }

  #setEndpoint(name: string, addr: string): boolean {
    if (name === this.#o.hostname) {
      const changed = this.hostAddr !== addr;
      this.hostAddr = addr;
      return changed;
    }
    const n = this.#node(name);
    if (n.endpoint === addr) return false;
    n.endpoint = addr;
    return true;
  }

  #setKey(name: string, key: string, addr: string): boolean {
    if (name === this.#o.hostname) {
      const changed = this.publishedKey !== key || this.tunnelAddr !== addr;
      this.publishedKey = key;
      this.tunnelAddr = hostAddress(addr) ?? '';
      return changed;
    }
    const n = this.#node(name);
    if (n.publicKey === key) return false;
    if (n.publicKey) {
      const left = (this.#claims.get(n.publicKey) ?? 1) - 1;
      if (left) this.#claims.set(n.publicKey, left);
      else this.#claims.delete(n.publicKey);
    }
    if (key) this.#claims.set(key, (this.#claims.get(key) ?? 0) + 1);
    n.publicKey = key;
    return true;
  }

  /** As Felix's wireguardManager: workload and tunnel routes, and remote hosts' under host encryption. */
  #route(dst: string, node: string, types: number): boolean {
    const c = parseCidr(dst);
    if (!c || c.version !== this.#o.family) return false;
    const wanted =
      (types & WORKLOAD_OR_TUNNEL) !== 0 || (this.#o.hostEncryption && (types & RouteType.REMOTE_HOST) !== 0);
    const owner = this.#owner.get(c.text);
    const next = wanted ? node : '';
    if (owner === next) return false;
    if (owner !== undefined) {
      this.nodes.get(owner)?.cidrs.delete(c.text);
      this.#owner.delete(c.text);
    }
    if (next) {
      this.#node(next).cidrs.add(c.text);
      this.#owner.set(c.text, next);
    }
    return true;
  }

  /** Felix's shouldProgramWireguardPeer: an endpoint, a key, and no other node claiming that key. */
  programmable(name: string): boolean {
    const n = this.nodes.get(name);
    if (!n || name === this.#o.hostname || !n.endpoint || !n.publicKey) return false;
    return this.#claims.get(n.publicKey) === 1;
  }

  /** The peers the device should have, by public key. */
  desiredPeers(): Map<string, WgPeer> {
    const out = new Map<string, WgPeer>();
    for (const [name, n] of this.nodes) {
      if (!this.programmable(name)) continue;
      out.set(n.publicKey, {
        publicKey: n.publicKey,
        endpoint:
          this.#o.family === 6 ? `[${n.endpoint}]:${this.#o.listenPort}` : `${n.endpoint}:${this.#o.listenPort}`,
        allowedIps: [...n.cidrs].sort(),
        persistentKeepalive: this.#o.keepalive,
      });
    }
    return out;
  }

  /**
   * The WireGuard table: a programmed peer's CIDRs via the device; another node's thrown
   * back to the main table (in clear, as Felix), or unreachable when `required`; this
   * node's own thrown back (local delivery), the narrower ones inside a wider one left out.
   */
  desiredRoutes(required: boolean, deviceUsable: boolean): WgRoute[] {
    const out: WgRoute[] = [];
    for (const [name, n] of this.nodes) {
      if (name === this.#o.hostname) continue;
      const type = deviceUsable && this.programmable(name) ? 'device' : required ? 'unreachable' : 'throw';
      for (const dst of n.cidrs) out.push({ dst, type });
    }
    const local = [...(this.nodes.get(this.#o.hostname)?.cidrs ?? [])];
    const parsed = local.map((t) => parseCidr(t) as Cidr);
    for (const c of parsed)
      if (!parsed.some((w) => w.prefix < c.prefix && cidrContains(w, c.address)))
        out.push({ dst: c.text, type: 'throw' });
    return out;
  }

  /** The nodes whose pods' traffic `required` blocks (no key, a shared key, or no device). */
  blocked(deviceUsable: boolean): string[] {
    return [...this.nodes.keys()].filter(
      (name) =>
        name !== this.#o.hostname && this.nodes.get(name)?.cidrs.size && (!deviceUsable || !this.programmable(name)),
    );
  }

  /** The device's address: the tunnel address, else (host encryption) the host's; "" for none. */
  deviceAddress(): string {
    const a = this.tunnelAddr || (this.#o.hostEncryption ? this.hostAddr : '');
    return a ? `${a}/${this.#o.family === 4 ? 32 : 128}` : '';
  }
}
