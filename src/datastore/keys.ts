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

/**
 * The resource a key names, or undefined for a key outside the layout. Every update of
 * every datastore passes here: the key is cut at its slashes, not split into an array.
 */
export function refOfKey(key: string): ResourceRef | undefined {
  if (!key.startsWith(KEY_PREFIX)) return undefined;
  const from = KEY_PREFIX.length;
  const a = key.indexOf('/', from);
  if (a < 0) return undefined;
  const kind = KIND_OF_PLURAL.get(key.slice(from, a));
  if (!kind) return undefined;
  const b = key.indexOf('/', a + 1);
  if (!NAMESPACED_KINDS.has(kind)) return b < 0 && a + 1 < key.length ? { kind, name: key.slice(a + 1) } : undefined;
  if (b < 0 || b === a + 1 || b + 1 === key.length || key.indexOf('/', b + 1) >= 0) return undefined;
  return { kind, namespace: key.slice(a + 1, b), name: key.slice(b + 1) };
}
