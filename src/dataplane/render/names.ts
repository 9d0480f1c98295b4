// Kernel names as Felix chooses them, so `iptables-save | grep cali` reads the same.
import { createHash } from 'node:crypto';

import type { Family } from './model.js';

/** iptables' chain-name limit as Felix applies it (nftables allows more; we stay equal). */
export const MAX_CHAIN_NAME = 28;
/** ipset's limit on set names. */
export const MAX_SET_NAME = 31;

/**
 * Felix's hashutils.GetLengthLimitedID: prefix + suffix when it fits (and the suffix does
 * not start with "_", the hashed-name marker), else prefix + "_" + base64url(sha256(suffix)).
 */
export function lengthLimitedId(prefix: string, suffix: string, maxLength = MAX_CHAIN_NAME): string {
  if (prefix.length + suffix.length <= maxLength && !suffix.startsWith('_')) return prefix + suffix;
  const hash = createHash('sha256').update(suffix).digest('base64url');
  return `${prefix}_${hash.slice(0, maxLength - prefix.length - 1)}`;
}

export const policyChain = (dir: 'in' | 'out', tier: string, name: string) => lengthLimitedId(dir === 'in' ? 'cali-pi-' : 'cali-po-', `${tier}/${name}`);
export const profileChain = (dir: 'in' | 'out', name: string) => lengthLimitedId(dir === 'in' ? 'cali-pri-' : 'cali-pro-', name);

/** Endpoint chain prefixes, Felix's: to/from workload, to/from host endpoint (and forward). */
export const EP = {
  toWl: 'cali-tw-',
  fromWl: 'cali-fw-',
  toHost: 'cali-th-',
  fromHost: 'cali-fh-',
  toHostFwd: 'cali-thfw-',
  fromHostFwd: 'cali-fhfw-',
} as const;
export const endpointChain = (prefix: string, iface: string) => lengthLimitedId(prefix, iface);

/** The kernel name of a calc-graph IP set (iptables/ipset spelling). */
export function ipSetName(family: Family, id: string): string {
  return (`cali${family}0` + id).slice(0, MAX_SET_NAME);
}

/** nftables set names cannot hold ":"; Calico's nftables mode writes "-". */
export const nftSetName = (name: string) => name.replaceAll(':', '-');

/**
 * Felix's rule hashes (the `cali:<hash>` comments): each is chained from the one before, so
 * a rule's hash changes with its position and predecessors. Seeded with the chain name.
 */
export function ruleHashes(chain: string, renderedRules: readonly string[]): string[] {
  let prev = createHash('sha224').update(chain).digest();
  return renderedRules.map((text) => {
    prev = createHash('sha224').update(prev).update(text).digest();
    return prev.toString('base64url').slice(0, 16);
  });
}
