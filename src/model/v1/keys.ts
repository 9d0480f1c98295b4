// The keys of Felix's internal ("v1") model, as libcalico-go's backend/model names them
// and as Typha sends them (model.KeyToDefaultPath): what the update processors produce
// from v3 resources and what the calc graph consumes. Names inside a path escape "/" and
// "%" (escapeName), except where upstream does not (config names, host metadata).
import type { Kind } from '../schemas.js';
import { KEY_PREFIX, kindOfPlural, pluralOf } from '../../datastore/keys.js';
import { NAMESPACED_KINDS } from '../schemas.js';
import { legacyV1NameOf } from '../names.js';

export type V1Key =
  /** `tier` is set for a key in the layout before 3.32 (the tier was in the key, not the value). */
  | { type: 'Policy'; kind: string; namespace: string; name: string; tier?: string }
  | { type: 'Tier'; name: string }
  | { type: 'ProfileRules'; name: string }
  | { type: 'ProfileLabels'; name: string }
  | { type: 'WorkloadEndpoint'; hostname: string; orchestratorId: string; workloadId: string; endpointId: string }
  | { type: 'HostEndpoint'; hostname: string; endpointId: string }
  | { type: 'NetworkSet'; name: string }
  | { type: 'IPPool'; cidr: string }
  | { type: 'GlobalConfig'; name: string }
  | { type: 'HostConfig'; hostname: string; name: string }
  | { type: 'ReadyFlag' }
  | { type: 'Wireguard'; nodeName: string }
  | { type: 'Block'; cidr: string }
  /** A v3 resource passed through as itself (Node, Profile, selector-scoped FelixConfiguration, BGP kinds). */
  | { type: 'Resource'; kind: Kind; namespace?: string; name: string };

export type V1KeyType = V1Key['type'];
export type V1KeyOf<T extends V1KeyType> = Extract<V1Key, { type: T }>;

export function escapeName(name: string): string {
  return name.replaceAll('%', '%25').replaceAll('/', '%2f');
}

export function unescapeName(name: string): string {
  return name.replaceAll('%2f', '/').replaceAll('%25', '%');
}

/** The key's path (model.KeyToDefaultPath). */
export function keyToPath(k: V1Key): string {
  switch (k.type) {
    case 'Policy':
      return `/calico/v1/policy/${k.kind}/${k.namespace}/${k.name}`;
    case 'Tier':
      return `/calico/v1/policy/tier/${k.name}/metadata`;
    case 'ProfileRules':
      return `/calico/v1/policy/profile/${escapeName(k.name)}/rules`;
    case 'ProfileLabels':
      return `/calico/v1/policy/profile/${escapeName(k.name)}/labels`;
    case 'WorkloadEndpoint':
      return `/calico/v1/host/${k.hostname}/workload/${escapeName(k.orchestratorId)}/${escapeName(k.workloadId)}/endpoint/${escapeName(k.endpointId)}`;
    case 'HostEndpoint':
      return `/calico/v1/host/${k.hostname}/endpoint/${escapeName(k.endpointId)}`;
    case 'NetworkSet':
      return `/calico/v1/netset/${escapeName(k.name)}`;
    case 'IPPool':
      return `/calico/v1/ipam/v${k.cidr.includes(':') ? 6 : 4}/pool/${k.cidr.replace('/', '-')}`;
    case 'GlobalConfig':
      return `/calico/v1/config/${k.name}`;
    case 'HostConfig':
      return `/calico/v1/host/${k.hostname}/config/${k.name}`;
    case 'ReadyFlag':
      return '/calico/v1/Ready';
    case 'Wireguard':
      return `/calico/v1/host/${k.nodeName}/wireguard`;
    case 'Block':
      return `/calico/ipam/v2/assignment/ipv${k.cidr.includes(':') ? 6 : 4}/block/${k.cidr.replace('/', '-')}`;
    case 'Resource':
      return `${KEY_PREFIX}${pluralOf(k.kind)}/${k.namespace !== undefined ? `${escapeName(k.namespace)}/` : ''}${escapeName(k.name)}`;
  }
}

