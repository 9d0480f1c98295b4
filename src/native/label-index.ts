import { native } from './load.js';
import type { RawLabelIndex, RawLabelIndexStats, RawSelector } from './raw.js';
import type { Labels, Selector } from './selector.js';

/** IDs are dense array indices on the native side; keep them below this bound. */
export const MAX_ID = 1 << 24;

// Opcodes: keep in step with native/labelindex/ops.h.
const OP_UPSERT_PARENT = 1;
const OP_DELETE_PARENT = 2;
const OP_UPSERT_ITEM = 3;
const OP_DELETE_ITEM = 4;
const OP_UPSERT_SELECTOR = 5;
const OP_DELETE_SELECTOR = 6;

const STARTED_BIT = 0x8000_0000;

/**
 * The match transitions one flush caused, packed as in native code: two words each,
 * the selector ID, then the item ID with bit 31 set when the match started. They are in
 * the order they happened; applying them in order gives the index's state. The buffer
 * is native memory handed over without a copy.
 */
export class MatchChanges {
  /** [selector, item | started << 31] pairs. */
  readonly packed: Uint32Array;
  readonly length: number;

  constructor(packed: Uint32Array) {
    this.packed = packed;
    this.length = packed.length >>> 1;
  }

  selectorId(i: number): number {
    return this.packed[2 * i] as number;
  }

  itemId(i: number): number {
    return ((this.packed[2 * i + 1] as number) & ~STARTED_BIT) >>> 0;
  }

  /** True when the match started, false when it stopped. */
  started(i: number): boolean {
    return ((this.packed[2 * i + 1] as number) & STARTED_BIT) !== 0;
  }

  forEach(fn: (selectorId: number, itemId: number, started: boolean) => void): void {
    const p = this.packed;
    for (let i = 0; i < p.length; i += 2) {
      const w = p[i + 1] as number;
      fn(p[i] as number, (w & ~STARTED_BIT) >>> 0, (w & STARTED_BIT) !== 0);
    }
  }
}

export type LabelIndexStats = RawLabelIndexStats;

function checkId(kind: string, id: number): void {
  if (!Number.isInteger(id) || id < 0 || id >= MAX_ID) {
    throw new RangeError(`LabelIndex: ${kind} id must be an integer in [0, ${MAX_ID}), got ${id}`);
  }
}

// Checked before anything is queued, so a bad label never leaves half an op behind.
function labelKeys(labels: Labels): string[] {
  const keys = Object.keys(labels);
  for (const k of keys) {
    if (typeof labels[k] !== 'string') {
      throw new TypeError(`LabelIndex: label ${JSON.stringify(k)} must have a string value, got ${typeof labels[k]}`);
    }
  }
  return keys;
}

/**
 * Felix's label inheritance index, native: items (endpoints, network sets) with their
 * own labels and an ordered list of parents (profiles) they inherit labels from, and
 * selectors; reports which selectors match which items. IDs are small dense integers
 * the caller allocates (reuse freed ones). Mutations are queued and sent to native code
 * in one call by flush(), which returns the match transitions they caused.
 */
export class LabelIndex {
  readonly #raw: RawLabelIndex = new native.LabelIndex();
  readonly #stringIds = new Map<string, number>();
  #newStrings: string[] = [];
  #ops = new Uint32Array(4096);
  #len = 0;
  #selectors: RawSelector[] = [];

  upsertParent(id: number, labels: Labels): void {
    checkId('parent', id);
    const keys = labelKeys(labels);
    this.#reserve(3 + keys.length * 2);
    this.#ops[this.#len++] = OP_UPSERT_PARENT;
    this.#ops[this.#len++] = id;
    this.#ops[this.#len++] = keys.length;
    this.#pushLabels(labels, keys);
  }

  deleteParent(id: number): void {
    checkId('parent', id);
    this.#push2(OP_DELETE_PARENT, id);
  }

  /** `parents` is the inheritance order: the first parent that has a key supplies it. */
  upsertItem(id: number, labels: Labels, parents: readonly number[] = []): void {
    checkId('item', id);
    for (const p of parents) checkId('parent', p);
    const keys = labelKeys(labels);
    this.#reserve(4 + keys.length * 2 + parents.length);
    this.#ops[this.#len++] = OP_UPSERT_ITEM;
    this.#ops[this.#len++] = id;
    this.#ops[this.#len++] = keys.length;
    this.#ops[this.#len++] = parents.length;
    this.#pushLabels(labels, keys);
    for (const p of parents) this.#ops[this.#len++] = p;
  }

  deleteItem(id: number): void {
    checkId('item', id);
    this.#push2(OP_DELETE_ITEM, id);
  }

  upsertSelector(id: number, selector: Selector): void {
    checkId('selector', id);
    this.#reserve(3);
    this.#ops[this.#len++] = OP_UPSERT_SELECTOR;
    this.#ops[this.#len++] = id;
    this.#ops[this.#len++] = this.#selectors.length;
    this.#selectors.push(selector.raw);
  }

  deleteSelector(id: number): void {
    checkId('selector', id);
    this.#push2(OP_DELETE_SELECTOR, id);
  }

  /** Number of queued operations' words, for callers that flush on size. */
  get pendingWords(): number {
    return this.#len;
  }

  /** Sends every queued mutation to the native index in one call. */
  flush(): MatchChanges {
    const ops = this.#ops.subarray(0, this.#len);
    const selectors = this.#selectors;
    const strings = this.#newStrings;
    // A batch that native code refuses changes nothing there, so it is dropped here too;
    // new strings stay queued because their IDs are already handed out.
    this.#len = 0;
    this.#selectors = [];
    const buf = this.#raw.apply(ops, strings, selectors);
    this.#newStrings = [];
    return new MatchChanges(new Uint32Array(buf));
  }

  stats(): LabelIndexStats {
    return this.#raw.stats();
  }

  /** The selectors an item matches now (after the last flush), sorted; null if unknown. */
  matchesOf(itemId: number): Uint32Array | null {
    checkId('item', itemId);
    return this.#raw.matchesOf(itemId);
  }

  #push2(op: number, id: number): void {
    this.#reserve(2);
    this.#ops[this.#len++] = op;
    this.#ops[this.#len++] = id;
  }

  #pushLabels(labels: Labels, keys: string[]): void {
    for (const k of keys) {
      this.#ops[this.#len++] = this.#intern(k);
      this.#ops[this.#len++] = this.#intern(labels[k] as string);
    }
  }

  #intern(s: string): number {
    let id = this.#stringIds.get(s);
    if (id === undefined) {
      id = this.#stringIds.size;
      this.#stringIds.set(s, id);
      this.#newStrings.push(s);
    }
    return id;
  }

  #reserve(words: number): void {
    if (this.#len + words <= this.#ops.length) return;
    let size = this.#ops.length * 2;
    while (size < this.#len + words) size *= 2;
    const next = new Uint32Array(size);
    next.set(this.#ops.subarray(0, this.#len));
    this.#ops = next;
  }
}
