// PolicySorter, as Felix's: tiers sorted valid-first (a tier whose Tier resource exists),
// then by order (none = last), then by name; policies within a tier by order (none =
// +Inf), then by Felix's tie-break "<name>/<namespace>/<Kind>". Sorting is lazy: done once
// per change, on demand.
import { legacyV1Name, type PolicyKind, policyIdParts, policySortKey } from '../model/names.js';
import type { PolicyIds } from '../model/release.js';
import type { InternalPolicy } from '../model/internal.js';

export interface PolicyMeta {
  /** PolicyKey.name: Felix's PolicyID.ID() ("np/<namespace>/<name>", "gnp/<name>"). */
  name: string;
  /** PolicyKey.sortKey: Felix's tie-break between equal orders. */
  sortKey: string;
  order: number;
  ingress: boolean;
  egress: boolean;
  doNotTrack: boolean;
  preDNAT: boolean;
  applyOnForward: boolean;
}

export interface SortedTier {
  name: string;
  /** A Tier resource exists for it. */
  valid: boolean;
  order: number | undefined;
  /** "" when the tier has no resource (the dataplane treats it as Deny). */
  defaultAction: string;
  policies: PolicyMeta[];
}

interface TierState {
  valid: boolean;
  order: number | undefined;
  defaultAction: string;
  policies: Map<string, PolicyMeta>;
}

export function policyMeta(p: InternalPolicy): PolicyMeta {
  const types = p.types.length ? p.types : ['ingress', 'egress'];
  return {
    name: p.key.name,
    sortKey: p.key.sortKey,
    order: p.order ?? Number.POSITIVE_INFINITY,
    ingress: types.includes('ingress'),
    egress: types.includes('egress'),
    doNotTrack: p.doNotTrack,
    preDNAT: p.preDNAT,
    applyOnForward: p.applyOnForward,
  };
}

const sameMeta = (a: PolicyMeta, b: PolicyMeta) =>
  a.name === b.name &&
  a.sortKey === b.sortKey &&
  a.order === b.order &&
  a.ingress === b.ingress &&
  a.egress === b.egress &&
  a.doNotTrack === b.doNotTrack &&
  a.preDNAT === b.preDNAT &&
  a.applyOnForward === b.applyOnForward;

function tierLess(a: SortedTier, b: SortedTier): number {
  if (a.valid !== b.valid) return a.valid ? -1 : 1;
  if ((a.order === undefined) !== (b.order === undefined)) return a.order === undefined ? 1 : -1;
  if (a.order !== undefined && b.order !== undefined && a.order !== b.order) return a.order - b.order;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function sortKeyOf(id: string, style: PolicyIds): string {
  if (style === 'tiered') return legacyV1Name(id);
  const { kind, namespace, name } = policyIdParts(id);
  return policySortKey(kind as PolicyKind, namespace, name);
}

function policyLess(a: PolicyMeta, b: PolicyMeta): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0;
}

export class PolicySorter {
  readonly #tiers = new Map<string, TierState>();
  /** The tier each policy is in, by name (a policy may move between tiers). */
  readonly #tierOf = new Map<string, string>();
  #sorted: SortedTier[] | undefined;
  #style: PolicyIds = 'kind';

  /**
   * The tie-break of the cluster's release between policies of one order: Felix 3.32's
   * "<name>/<namespace>/<kind>", or before it the v1 name ("<ns>/default.<name>").
   */
  setStyle(style: PolicyIds): void {
    if (style === this.#style) return;
    this.#style = style;
    for (const t of this.#tiers.values())
      for (const [id, m] of t.policies) t.policies.set(id, { ...m, sortKey: sortKeyOf(id, style) });
    this.#sorted = undefined;
  }

  /** Returns whether the sort order or any policy metadata changed. */
  onTierUpdate(name: string, tier: { order?: number | undefined; defaultAction: string } | undefined): boolean {
    let t = this.#tiers.get(name);
    if (tier) {
      if (!t) this.#tiers.set(name, (t = { valid: false, order: undefined, defaultAction: '', policies: new Map() }));
      const changed = !t.valid || t.order !== tier.order || t.defaultAction !== tier.defaultAction;
      t.valid = true;
      t.order = tier.order;
      t.defaultAction = tier.defaultAction;
      if (changed) this.#sorted = undefined;
      return changed;
    }
    if (!t?.valid) return false;
    t.valid = false;
    t.order = undefined;
    t.defaultAction = '';
    if (t.policies.size === 0) this.#tiers.delete(name);
    this.#sorted = undefined;
    return true;
  }

  /**
   * `id` is the policy's name (PolicyKey.name, which meta.name repeats): the resolver
   * matches on it. `meta` undefined deletes the policy. Returns whether anything changed.
   */
  onPolicyUpdate(id: string, tier: string, meta: PolicyMeta | undefined): boolean {
    if (meta && this.#style !== 'kind') meta = { ...meta, sortKey: sortKeyOf(id, this.#style) };
    const oldTier = this.#tierOf.get(id);
    const old = oldTier === undefined ? undefined : this.#tiers.get(oldTier)?.policies.get(id);
    if (meta && old && oldTier === tier) {
      if (sameMeta(old, meta)) return false;
      // In place: a delete and a set would leave V8's Map a deleted entry per policy edit.
      (this.#tiers.get(tier) as TierState).policies.set(id, meta);
      this.#sorted = undefined;
      return true;
    }
    if (oldTier !== undefined && old) {
      const t = this.#tiers.get(oldTier) as TierState;
      t.policies.delete(id);
      if (t.policies.size === 0 && !t.valid) this.#tiers.delete(oldTier);
      this.#tierOf.delete(id);
    }
    if (meta) {
      let t = this.#tiers.get(tier);
      if (!t) this.#tiers.set(tier, (t = { valid: false, order: undefined, defaultAction: '', policies: new Map() }));
      t.policies.set(id, meta);
      this.#tierOf.set(id, tier);
    } else if (!old) {
      return false;
    }
    this.#sorted = undefined;
    return true;
  }

  sorted(): readonly SortedTier[] {
    if (!this.#sorted) {
      this.#sorted = [...this.#tiers].map(([name, t]) => ({
        name,
        valid: t.valid,
        order: t.order,
        defaultAction: t.defaultAction,
        policies: [...t.policies.values()].sort(policyLess),
      }));
      this.#sorted.sort(tierLess);
    }
    return this.#sorted;
  }
}
