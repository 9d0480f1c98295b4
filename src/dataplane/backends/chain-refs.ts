// Which fragments (a policy, an endpoint...) hold each chain. A chain most often has one
// holder; a policy group's chain (render/policy-groups.ts) has every endpoint that jumps to
// it, and must stay until the last of them lets go. As Felix's endpoint manager, a
// fragment takes its new chains before it lets go of its old ones, so a group that both
// renderings use never goes away in between.
export class ChainRefs {
  readonly #refs = new Map<string, number>();

  /** Takes a chain; true when no fragment held it before. */
  take(key: string): boolean {
    const n = this.#refs.get(key) ?? 0;
    this.#refs.set(key, n + 1);
    return n === 0;
  }

  /** Lets go of a chain; true when no fragment holds it any more. */
  release(key: string): boolean {
    const n = this.#refs.get(key) ?? 0;
    if (n > 1) {
      this.#refs.set(key, n - 1);
      return false;
    }
    this.#refs.delete(key);
    return true;
  }

  /**
   * A fragment's chains in place of its previous ones, each key counted once: `write` for
   * each chain whose rules must be written (not a shared one that another fragment
   * already holds), then `drop` for each previous key that no fragment holds any more.
   * Returns the keys the fragment now holds.
   */
  swap<C extends { shared?: boolean | undefined }>(
    previous: readonly string[],
    next: readonly C[],
    keyOf: (c: C) => string,
    write: (c: C, key: string) => void,
    drop: (key: string) => void,
  ): string[] {
    const held = new Set<string>();
    for (const c of next) {
      const key = keyOf(c);
      if (held.has(key)) continue;
      held.add(key);
      if (this.take(key) || !c.shared) write(c, key);
    }
    for (const key of previous) if (this.release(key)) drop(key);
    return [...held];
  }

  clear(): void {
    this.#refs.clear();
  }
}
