// A set of strings for the IP sets' members, which live under steady churn: a quarter of a
// million members a set, added and removed thousands of times a second, in the member
// calculator and in the dataplane's desired state.
//
// V8's Set leaves a deleted entry in its table until the table is full, then doubles it
// unless half of it is deleted entries: a set filled by a snapshot (full to its power of
// two) doubles once when churn starts (`bench churn`'s RSS growth), and from then on
// rehashes the whole table in place in one call every so often (50-70 ms for 500,000
// members, one of the longest blocks of the event loop under churn). Open addressing
// with backward-shift deletion has no deleted entries: the table's size follows the
// number of members alone, and churn at a steady size never rehashes.
//
// Not to be changed while it is iterated (a deletion moves members back).

import { stays } from './index-slots.js';
import { hashOf } from './string-hash.js';

const MIN_SLOTS = 8;

export class StringSet implements Iterable<string> {
  /** Slot -> member, undefined when free; linear probing. */
  #keys: Array<string | undefined> = new Array<string | undefined>(MIN_SLOTS).fill(undefined);
  /** Slot -> the member's hash (its home slot is the hash's low bits). */
  #hashes = new Int32Array(MIN_SLOTS);
  #mask = MIN_SLOTS - 1;
  #size = 0;

  /** A set of these members, its table sized for them at once. */
  constructor(members?: readonly string[]) {
    if (!members?.length) return;
    this.reserve(members.length);
    for (const m of members) this.add(m);
  }

  /** Grows the table at once to take `more` members, instead of doubling on the way. */
  reserve(more: number): void {
    let slots = this.#mask + 1;
    while ((this.#size + more) * 4 > slots * 3) slots *= 2;
    if (slots > this.#mask + 1) this.#resize(slots);
  }

  get size(): number {
    return this.#size;
  }

  /** The table's slots (a power of two): what it holds room for. */
  get slotCount(): number {
    return this.#mask + 1;
  }

  has(member: string): boolean {
    return this.#find(member, hashOf(member)) >= 0;
  }

  /** Adds the member; true when it was not there. */
  add(member: string): boolean {
    const h = hashOf(member);
    const at = this.#find(member, h);
    if (at >= 0) return false;
    this.#keys[~at] = member;
    this.#hashes[~at] = h;
    // At most three quarters full: linear probing's runs stay short.
    if (++this.#size * 4 > (this.#mask + 1) * 3) this.#resize((this.#mask + 1) * 2);
    return true;
  }

  /** Removes the member; true when it was there. */
  delete(member: string): boolean {
    const at = this.#find(member, hashOf(member));
    if (at < 0) return false;
    this.#unslot(at);
    // Shrunk at an eighth full, to a quarter: far from the growth's threshold, so a set
    // that hovers around a size is not resized back and forth.
    if (--this.#size * 8 < this.#mask + 1 && this.#mask + 1 > MIN_SLOTS) this.#resize((this.#mask + 1) / 2);
    return true;
  }

  /** A copy: the table copied whole, nothing hashed again. */
  clone(): StringSet {
    const c = new StringSet();
    c.#keys = this.#keys.slice();
    c.#hashes = this.#hashes.slice();
    c.#mask = this.#mask;
    c.#size = this.#size;
    return c;
  }

  /** The members, in no particular order. */
  toArray(): string[] {
    const out = new Array<string>(this.#size);
    const keys = this.#keys;
    let n = 0;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k !== undefined) out[n++] = k;
    }
    return out;
  }

  // An iterator object, not a generator: a generator's resumption made walking 250,000
  // members two to three times slower.
  [Symbol.iterator](): IterableIterator<string> {
    return new SlotIterator(this.#keys);
  }

  // The member's slot, or, when it is absent, ~ the free slot where it would go.
  #find(member: string, h: number): number {
    const keys = this.#keys;
    const hashes = this.#hashes;
    const mask = this.#mask;
    let i = h & mask;
    for (let k = keys[i]; k !== undefined; k = keys[i]) {
      if (hashes[i] === h && k === member) return i;
      i = (i + 1) & mask;
    }
    return ~i;
  }

  // Empties a slot, moving back the later members of its run that probed past it, so that
  // lookups never need deleted markers.
  #unslot(at: number): void {
    const keys = this.#keys;
    const hashes = this.#hashes;
    const mask = this.#mask;
    let hole = at;
    for (let j = (at + 1) & mask; keys[j] !== undefined; j = (j + 1) & mask) {
      if (stays((hashes[j] as number) & mask, hole, j)) continue;
      keys[hole] = keys[j];
      hashes[hole] = hashes[j] as number;
      hole = j;
    }
    keys[hole] = undefined;
  }

  #resize(slots: number): void {
    const oldKeys = this.#keys;
    const oldHashes = this.#hashes;
    const keys = new Array<string | undefined>(slots).fill(undefined);
    const hashes = new Int32Array(slots);
    const mask = slots - 1;
    for (let j = 0; j < oldKeys.length; j++) {
      const k = oldKeys[j];
      if (k === undefined) continue;
      const h = oldHashes[j] as number;
      let i = h & mask;
      while (keys[i] !== undefined) i = (i + 1) & mask;
      keys[i] = k;
      hashes[i] = h;
    }
    this.#keys = keys;
    this.#hashes = hashes;
    this.#mask = mask;
  }
}

class SlotIterator implements IterableIterator<string> {
  readonly #keys: ReadonlyArray<string | undefined>;
  #at = 0;

  constructor(keys: ReadonlyArray<string | undefined>) {
    this.#keys = keys;
  }

  next(): IteratorResult<string> {
    const keys = this.#keys;
    for (let i = this.#at; i < keys.length; i++) {
      const k = keys[i];
      if (k !== undefined) {
        this.#at = i + 1;
        return { value: k, done: false };
      }
    }
    this.#at = keys.length;
    return { value: undefined, done: true };
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this;
  }
}
