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
 * is native memory handed over without a copy; release() gives it back once read.
 */
export class MatchChanges {
  /** [selector, item | started << 31] pairs. */
  readonly packed: Uint32Array;
  readonly #owner: RawLabelIndex | undefined;

  constructor(packed: Uint32Array, owner?: RawLabelIndex) {
    this.packed = packed;
    this.#owner = owner;
  }

  /** Number of transitions (0 once released). */
  get length(): number {
    return this.packed.length >>> 1;
  }

  /**
   * Frees the buffer now, for a reader that is done with it (the changes are empty
   * after). Otherwise a snapshot's tens of MB wait for V8's next major GC, which a heap
   * that is mostly native memory can put off for a long time.
   */
  release(): void {
    if (this.packed.length) this.#owner?.releaseChanges(this.packed.buffer as ArrayBuffer);
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

const NO_CHANGES = new MatchChanges(new Uint32Array(0));
Object.freeze(NO_CHANGES);

export type LabelIndexStats = RawLabelIndexStats;

function checkId(kind: string, id: number): void {
  if (!Number.isInteger(id) || id < 0 || id >= MAX_ID) {
    throw new RangeError(`LabelIndex: ${kind} id must be an integer in [0, ${MAX_ID}), got ${id}`);
  }
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
  // Label strings cross as IDs; each is sent as text once. Native code reports the IDs
  // of strings nothing uses any more, which are forgotten here and reused.
  readonly #stringIds = new Map<string, number>();
  readonly #strings: Array<string | undefined> = [];
  readonly #freeStringIds: number[] = [];
  #newStringIds = new Uint32Array(256);
  #newStrings: string[] = [];
  readonly #released: number[] = [];
  // Per label key: its string ID and the last value seen with it. Most label values repeat
  // from one upsert of an item to the next, so this skips the big string map; entries
  // are checked against #strings, so an ID freed and reused never aliases.
  readonly #keyCache = new Map<string, { id: number; value: string; valueId: number }>();
  #ops = new Uint32Array(4096);
  #len = 0;
  #selectors: RawSelector[] = [];
  #started = false;

  upsertParent(id: number, labels: Labels): void {
    checkId('parent', id);
    const keys = Object.keys(labels);
    const start = this.#len;
    this.#reserve(3 + keys.length * 2);
    this.#ops[this.#len++] = OP_UPSERT_PARENT;
    this.#ops[this.#len++] = id;
    this.#ops[this.#len++] = keys.length;
    this.#pushLabels(labels, keys, start);
  }

  deleteParent(id: number): void {
    checkId('parent', id);
    this.#push2(OP_DELETE_PARENT, id);
  }

  /** `parents` is the inheritance order: the first parent that has a key supplies it. */
  upsertItem(id: number, labels: Labels, parents: readonly number[] = []): void {
    checkId('item', id);
    for (const p of parents) checkId('parent', p);
    const keys = Object.keys(labels);
    const start = this.#len;
    this.#reserve(4 + keys.length * 2 + parents.length);
    this.#ops[this.#len++] = OP_UPSERT_ITEM;
    this.#ops[this.#len++] = id;
    this.#ops[this.#len++] = keys.length;
    this.#ops[this.#len++] = parents.length;
    this.#pushLabels(labels, keys, start);
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
    const { ops, opsLength, selectors, strings } = this.#take();
    const released = this.#released;
    released.length = 0;
    // A started batch's transitions come first in what this returns.
    this.#started = false;
    const buf = this.#raw.apply(ops, opsLength, this.#newStringIds, strings, selectors, released);
    if (strings.length) this.#newStrings = [];
    // A snapshot's batch grows the buffer to tens of MB; don't keep that for small batches.
    if (ops.length > 1 << 20) this.#ops = new Uint32Array(4096);
    for (const id of released) {
      this.#stringIds.delete(this.#strings[id] as string);
      this.#strings[id] = undefined;
      this.#freeStringIds.push(id);
    }
    return this.#changes(buf);
  }

  /**
   * Sends the queued mutations to be applied on a native thread while the caller goes on
   * queuing; finishFlush() (or flush(), or any read) waits for them. A bad batch throws
   * here, with nothing changed. No string is freed until the next flush().
   */
  startFlush(): void {
    const { ops, opsLength, selectors, strings } = this.#take();
    this.#raw.applyStart(ops, opsLength, this.#newStringIds, strings, selectors);
    this.#started = true;
    if (strings.length) this.#newStrings = [];
  }

  /** Whether a started batch's transitions are still to be taken. */
  get started(): boolean {
    return this.#started;
  }

  /** Waits for the started batch and returns its transitions. */
  finishFlush(): MatchChanges {
    this.#started = false;
    return this.#changes(this.#raw.finishApply());
  }

  // The queued batch, handed over: a batch native code refuses changes nothing there, so
  // it is dropped here too; new strings stay queued because their IDs are handed out.
  #take(): { ops: Uint32Array; opsLength: number; selectors: RawSelector[]; strings: string[] } {
    const taken = { ops: this.#ops, opsLength: this.#len, selectors: this.#selectors, strings: this.#newStrings };
    this.#len = 0;
    if (taken.selectors.length) this.#selectors = [];
    return taken;
  }

  #changes(buf: ArrayBuffer | undefined): MatchChanges {
    return buf === undefined ? NO_CHANGES : new MatchChanges(new Uint32Array(buf), this.#raw);
  }

  stats(): LabelIndexStats {
    return this.#raw.stats();
  }

  /** Label strings the TypeScript side holds IDs for (for tests and metrics). */
  get internedStrings(): number {
    return this.#stringIds.size;
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

  // A bad value drops the whole op (back to `start`), so nothing half-queued is sent.
  #pushLabels(labels: Labels, keys: string[], start: number): void {
    for (const k of keys) {
      const v = labels[k];
      if (typeof v !== 'string') {
        this.#len = start;
        throw new TypeError(`LabelIndex: label ${JSON.stringify(k)} must have a string value, got ${typeof v}`);
      }
      let e = this.#keyCache.get(k);
      if (e === undefined || this.#strings[e.id] !== k) {
        e = { id: this.#intern(k), value: v, valueId: this.#intern(v) };
        this.#keyCache.set(k, e);
      } else if (e.value !== v || this.#strings[e.valueId] !== v) {
        e.value = v;
        e.valueId = this.#intern(v);
      }
      this.#ops[this.#len++] = e.id;
      this.#ops[this.#len++] = e.valueId;
    }
  }

  #intern(s: string): number {
    let id = this.#stringIds.get(s);
    if (id === undefined) {
      id = this.#freeStringIds.pop() ?? this.#strings.length;
      this.#stringIds.set(s, id);
      this.#strings[id] = s;
      const n = this.#newStrings.length;
      if (n === this.#newStringIds.length) {
        const grown = new Uint32Array(n * 2);
        grown.set(this.#newStringIds);
        this.#newStringIds = grown;
      }
      this.#newStringIds[n] = id;
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
