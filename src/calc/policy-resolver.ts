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

// One tier's policies for an endpoint, sorted into the dataplane's lists in one pass
// (an endpoint of a 40,000-policy cluster may match a thousand of them).
class TierLists {
  readonly #lists: Array<{ ingress: string[]; egress: string[] }> = [];

  add(p: PolicyMeta): void {
    // Normal policies (neither untracked nor pre-DNAT), and those also forward; untracked; pre-DNAT.
    if (p.doNotTrack) this.#put(UNTRACKED, p);
    else if (p.preDNAT) this.#put(PRE_DNAT, p);
    else {
      this.#put(NORMAL, p);
      if (p.applyOnForward) this.#put(FORWARD, p);
    }
  }

  // A tier without a Tier resource has no default action; the dataplane denies, as Felix.
  emit(t: SortedTier, out: EndpointTiers): void {
    const targets = [out.tiers, out.untrackedTiers, out.preDnatTiers, out.forwardTiers];
    for (let k = 0; k < targets.length; k++) {
      const l = this.#lists[k];
      if (!l) continue;
      (targets[k] as TierInfo[]).push({
        name: t.name,
        ingressPolicies: l.ingress,
        egressPolicies: l.egress,
        defaultAction: t.defaultAction || 'Deny',
      });
    }
  }

  #put(k: number, p: PolicyMeta): void {
    let l = this.#lists[k];
    if (!l) this.#lists[k] = l = { ingress: [], egress: [] };
    if (p.ingress) l.ingress.push(p.name);
    if (p.egress) l.egress.push(p.name);
  }
}

const NORMAL = 0;
const UNTRACKED = 1;
const PRE_DNAT = 2;
const FORWARD = 3;

export class PolicyResolver {
  readonly #sorter: PolicySorter;
  /** Endpoint -> the numbers of the policies matching it. */
  readonly #matches = new Map<string, Set<number>>();
  /** By policy number: its name (a number is reused only for a new policy, after its old matches stopped). */
  readonly #names: Array<string | undefined> = [];
  readonly #endpoints = new Set<string>();
  readonly #dirty = new Set<string>();
  #allDirty = false;
  #rankCache: Ranks | undefined;
  /** The endpoint of the last match reported, and its matches (until a stop or a flush). */
  #lastEndpoint: string | undefined;
  #lastMatches: Set<number> | undefined;

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
      // Grown in order, so the array stays a dense one (numbers arrive in any order).
      while (this.#names.length < policyNum) this.#names.push(undefined);
      this.#names[policyNum] = policyName;
      this.#rankCache = undefined;
    }
    // An endpoint's matches arrive together (the index matches an item against every
    // selector at once): its set is looked up, and it is marked dirty, once for them.
    if (endpointId !== this.#lastEndpoint) {
      let m = this.#matches.get(endpointId);
      if (!m) this.#matches.set(endpointId, (m = new Set()));
      this.#dirty.add(endpointId);
      this.#lastEndpoint = endpointId;
      this.#lastMatches = m;
    }
    this.#lastMatches?.add(policyNum);
  }

  onPolicyMatchStopped(endpointId: string, policyNum: number): void {
    this.#lastEndpoint = undefined;
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
    this.#lastEndpoint = undefined;
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
      const t = sorted[ti] as SortedTier;
      const lists = new TierLists();
      for (; i < order.length && tier[order[i] as number] === ti; i++)
        lists.add(meta[order[i] as number] as PolicyMeta);
      lists.emit(t, out);
    }
    return out;
  }
}
