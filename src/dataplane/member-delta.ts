// What a set of members gained and lost over a while, net: a member lost and back again
// is in neither list. The desired state, the iptables builder and IPSets each keep one per
// set between two applies, so an apply sends those members, not the whole set.
export interface MemberDelta {
  added: Set<string>;
  removed: Set<string>;
}

export const emptyDelta = (): MemberDelta => ({ added: new Set(), removed: new Set() });

/** Records a member gained (one lost in the same delta just comes back). */
export function gained(d: MemberDelta, m: string): void {
  if (!d.removed.delete(m)) d.added.add(m);
}

/** Records a member lost (one gained in the same delta just goes). */
export function lost(d: MemberDelta, m: string): void {
  if (!d.added.delete(m)) d.removed.add(m);
}

/**
 * Each set's delta since some point (a takeDirty(), an apply); a set replaced or removed
 * whole since has none, and is compared whole.
 */
export class DeltaLog {
  readonly #whole = new Set<string>();

  constructor(readonly deltas = new Map<string, MemberDelta>()) {}

  /** The set's delta, to record members in; undefined once it was replaced whole. */
  of(name: string): MemberDelta | undefined {
    if (this.#whole.has(name)) return undefined;
    let d = this.deltas.get(name);
    if (!d) this.deltas.set(name, (d = emptyDelta()));
    return d;
  }

  /** Replaced or removed whole since this log began: it has no delta. */
  isWhole(name: string): boolean {
    return this.#whole.has(name);
  }

  replacedWhole(name: string): void {
    this.#whole.add(name);
    this.deltas.delete(name);
  }
}