/**
 * The kind of key a path's prefix says it is, when it is one Felix reads, whatever the rest
 * of it: so a malformed key of a kind in use can be told from a kind of no use.
 */
export function knownKindOfPath(path: string): string | undefined {
  const p = (path.startsWith('/') ? path.slice(1) : path).split('/', 6);
  if (p[0] !== 'calico') return undefined;
  if (p[1] === 'v1') {
    if (p[2] === 'policy') return p[3] === 'tier' ? 'tier or tiered policy' : p[3] === 'profile' ? 'profile' : 'policy';
    if (p[2] === 'host')
      return ['workload', 'endpoint', 'config', 'wireguard'].includes(p[4] ?? '') ? `host ${p[4]}` : undefined;
    return ['config', 'netset', 'ipam', 'Ready'].includes(p[2] ?? '') ? (p[2] as string) : undefined;
  }
  if (p[1] === 'ipam' && p[2] === 'v2' && p[3] === 'assignment') return 'IPAM block';
  if (p[1] === 'resources' && path.startsWith(KEY_PREFIX)) return kindOfPlural(p[4] ?? '');
  return undefined;
}

/** The key a path names (model.KeyFromDefaultPath), or undefined for a path Felix has no use for. */
export function pathToKey(path: string): V1Key | undefined {
  const parts = (path.startsWith('/') ? path.slice(1) : path).split('/');
  if (parts[0] !== 'calico' || parts.length < 3) return undefined;
  if (parts[1] === 'v1') return v1Key(path, parts);
  if (
    parts[1] === 'ipam' &&
    parts[2] === 'v2' &&
    parts[3] === 'assignment' &&
    parts[5] === 'block' &&
    parts.length === 7
  ) {
    return { type: 'Block', cidr: (parts[6] as string).replace('-', '/') };
  }
  if (parts[1] === 'resources' && path.startsWith(KEY_PREFIX)) return resourceKey(parts.slice(4));
  return undefined;
}

function v1Key(path: string, p: string[]): V1Key | undefined {
  switch (p[2]) {
    case 'config':
      return p.length > 3 ? { type: 'GlobalConfig', name: p.slice(3).join('/') } : undefined;
    case 'Ready':
      return p.length === 3 && path.startsWith('/') ? { type: 'ReadyFlag' } : undefined;
    case 'netset':
      return p.length === 4 ? { type: 'NetworkSet', name: unescapeName(p[3] as string) } : undefined;
    case 'ipam':
      return p.length === 6 && /^v[46]$/.test(p[3] as string) && p[4] === 'pool'
        ? { type: 'IPPool', cidr: (p[5] as string).replace('-', '/') }
        : undefined;
    case 'host':
      return hostKey(p);
    case 'policy':
      return policyKey(p);
    default:
      return undefined;
  }
}

function hostKey(p: string[]): V1Key | undefined {
  if (p.length < 5) return undefined;
  const hostname = unescapeName(p[3] as string);
  switch (p[4]) {
    case 'workload':
      if (p.length !== 9 || p[7] !== 'endpoint') return undefined;
      return {
        type: 'WorkloadEndpoint',
        hostname,
        orchestratorId: unescapeName(p[5] as string),
        workloadId: unescapeName(p[6] as string),
        endpointId: unescapeName(p[8] as string),
      };
    case 'endpoint':
      return p.length === 6 ? { type: 'HostEndpoint', hostname, endpointId: unescapeName(p[5] as string) } : undefined;
    case 'config':
      return p.length > 5 ? { type: 'HostConfig', hostname, name: p.slice(5).join('/') } : undefined;
    case 'wireguard':
      return p.length === 5 ? { type: 'Wireguard', nodeName: hostname } : undefined;
    default:
      return undefined;
  }
}

