// Calico's datastore key layout for v3 resources, as calicoctl writes them to etcd:
// /calico/resources/v3/projectcalico.org/<plural>/[<namespace>/]<name>
import type { ResourceRef } from '../model/validate.js';
import { type Kind, KINDS, NAMESPACED_KINDS } from '../model/schemas.js';

export const KEY_PREFIX = '/calico/resources/v3/projectcalico.org/';

const PLURALS: Readonly<Record<Kind, string>> = {
  NetworkPolicy: 'networkpolicies',
  KubernetesNetworkPolicy: 'kubernetesnetworkpolicies',
  KubernetesEndpointSlice: 'kubernetesendpointslices',
  KubernetesClusterNetworkPolicy: 'kubernetesclusternetworkpolicies',
  IPAMBlock: 'ipamblocks',
  BGPConfiguration: 'bgpconfigurations',
  BGPPeer: 'bgppeers',
  BlockAffinity: 'blockaffinities',
  GlobalNetworkPolicy: 'globalnetworkpolicies',
  Tier: 'tiers',
  Profile: 'profiles',
  WorkloadEndpoint: 'workloadendpoints',
  HostEndpoint: 'hostendpoints',
  NetworkSet: 'networksets',
  GlobalNetworkSet: 'globalnetworksets',
  IPPool: 'ippools',
  FelixConfiguration: 'felixconfigurations',
  ClusterInformation: 'clusterinformations',
  Node: 'nodes',
};
const KIND_OF_PLURAL = new Map(Object.entries(PLURALS).map(([k, p]) => [p, k as Kind]));

export function pluralOf(kind: Kind): string {
  return PLURALS[kind];
}

export function kindOfPlural(plural: string): Kind | undefined {
  return KIND_OF_PLURAL.get(plural);
}

/** The key of a resource, or undefined if its kind is unknown or its name missing. */
export function keyOf(ref: ResourceRef): string | undefined {
  if (!(KINDS as readonly string[]).includes(ref.kind) || !ref.name) return undefined;
  const kind = ref.kind as Kind;
  if (NAMESPACED_KINDS.has(kind))
    return ref.namespace ? `${KEY_PREFIX}${PLURALS[kind]}/${ref.namespace}/${ref.name}` : undefined;
  return `${KEY_PREFIX}${PLURALS[kind]}/${ref.name}`;
}

/** The resource a key names, or undefined for a key outside the layout. */
export function refOfKey(key: string): ResourceRef | undefined {
  if (!key.startsWith(KEY_PREFIX)) return undefined;
  const parts = key.slice(KEY_PREFIX.length).split('/');
  const kind = KIND_OF_PLURAL.get(parts[0] ?? '');
  if (!kind) return undefined;
  if (NAMESPACED_KINDS.has(kind)) {
    return parts.length === 3 && parts[1] && parts[2] ? { kind, namespace: parts[1], name: parts[2] } : undefined;
  }
  return parts.length === 2 && parts[1] ? { kind, name: parts[1] } : undefined;
}
