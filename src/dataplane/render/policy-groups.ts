// Felix's policy groups (rules/endpoints.go PolicyGroup, dataplane/linux/endpoint_mgr.go
// groupPolicies): within a tier, consecutive policies with the same selector form a group,
// and a group of two or more policies gets its own chain, cali-gi-<uid> (ingress) or
// cali-go-<uid> (egress), that endpoint chains jump to instead of jumping to each policy.
// Policies with one selector select the same endpoints, so endpoints that share one policy
// of a group share the whole group and its one chain: packets and the kernel's validation
// of the table (once per chain, not once per endpoint) walk it once.
import { createHash } from 'node:crypto';

import { POLICY_KIND_SHORT } from '../../model/names.js';
import { markClear } from './blocks.js';
import type { Marks } from './marks.js';
import type { Rule } from './model.js';
import { MAX_CHAIN_NAME, policyChain } from './names.js';

export interface PolicyGroup {
  dir: 'in' | 'out';
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
export function groupPolicies(ids: readonly string[], dir: 'in' | 'out', selectorOf: SelectorOf): PolicyGroup[] {
  const groups: PolicyGroup[] = [];
  let g: PolicyGroup | undefined;
  for (const id of ids) {
    const selector = selectorOf(id);
    if (!g || g.selector !== selector) groups.push((g = { dir, policies: [], selector }));
    g.policies.push(id);
  }
  return groups;
}

/** Felix's ShouldBeInlined: a group of one policy is jumped to directly (staged policies never reach here). */
export const inlined = (g: PolicyGroup) => g.policies.length <= 1;

const KIND_OF_SHORT = new Map<string, string>(Object.entries(POLICY_KIND_SHORT).map(([kind, short]) => [short, kind]));
const NAMESPACED = new Set(['np', 'snp', 'sknp', 'knp']);

/** Felix's PolicyID.String() ("{Name: x, Namespace: y, Kind: z}") from its ID() form ("np/y/x", "gnp/x"). */
export function policyIdString(id: string): string {
  const slash = id.indexOf('/');
  const short = id.slice(0, slash);
  let rest = id.slice(slash + 1);
  let namespace = '';
  if (NAMESPACED.has(short)) {
    const s = rest.indexOf('/');
    namespace = rest.slice(0, s);
    rest = rest.slice(s + 1);
  }
  return `{Name: ${rest}, Namespace: ${namespace}, Kind: ${KIND_OF_SHORT.get(short) ?? short}}`;
}

// Renders of endpoints repeat the same groups: their UIDs are kept (a group's UID is a
// function of its selector, direction and policies, which the key holds).
const uids = new Map<string, string>();
const UID_CACHE_MAX = 4096;

/** Felix's PolicyGroup.UniqueID(): sha3-224 over the selector, direction, count and policies, base64url, cut. */
export function groupUid(g: PolicyGroup): string {
  const key = `${g.dir}\n${g.selector}\n${g.policies.join('\n')}`;
  let uid = uids.get(key);
  if (uid !== undefined) return uid;
  const h = createHash('sha3-224');
  const write = (s: string) => h.update(`${s}\n`);
  write(g.selector);
  write(g.dir === 'in' ? 'inbound' : 'outbound');
  write(String(g.policies.length));
  for (const p of g.policies) write(policyIdString(p));
  uid = h.digest('base64url').slice(0, UID_LENGTH);
  if (uids.size >= UID_CACHE_MAX) uids.clear();
  uids.set(key, uid);
  return uid;
}

export const groupChainName = (g: PolicyGroup) => GROUP_PREFIX[g.dir] + groupUid(g);

export const isGroupChain = (name: string) => name.startsWith(GROUP_PREFIX.in) || name.startsWith(GROUP_PREFIX.out);

/**
 * Felix's PolicyGroupToIptablesChains: a jump to each policy while no verdict is set, and a
 * return on a verdict (accept or pass) before every fifth policy.
 */
export function groupChainRules(g: PolicyGroup, marks: Marks, iptables: boolean): Rule[] {
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
      action: { k: 'jump', chain: policyChain(g.dir, id, iptables) },
    });
  });
  return rules;
}
