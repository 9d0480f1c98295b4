// Dense integer IDs for string keys, reusing freed ones (the native index sizes arrays by
// ID). The member calculator keeps one for every endpoint in the cluster (250,000 in
// Felix's benchmark): an open-addressing table of IDs in a typed array, with each ID's
// hash kept, costs a third of a Map's inserts and no rehash of strings when it grows.

import { EMPTY, emptySlots, place, unslot } from '../collections/index-slots.js';
import { hashOf } from '../collections/string-hash.js';
import { withSlot } from './typed-arrays.js';

const MIN_SLOTS = 16;

export class IdAllocator {
  /** Slot -> ID, EMPTY when free; linear probing, at most half full. */
  #slots = emptySlots(MIN_SLOTS);
  #mask = MIN_SLOTS - 1;
  /** By ID: the key's hash (valid while the ID is live). */
  #hashes = new Int32Array(MIN_SLOTS);
  readonly #keys: Array<string | undefined> = [];
  readonly #free: number[] = [];
  #size = 0;

  /** The key's ID, allocating one if needed. */
  id(key: string): number {
    const h = hashOf(key);
    const at = this.#probe(key, h);
    if (at >= 0) return this.#slots[at] as number;
    const i = ~at;
    const id = this.#free.pop() ?? this.#keys.length;
    this.#hashes = withSlot(this.#hashes, id);
    this.#keys[id] = key;
    this.#hashes[id] = h;
    this.#slots[i] = id;
    if (++this.#size * 2 > this.#mask) this.#rehash((this.#mask + 1) * 2);
    return id;
  }

  get(key: string): number | undefined {
    const at = this.#probe(key, hashOf(key));
    return at < 0 ? undefined : (this.#slots[at] as number);
  }

  key(id: number): string {
    const k = this.#keys[id];
    if (k === undefined) throw new Error(`IdAllocator: no key for id ${id}`);
    return k;
  }

  release(key: string): void {
    const at = this.#probe(key, hashOf(key));
    if (at < 0) return;
    const id = this.#slots[at] as number;
    this.#keys[id] = undefined;
    this.#free.push(id);
    this.#size--;
    unslot(this.#slots, this.#mask, this.#hashes, at);
  }

  /** Every live key with its ID. */
  *entries(): IterableIterator<[string, number]> {
    const keys = this.#keys;
    for (let id = 0; id < keys.length; id++) {
      const k = keys[id];
      if (k !== undefined) yield [k, id];
    }
  }

  get size(): number {
    return this.#size;
  }

  // The key's slot, or, when it is absent, ~ the free slot where it would go.
  #probe(key: string, h: number): number {
    let i = h & this.#mask;
    for (let id = this.#slots[i] as number; id !== EMPTY; id = this.#slots[i] as number) {
      if (this.#hashes[id] === h && this.#keys[id] === key) return i;
      i = (i + 1) & this.#mask;
    }
    return ~i;
  }

  #rehash(size: number): void {
    const slots = emptySlots(size);
    const mask = size - 1;
    const keys = this.#keys;
    for (let id = 0; id < keys.length; id++) {
      if (keys[id] !== undefined) place(slots, mask, this.#hashes[id] as number, id);
    }
    this.#slots = slots;
    this.#mask = mask;
  }
}