function policyKey(p: string[]): V1Key | undefined {
  if (p.length < 5) return undefined;
  if (p[3] === 'tier') {
    if (p.length === 7 && p[5] === 'policy') return legacyPolicyKey(p[4] as string, unescapeName(p[6] as string));
    return p.length === 6 && p[5] === 'metadata' ? { type: 'Tier', name: unescapeName(p[4] as string) } : undefined;
  }
  if (p[3] === 'profile') {
    if (p.length !== 6) return undefined;
    const name = unescapeName(p[4] as string);
    if (p[5] === 'rules') return { type: 'ProfileRules', name };
    if (p[5] === 'labels') return { type: 'ProfileLabels', name };
    return undefined;
  }
  if (p.length !== 6) return undefined;
  return {
    type: 'Policy',
    kind: unescapeName(p[3] as string),
    namespace: unescapeName(p[4] as string),
    name: unescapeName(p[5] as string),
  };
}

// Name prefixes of the v1 names before 3.32, which said what the key no longer did.
const KNP_PREFIX = 'knp.default.';
const STAGED_PREFIX = 'staged:';
const KCNP_PREFIX = 'kcnp.';

/**
 * A policy key in the layout before 3.32 (`/calico/v1/policy/tier/<tier>/policy/<name>`, the
 * name "<namespace>/<v1 name>" for namespaced kinds): the kind is told from the name's
 * prefixes, as libcalico-go v3.32's parseLegacyPolicyName tells it.
 */
function legacyPolicyKey(tier: string, full: string): V1Key | undefined {
  const slash = full.indexOf('/');
  const namespace = slash < 0 ? '' : full.slice(0, slash);
  let name = slash < 0 ? full : full.slice(slash + 1);
  if (!tier || !name || name.includes('/') || (slash >= 0 && !namespace)) return undefined;
  let kind: string;
  if (namespace) {
    if (name.startsWith(KNP_PREFIX)) [kind, name] = ['KubernetesNetworkPolicy', name.slice(KNP_PREFIX.length)];
    else if (name.startsWith(STAGED_PREFIX + KNP_PREFIX))
      [kind, name] = ['StagedKubernetesNetworkPolicy', name.slice(STAGED_PREFIX.length + KNP_PREFIX.length)];
    else if (name.startsWith(STAGED_PREFIX)) [kind, name] = ['StagedNetworkPolicy', name.slice(STAGED_PREFIX.length)];
    else kind = 'NetworkPolicy';
  } else if (name.startsWith(STAGED_PREFIX))
    [kind, name] = ['StagedGlobalNetworkPolicy', name.slice(STAGED_PREFIX.length)];
  else if (name.startsWith(KCNP_PREFIX))
    [kind, name] = ['KubernetesClusterNetworkPolicy', name.slice(KCNP_PREFIX.length)];
  else kind = 'GlobalNetworkPolicy';
  return name ? { type: 'Policy', kind, namespace, name, tier } : undefined;
}

/**
 * The path of a policy key in the layout before 3.32 (what a 3.30/3.31 Typha sends): the v1
 * name as libcalico-go then made it ("default." before a Calico policy name without a tier
 * prefix, the kind's prefixes), so a 3.31 Felix names its chains as behind its own Typha.
 */
export function legacyPolicyPath(k: V1KeyOf<'Policy'>, tier: string): string {
  return `/calico/v1/policy/tier/${tier}/policy/${escapeName(legacyV1NameOf(k.kind, k.namespace, k.name))}`;
}

function resourceKey(p: string[]): V1Key | undefined {
  const kind = kindOfPlural(p[0] ?? '');
  if (!kind) return undefined;
  const namespaced = NAMESPACED_KINDS.has(kind);
  if (namespaced && p.length === 3 && p[1] && p[2])
    return { type: 'Resource', kind, namespace: unescapeName(p[1]), name: unescapeName(p[2]) };
  if (!namespaced && p.length === 2 && p[1]) return { type: 'Resource', kind, name: unescapeName(p[1]) };
  return undefined;
}
