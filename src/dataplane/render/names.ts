// Kernel names as Felix chooses them, so `iptables-save | grep cali` reads the same.
import { createHash, hash } from 'node:crypto';

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

/**
 * Felix's rule hashes (the `cali:<hash>` comments): each is chained from the one before, so
 * a rule's hash changes with its position and predecessors. Seeded with the chain name.
 */
export function ruleHashes(chain: string, renderedRules: readonly string[]): string[] {
  let prev: Buffer = hash('sha224', chain, 'buffer');
  return renderedRules.map((text) => {
    prev = chainedHash(prev, text);
    return prev.toString('base64url').slice(0, 16);
  });
}

// sha224(prev || text) with the one-shot hash over a reused buffer: a Hash object per
// rule cost 2.6 µs, this 1.6 µs (a cold render hashes 100,000 rules).
const scratch = Buffer.allocUnsafe(1 << 16);
function chainedHash(prev: Buffer, text: string): Buffer {
  prev.copy(scratch, 0);
  const n = scratch.write(text, prev.length);
  // A text that filled the scratch buffer may have been cut: hash it the long way.
  if (prev.length + n >= scratch.length - 4) return createHash('sha224').update(prev).update(text).digest();
  return hash('sha224', scratch.subarray(0, prev.length + n), 'buffer');
}
