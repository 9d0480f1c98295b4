// A map from strings for the nftables sets' elements, desired and committed, which live
// under the same churn as the IP sets' members (see string-set.ts for why V8's Map
// doubles then rehashes in place under it; this table does neither).
//
// Entries are kept dense, in insertion order, in arrays beside an open-addressing index
// of their positions: a deletion moves the last entry into the deleted one's place. So
// the order is insertion order for a map that was never deleted from, which an nftables
// interval set's elements need when they are written whole (each interval's start right
// before its end: the kernel refuses them shuffled, see docs/dataplane.md); its elements
// are always rendered anew, never deleted one by one. Walking the dense arrays needs no
// skipping of empty slots.
//
// Not to be changed while it is iterated (a deletion moves an entry).

import { EMPTY, emptySlots, place, unslot } from './index-slots.js';
import { hashOf } from './string-hash.js';

const MIN_SLOTS = 8;

export class StringMap<V> implements Iterable<[string, V]> {
  /** Slot -> entry position, EMPTY when free; linear probing, at most three quarters full. */
  #slots = emptySlots(MIN_SLOTS);
  #mask = MIN_SLOTS - 1;
  /** By position: the entries, and each key's hash (its home slot is the hash's low bits). */
  #keys: string[] = [];
  #values: V[] = [];
  #hashes = new Int32Array(MIN_SLOTS);

  constructor(entries?: Iterable<readonly [string, V]>) {
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }

  get size(): number {
    return this.#keys.length;
  }

  /** The index's slots (a power of two): what it holds room for. */
  get slotCount(): number {
    return this.#mask + 1;
  }

  get(key: string): V | undefined {
    const at = this.#find(key, hashOf(key));
    return at < 0 ? undefined : this.#values[this.#slots[at] as number];
  }

  has(key: string): boolean {
    return this.#find(key, hashOf(key)) >= 0;
  }

  set(key: string, value: V): this {
    const h = hashOf(key);
    const at = this.#find(key, h);
    if (at >= 0) {
      this.#values[this.#slots[at] as number] = value;
      return this;
    }
    const pos = this.#keys.length;
    this.#keys.push(key);
    this.#values.push(value);
    if (pos === this.#hashes.length) {
      const grown = new Int32Array(pos * 2);
      grown.set(this.#hashes);
      this.#hashes = grown;
    }
    this.#hashes[pos] = h;
    this.#slots[~at] = pos;
    if ((pos + 1) * 4 > (this.#mask + 1) * 3) this.#reindex((this.#mask + 1) * 2);
    return this;
  }

  delete(key: string): boolean {
    const at = this.#find(key, hashOf(key));
    if (at < 0) return false;
    const pos = this.#slots[at] as number;
    unslot(this.#slots, this.#mask, this.#hashes, at);
    const last = this.#keys.length - 1;
    if (pos !== last) this.#move(last, pos);
    this.#keys.pop();
    this.#values.pop();
    // Shrunk at an eighth full, to a quarter: far from the growth's threshold.
    if (last * 8 < this.#mask + 1 && this.#mask + 1 > MIN_SLOTS) this.#reindex((this.#mask + 1) / 2);
    return true;
  }

  clear(): void {
    this.#slots = emptySlots(MIN_SLOTS);
    this.#mask = MIN_SLOTS - 1;
    this.#keys = [];
    this.#values = [];
    this.#hashes = new Int32Array(MIN_SLOTS);
  }

  /** A copy: arrays copied whole, nothing hashed again (a committed set's 500,000 elements in a few ms). */
  clone(): StringMap<V> {
    const c = new StringMap<V>();
    c.#slots = this.#slots.slice();
    c.#mask = this.#mask;
    c.#keys = this.#keys.slice();
    c.#values = this.#values.slice();
    c.#hashes = this.#hashes.slice(0, Math.max(MIN_SLOTS, this.#keys.length));
    return c;
  }

  keys(): IterableIterator<string> {
    return this.#keys.values();
  }

  values(): IterableIterator<V> {
    return this.#values.values();
  }

  entries(): IterableIterator<[string, V]> {
    return new EntryIterator(this.#keys, this.#values);
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  // The key's slot, or, when it is absent, ~ the free slot where it would go.
  #find(key: string, h: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = h & mask;
    for (let pos = slots[i] as number; pos !== EMPTY; pos = slots[i] as number) {
      if (this.#hashes[pos] === h && this.#keys[pos] === key) return i;
      i = (i + 1) & mask;
    }
    return ~i;
  }

  // Moves the entry at `from` to position `to` (a deleted entry's), and its slot with it.
  #move(from: number, to: number): void {
    const h = this.#hashes[from] as number;
    let i = h & this.#mask;
    while (this.#slots[i] !== from) i = (i + 1) & this.#mask;
    this.#slots[i] = to;
    this.#keys[to] = this.#keys[from] as string;
    this.#values[to] = this.#values[from] as V;
    this.#hashes[to] = h;
  }

  #reindex(size: number): void {
    const slots = emptySlots(size);
    const mask = size - 1;
    for (let pos = 0; pos < this.#keys.length; pos++) place(slots, mask, this.#hashes[pos] as number, pos);
    this.#slots = slots;
    this.#mask = mask;
  }
}

class EntryIterator<V> implements IterableIterator<[string, V]> {
  readonly #keys: readonly string[];
  readonly #values: readonly V[];
  #at = 0;

  constructor(keys: readonly string[], values: readonly V[]) {
    this.#keys = keys;
    this.#values = values;
  }

  next(): IteratorResult<[string, V]> {
    const at = this.#at;
    if (at >= this.#keys.length) return { value: undefined, done: true };
    this.#at = at + 1;
    return { value: [this.#keys[at] as string, this.#values[at] as V], done: false };
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this;
  }
}
