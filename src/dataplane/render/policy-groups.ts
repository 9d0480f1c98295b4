// Felix's policy groups (rules/endpoints.go PolicyGroup, dataplane/linux/endpoint_mgr.go
// groupPolicies): within a tier, consecutive policies with the same selector form a group,
// and a group of two or more policies gets its own chain, cali-gi-<uid> (ingress) or
// cali-go-<uid> (egress), that endpoint chains jump to instead of jumping to each policy.
// Policies with one selector select the same endpoints, so endpoints that share one policy
// of a group share the whole group and its one chain: packets and the kernel's validation
// of the table (once per chain, not once per endpoint) walk it once.
import { createHash } from 'node:crypto';

import { legacyV1Name, policyIdParts } from '../../model/names.js';
import type { PolicyIds } from '../../model/release.js';
import { markClear } from './blocks.js';
import type { Marks } from './marks.js';
import type { Rule } from './model.js';
import { felixPolicyId, MAX_CHAIN_NAME, policyChain } from './names.js';

export interface PolicyGroup {
  dir: 'in' | 'out';
  /** The tier the group is in (part of its UID before Calico 3.32). */
  tier?: string;
  /** Policy IDs as the tiers list them (Felix's PolicyID.ID()). */
  policies: string[];
  /** The policies' normalised selector (ActivePolicyUpdate's originalSelector). */
  selector: string;
}

/** A policy's selector by its ID; '' for one not known, as Felix's map lookup. */
export type SelectorOf = (policyId: string) => string;

const GROUP_PREFIX = { in: 'cali-gi-', out: 'cali-go-' } as const;
/** Felix's MaxPolicyGroupUIDLength: the UID fits an iptables chain name after the prefix. */
const UID_LENGTH = MAX_CHAIN_NAME - GROUP_PREFIX.in.length;
/** Felix returns from a group chain on a verdict every this many policies. */
const RETURN_STRIDE = 5;

/** Felix's groupPolicies: runs of one selector, in order. */
export function groupPolicies(
  ids: readonly string[],
  dir: 'in' | 'out',
  selectorOf: SelectorOf,
  tier = '',
): PolicyGroup[] {
  const groups: PolicyGroup[] = [];
  let g: PolicyGroup | undefined;
  for (const id of ids) {
    const selector = selectorOf(id);
    if (!g || g.selector !== selector) groups.push((g = { dir, tier, policies: [], selector }));
    g.policies.push(id);
  }
  return groups;
}

/** Felix's ShouldBeInlined: a group of one policy is jumped to directly (staged policies never reach here). */
export const inlined = (g: PolicyGroup) => g.policies.length <= 1;

/** Felix's PolicyID.String() ("{Name: x, Namespace: y, Kind: z}") from its ID() form ("np/y/x", "gnp/x"). */
export function policyIdString(id: string): string {
  const { kind, namespace, name } = policyIdParts(id);
  return `{Name: ${name}, Namespace: ${namespace}, Kind: ${kind}}`;
}

// Renders of endpoints repeat the same groups: their UIDs are kept (a group's UID is a
// function of its selector, direction and policies, which the key holds).
const uids = new Map<string, string>();
const UID_CACHE_MAX = 4096;

/**
 * Felix's PolicyGroup.UniqueID(): sha3-224 over the selector, direction, count and policies
 * (PolicyID.String() each), base64url, cut; before Calico 3.32 the tier came first and each
 * policy was its v1 name.
 */
export function groupUid(g: PolicyGroup, style: PolicyIds = 'kind'): string {
  const tiered = style === 'tiered';
  const key = `${tiered ? `${g.tier ?? ''}\n` : ''}${g.dir}\n${g.selector}\n${g.policies.join('\n')}`;
  let uid = uids.get(key);
  if (uid !== undefined) return uid;
  const h = createHash('sha3-224');
  const write = (s: string) => h.update(`${s}\n`);
  if (tiered) write(g.tier ?? '');
  write(g.selector);
  write(g.dir === 'in' ? 'inbound' : 'outbound');
  write(String(g.policies.length));
  for (const p of g.policies) write(tiered ? legacyV1Name(p) : policyIdString(p));
  uid = h.digest('base64url').slice(0, UID_LENGTH);
  if (uids.size >= UID_CACHE_MAX) uids.clear();
  uids.set(key, uid);
  return uid;
}

export const groupChainName = (g: PolicyGroup, style: PolicyIds = 'kind') => GROUP_PREFIX[g.dir] + groupUid(g, style);

export const isGroupChain = (name: string) => name.startsWith(GROUP_PREFIX.in) || name.startsWith(GROUP_PREFIX.out);

/**
 * Felix's PolicyGroupToIptablesChains: a jump to each policy while no verdict is set, and a
 * return on a verdict (accept or pass) before every fifth policy.
 */
export function groupChainRules(g: PolicyGroup, marks: Marks, iptables: boolean, style: PolicyIds = 'kind'): Rule[] {
  const verdict = marks.accept | marks.pass;
  const rules: Rule[] = [];
  g.policies.forEach((id, n) => {
    if (n !== 0 && n % RETURN_STRIDE === 0)
      rules.push({
        match: [{ k: 'mark', value: 0, mask: verdict, neg: true }],
        action: { k: 'return' },
        comment: 'Return on verdict',
      });
    rules.push({
      match: n % RETURN_STRIDE === 0 ? [] : [markClear(verdict)],
      action: { k: 'jump', chain: policyChain(g.dir, felixPolicyId(id, g.tier ?? '', style), iptables) },
    });
  });
  return rules;
}
