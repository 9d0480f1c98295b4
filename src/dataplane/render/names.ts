// Kernel names as Felix chooses them, so `iptables-save | grep cali` reads the same.
import { createHash } from 'node:crypto';

import { legacyV1Name } from '../../model/names.js';
import type { PolicyIds } from '../../model/release.js';
import { native } from '../../native/load.js';
import type { Family } from './model.js';

/** iptables' chain-name limit, as Felix applies it in iptables mode. */
export const MAX_CHAIN_NAME = 28;
/** Felix's limit in nftables mode (knftables' NameLengthMax): names stay readable. */
export const MAX_NFT_CHAIN_NAME = 256;
/** The chain-name limit Felix uses in a mode. */
export const chainNameLimit = (iptables: boolean) => (iptables ? MAX_CHAIN_NAME : MAX_NFT_CHAIN_NAME);
/** ipset's limit on set names. */
export const MAX_SET_NAME = 31;

/**
 * Felix's GetLengthLimitedID (lengths in bytes, as Go's): prefix + suffix when it fits,
 * else prefix + "_" + base64url(sha256(suffix)) cut to the limit. A suffix that fits
 * exactly but starts with "_" (the hashed-name marker) is hashed too, so it cannot pass
 * for a hashed name; an empty suffix is "_".
 */
export function lengthLimitedId(prefix: string, suffix: string, maxLength = MAX_CHAIN_NAME): string {
  const s = suffix === '' ? '_' : suffix;
  const total = Buffer.byteLength(prefix) + Buffer.byteLength(s);
  if (total < maxLength || (total === maxLength && !s.startsWith('_'))) return prefix + s;
  const hash = createHash('sha256').update(s).digest('base64url');
  return `${prefix}_${hash.slice(0, maxLength - Buffer.byteLength(prefix) - 1)}`;
}

/**
 * What the Felix of the cluster's release names a policy's chains after: its PolicyID.ID()
 * ("np/<ns>/<name>", 3.32+), or "<tier>/<v1 name>" ("default/<ns>/default.<name>", before).
 */
export const felixPolicyId = (id: string, tier: string, style: PolicyIds = 'kind') =>
  style === 'kind' ? id : `${tier}/${legacyV1Name(id)}`;

/** cali-pi-/cali-po- + Felix's PolicyID.ID() ("np/<namespace>/<name>", "gnp/<name>"...), limited per mode. */
export const policyChain = (dir: 'in' | 'out', id: string, iptables: boolean) =>
  lengthLimitedId(dir === 'in' ? 'cali-pi-' : 'cali-po-', id, chainNameLimit(iptables));
/** cali-pri-/cali-pro- + the profile's name, limited per mode. */
export const profileChain = (dir: 'in' | 'out', name: string, iptables: boolean) =>
  lengthLimitedId(dir === 'in' ? 'cali-pri-' : 'cali-pro-', name, chainNameLimit(iptables));

/** Endpoint chain prefixes, Felix's: to/from workload, to/from host endpoint (and forward). */
export const EP = {
  toWl: 'cali-tw-',
  fromWl: 'cali-fw-',
  toHost: 'cali-th-',
  fromHost: 'cali-fh-',
  toHostFwd: 'cali-thfw-',
  fromHostFwd: 'cali-fhfw-',
  /** kube-proxy IPVS support: the chain that sets the endpoint's mark. */
  setMark: 'cali-sm-',
} as const;
/**
 * Felix's EndpointChainName: prefix + interface, limited per mode ("any-interface-at-all" needs nftables' limit to stay
 * readable).
 */
export const endpointChain = (prefix: string, iface: string, iptables: boolean) =>
  lengthLimitedId(prefix, iface, chainNameLimit(iptables));

/** The kernel name of a calc-graph IP set (iptables/ipset spelling). */
export function ipSetName(family: Family, id: string): string {
  return `cali${family}0${id}`.slice(0, MAX_SET_NAME);
}

/** nftables set names cannot hold ":"; Calico's nftables mode writes "-". */
export const nftSetName = (name: string) => name.replaceAll(':', '-');

const RULE_HASH_CHARS = 16;

/**
 * Felix's rule hashes (the `cali:<hash>` comments): each is chained from the one before, so
 * a rule's hash changes with its position and predecessors. Seeded with the chain name.
 * The digests run natively, a chain a call (native/render/rule_hashes.h): in Node's
 * crypto they were a quarter of a cold render.
 */
export function ruleHashes(chain: string, renderedRules: readonly string[]): string[] {
  const spelled = native.ruleHashes(chain, renderedRules);
  const out = new Array<string>(renderedRules.length);
  for (let i = 0; i < out.length; i++) out[i] = spelled.slice(i * RULE_HASH_CHARS, (i + 1) * RULE_HASH_CHARS);
  return out;
}
