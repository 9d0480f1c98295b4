// The open-addressing index that IdAllocator and StringMap keep beside their entries: a
// power-of-two Int32Array of entry numbers (EMPTY when free), linear probing from each
// entry's home slot (its hash's low bits), and deletion by backward shift, so no slot is
// ever a deleted marker. StringSet keeps its members in the slots themselves but moves
// them by the same rule (stays).

export const EMPTY = -1;

/** An index of `size` free slots (a power of two). */
export const emptySlots = (size: number): Int32Array => new Int32Array(size).fill(EMPTY);

/**
 * Whether the entry in slot `j`, whose home is `home`, stays put when slot `hole` (before
 * it in its run) empties: it does when its home is in (hole, j], cyclically, since moving
 * it to the hole would put it before its home.
 */
export const stays = (home: number, hole: number, j: number): boolean =>
  hole <= j ? home > hole && home <= j : home > hole || home <= j;

/** Puts entry `entry`, of hash `h`, in the first free slot from its home. */
export function place(slots: Int32Array, mask: number, h: number, entry: number): void {
  let i = h & mask;
  while (slots[i] !== EMPTY) i = (i + 1) & mask;
  slots[i] = entry;
}

/**
 * Empties slot `at`, moving back the later entries of its run that probed past it;
 * `hashes` is indexed by entry number.
 */
export function unslot(slots: Int32Array, mask: number, hashes: Int32Array, at: number): void {
  let hole = at;
  for (let j = (at + 1) & mask; slots[j] !== EMPTY; j = (j + 1) & mask) {
    if (stays((hashes[slots[j] as number] as number) & mask, hole, j)) continue;
    slots[hole] = slots[j] as number;
    hole = j;
  }
  slots[hole] = EMPTY;
}
