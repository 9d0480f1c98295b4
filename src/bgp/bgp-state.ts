// What calico-node's BGP side knows, kept from validated v3 resources as confd's BGP
// syncer keeps its key tree: every node's BGP address, subnet, AS number, route-reflector
// cluster ID and labels; the IP pools; the BGPConfigurations (the global "default" and
// the per-node "node.<name>"); the BGPPeers; and this node's block affinities.
import type { ResourceSink } from '../datastore/validation-filter.js';
import type { SyncStatus } from '../datastore/types.js';
import type { Resource, ResourceOf } from '../model/schemas.js';
import type { ResourceRef } from '../model/validate.js';
import { parseCidr } from '../model/net.js';

export interface BgpNode {
  name: string;
  /** ip_addr_v4 / ip_addr_v6: the address of spec.bgp.ipv4Address ("" when unset). */
  ipv4: string;
  ipv6: string;
  /** network_v4: the subnet of spec.bgp.ipv4Address ("10.192.0.0/16"). */
  networkV4: string;
  asNumber: number | undefined;
  rrClusterId: string;
  labels: Record<string, string>;
}

export type BgpConfigurationSpec = ResourceOf<'BGPConfiguration'>['spec'];
export type BgpPeerResource = ResourceOf<'BGPPeer'>;
export type IpPoolSpec = ResourceOf<'IPPool'>['spec'];

export interface Affinity {
  cidr: string;
  state: string | undefined;
}

export class BgpState implements ResourceSink {
  readonly nodes = new Map<string, BgpNode>();
  readonly pools = new Map<string, IpPoolSpec>();
  readonly configs = new Map<string, BgpConfigurationSpec>();
  readonly peers = new Map<string, BgpPeerResource>();
  /** This node's block affinities, by resource name. */
  readonly affinities = new Map<string, Affinity>();
  readonly #hostname: string;
  readonly #onChange: () => void;
  status: SyncStatus = 'wait-for-datastore';

  constructor(hostname: string, onChange: () => void) {
    this.#hostname = hostname;
    this.#onChange = onChange;
  }

  onStatus(status: SyncStatus): void {
    this.status = status;
    this.#onChange();
  }

  onUpdate(ref: ResourceRef, resource: Resource | undefined): void {
    const name = ref.name ?? '';
    switch (ref.kind) {
      case 'Node':
        this.#set(this.nodes, name, resource && nodeOf(resource as ResourceOf<'Node'>));
        break;
      case 'IPPool':
        this.#set(this.pools, name, resource && (resource as ResourceOf<'IPPool'>).spec);
        break;
      case 'BGPConfiguration':
        this.#set(this.configs, name, resource && (resource as ResourceOf<'BGPConfiguration'>).spec);
        break;
      case 'BGPPeer':
        this.#set(this.peers, name, resource as BgpPeerResource | undefined);
        break;
      case 'BlockAffinity': {
        const spec = resource && (resource as ResourceOf<'BlockAffinity'>).spec;
        // As confd's BGP syncer: a block being claimed (pending) is not ours yet.
        const mine = spec && spec.node === this.#hostname && !spec.deleted && spec.state !== 'pending';
        this.#set(this.affinities, name, mine ? { cidr: spec.cidr, state: spec.state } : undefined);
        break;
      }
      default:
        return;
    }
    this.#onChange();
  }

  #set<V>(map: Map<string, V>, key: string, value: V | undefined): void {
    if (value === undefined) map.delete(key);
    else map.set(key, value);
  }

  /** The global BGPConfiguration ("default"), and this node's ("node.<name>"). */
  global(): BgpConfigurationSpec | undefined {
    return this.configs.get('default');
  }
  perNode(node: string): BgpConfigurationSpec | undefined {
    return this.configs.get(`node.${node}`);
  }
}

function nodeOf(r: ResourceOf<'Node'>): BgpNode {
  const bgp = r.spec.bgp;
  // The address itself (parseCidr gives the masked network).
  const hostPart = (c: string | undefined) => (c && parseCidr(c) ? (c.split('/')[0] as string) : '');
  return {
    name: r.metadata.name,
    ipv4: hostPart(bgp?.ipv4Address),
    ipv6: hostPart(bgp?.ipv6Address),
    networkV4: bgp?.ipv4Address ? (parseCidr(bgp.ipv4Address)?.text ?? '') : '',
    asNumber: bgp?.asNumber,
    rrClusterId: bgp?.routeReflectorClusterID ?? '',
    labels: r.metadata.labels ?? {},
  };
}
