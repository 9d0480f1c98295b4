// PolicyResolver, as Felix's: for each local endpoint, the ordered tiers of the policies
// that match it (tiers with no matching policy are left out). Matches arrive from the
// ActiveRulesCalculator; order comes from the PolicySorter. Work is deferred to flush():
// only endpoints whose matches changed (or all, when the order changed) are recomputed.
import type { TierInfo } from '../proto/messages.js';
import type { PolicyMeta, PolicySorter, SortedTier } from './policy-sorter.js';

interface Ranks {
  sorted: readonly SortedTier[];
  /** By policy number: its place in the order, -1 for none. */
  rank: Float64Array;
  meta: PolicyMeta[];
  tier: number[];
}

/** An endpoint's policies as the dataplane wants them (host endpoints use every list). */
export interface EndpointTiers {
  /** Policies that are neither untracked nor pre-DNAT. */
  tiers: TierInfo[];
  untrackedTiers: TierInfo[];
  preDnatTiers: TierInfo[];
  /** Normal policies that also apply to forwarded traffic. */
  forwardTiers: TierInfo[];
}

// A tier without a Tier resource has no default action; the dataplane denies, as Felix.
function tierInfo(name: string, defaultAction: string, policies: PolicyMeta[]): TierInfo | undefined {
  if (policies.length === 0) return undefined;
  return {
    name,
    ingressPolicies: policies.filter((p) => p.ingress).map((p) => p.name),
    egressPolicies: policies.filter((p) => p.egress).map((p) => p.name),
    defaultAction: defaultAction || 'Deny',
  };
}

export class PolicyResolver {
  readonly #sorter: PolicySorter;
  /** Endpoint -> the numbers of the policies matching it. */
  readonly #matches = new Map<string, Set<number>>();
  /** By policy number: its name (a number is reused only for a new policy, after its old matches stopped). */
  readonly #names: string[] = [];
  readonly #endpoints = new Set<string>();
  readonly #dirty = new Set<string>();
  #allDirty = false;
  #rankCache: Ranks | undefined;

  constructor(sorter: PolicySorter) {
    this.#sorter = sorter;
  }

  onEndpointUpdate(endpointId: string, present: boolean): void {
    if (present) this.#endpoints.add(endpointId);
    else this.#endpoints.delete(endpointId);
    this.#dirty.add(endpointId);
  }

  /**
   * `policyNum` is the policy's number (the ActiveRulesCalculator's), unique among live
   * policies: an endpoint's matches are kept and ranked by number, not by name (a
   * 40,000-policy snapshot has a million matches).
   */
  onPolicyMatch(policyName: string, endpointId: string, policyNum: number): void {
    if (this.#names[policyNum] !== policyName) {
      this.#names[policyNum] = policyName;
      this.#rankCache = undefined;
    }
    let m = this.#matches.get(endpointId);
    if (!m) this.#matches.set(endpointId, (m = new Set()));
    m.add(policyNum);
    this.#dirty.add(endpointId);
  }

  onPolicyMatchStopped(endpointId: string, policyNum: number): void {
    const m = this.#matches.get(endpointId);
    if (!m) return;
    m.delete(policyNum);
    if (m.size === 0) this.#matches.delete(endpointId);
    this.#dirty.add(endpointId);
  }

  /** The sort order or a policy's metadata changed: every endpoint is recomputed. */
  onSortChanged(): void {
    this.#allDirty = true;
  }

  /** Calls emit(endpoint, tiers) for each endpoint to update; tiers undefined for one gone. */
  flush(emit: (endpointId: string, tiers: EndpointTiers | undefined) => void): void {
    const ids = this.#allDirty ? new Set([...this.#endpoints, ...this.#dirty]) : this.#dirty;
    const sorted = this.#sorter.sorted();
    for (const id of ids) emit(id, this.#endpoints.has(id) ? this.#resolve(id, sorted) : undefined);
    this.#dirty.clear();
    this.#allDirty = false;
  }

  // Every matched policy's place in the total order (tier, then policy), rebuilt when the
  // order or a number's policy changes: an endpoint then sorts its own few hundred matches
  // instead of scanning all.
  #ranks(sorted: readonly SortedTier[]): Ranks {
    if (this.#rankCache?.sorted !== sorted) {
      const byName = new Map<string, number>();
      const meta: PolicyMeta[] = [];
      const tier: number[] = [];
      sorted.forEach((t, ti) => {
        for (const p of t.policies) {
          byName.set(p.name, meta.length);
          meta.push(p);
          tier.push(ti);
        }
      });
      const names = this.#names;
      const rank = new Float64Array(names.length).fill(-1);
      for (let num = 0; num < names.length; num++) {
        const name = names[num];
        if (name !== undefined) rank[num] = byName.get(name) ?? -1;
      }
      this.#rankCache = { sorted, rank, meta, tier };
    }
    return this.#rankCache;
  }

  #resolve(endpointId: string, sorted: readonly SortedTier[]): EndpointTiers {
    const out: EndpointTiers = { tiers: [], untrackedTiers: [], preDnatTiers: [], forwardTiers: [] };
    const mine = this.#matches.get(endpointId);
    if (!mine) return out;
    const { rank, meta, tier } = this.#ranks(sorted);
    // A typed array sorts numerically without calling back into JS (an endpoint of a
    // 40,000-policy cluster may match a thousand of them).
    const ranks = new Float64Array(mine.size);
    let n = 0;
    for (const num of mine) {
      const r = rank[num] ?? -1;
      if (r >= 0) ranks[n++] = r;
    }
    const order = ranks.subarray(0, n).sort();
    for (let i = 0; i < order.length; ) {
      const ti = tier[order[i] as number] as number;
      const matched: PolicyMeta[] = [];
      for (; i < order.length && tier[order[i] as number] === ti; i++)
        matched.push(meta[order[i] as number] as PolicyMeta);
      const t = sorted[ti] as SortedTier;
      const normal = matched.filter((p) => !p.doNotTrack && !p.preDNAT);
      const push = (list: TierInfo[], ps: PolicyMeta[]) => {
        const info = tierInfo(t.name, t.defaultAction, ps);
        if (info) list.push(info);
      };
      push(out.tiers, normal);
      push(
        out.untrackedTiers,
        matched.filter((p) => p.doNotTrack),
      );
      push(
        out.preDnatTiers,
        matched.filter((p) => p.preDNAT && !p.doNotTrack),
      );
      push(
        out.forwardTiers,
        normal.filter((p) => p.applyOnForward),
      );
    }
    return out;
  }
}
