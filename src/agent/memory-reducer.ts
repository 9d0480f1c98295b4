// The agent's memory reducer. Under steady churn the old generation fragments: endpoint
// state replaced a few seconds after it was promoted leaves holes all over its pages,
// and V8's ordinary full collections only compact pages that are 70% free, 4 MB at a time
// (they are tuned for latency), so the committed old space climbs under the GOGC bound
// while the live heap holds (docs/dataplane.md, "Memory under churn"). Chrome's answer is
// to tell V8 when memory matters more than a pause; this one does it when a full
// collection has just shown the fragmentation: V8's memory pressure signal ('moderate')
// starts an incremental collection that compacts pages down to 20% free, up to 12 MB of
// objects a time, and hands the emptied pages back to the system.
//
// The C allocator has the same habit: glibc keeps what native code frees (the initial
// sync's netlink batches, the label index's old vectors, array buffers Node allocates
// with malloc) in its arenas, and their pages in RSS, until the top of an arena is free.
// A second after a full collection (V8 frees dead array buffers in a sweep after it), if
// the arenas' free bytes rose 16 MB above their lowest since the last trim, malloc_trim
// hands their whole free pages back, on the libuv pool: 28 MB of RSS after the initial
// sync's garbage was collected, for 3 ms of a pool thread. Under steady churn the free
// bytes hold and no trim is asked: the pages would be faulted back in within seconds
// (docs/dataplane.md, "The C allocator's free pages").
//
// Both wait for a full collection, which a node gone quiet after its initial sync may
// not have for a long time, its sync's garbage held meanwhile; so the agent asks for
// one memory-reducing collection once its first apply is done (reduceNow).
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

import type { Logger } from '../log.js';
import { native } from '../native/load.js';

const MB = 1024 * 1024;

export interface OldSpace {
  /** Bytes of pages the old generation holds. */
  committed: number;
  /** Bytes of objects in them (after a full collection: the live ones). */
  used: number;
}

export interface MemoryReducerOptions {
  /** Fragmentation, as free bytes in committed pages, worth a reduction: at least this... */
  minFreeBytes?: number;
  /** ...and at least this share of the used bytes. */
  minFreeRatio?: number;
  /** At most one reduction in this time: each is a full collection and a long pause. */
  minIntervalMs?: number;
  /**
   * Bytes freed in the C allocator's arenas since the last trim that are worth a trim (at
   * most one each minIntervalMs): their free count's rise above its lowest since then.
   * Under steady churn the count holds (within 3 MB over 600 s of `churn-soak`), and the
   * pages a trim hands back are faulted in again within seconds; after a burst (the
   * initial sync, a resync) it rises, and the memory stays free.
   */
  minMallocFreeBytes?: number;
  /** How long after a full collection its arenas are looked at. */
  trimDelayMs?: number;
  log: Logger;
  /** Sends V8's memory pressure signal (the agent's: the addon's `memoryPressure`). */
  pressure: () => void;
  /** Bytes free in the C allocator's arenas (the addon's `mallocStats().free`). */
  mallocFree: () => number;
  /** Hands the arenas' free pages back (the addon's `mallocTrim`): whether any went. */
  trim: () => Promise<boolean>;
  /** Each reduction asked, with the old space's free bytes then. */
  onReduce?: (free: number) => void;
  onTrim?: (t: TrimResult) => void;
  // Seams for tests.
  oldSpace?: () => OldSpace;
  now?: () => number;
}

export interface TrimResult {
  /** Bytes free in the arenas before the trim (glibc's count; a trim does not change it). */
  mallocFree: number;
  /** Whether glibc handed anything back. */
  released: boolean;
  rssBefore: number;
  rssAfter: number;
}

export const MEMORY_REDUCER_DEFAULTS = {
  minFreeBytes: 16 * MB,
  minFreeRatio: 0.2,
  minIntervalMs: 120_000,
  minMallocFreeBytes: 16 * MB,
  trimDelayMs: 1000,
};

/** The kind of collection a 'gc' performance entry reports (Node's NODE_PERFORMANCE_GC_*). */
export function gcKind(e: PerformanceEntry): number | undefined {
  return (e as unknown as { detail?: { kind?: number } }).detail?.kind;
}

export function isMajorGc(e: PerformanceEntry): boolean {
  return gcKind(e) === constants.NODE_PERFORMANCE_GC_MAJOR;
}

export function readOldSpace(): OldSpace {
  const s = getHeapSpaceStatistics().find((x) => x.space_name === 'old_space');
  return { committed: s?.space_size ?? 0, used: s?.space_used_size ?? 0 };
}

export class MemoryReducer {
  readonly #o: Required<Omit<MemoryReducerOptions, 'onReduce' | 'onTrim'>> &
    Pick<MemoryReducerOptions, 'onReduce' | 'onTrim'>;
  #last = Number.NEGATIVE_INFINITY;
  #lastTrim = Number.NEGATIVE_INFINITY;
  #trimming: Promise<void> | undefined;
  #trimTimer: NodeJS.Timeout | undefined;
  /**
   * The lowest count of the arenas' free bytes seen since the last trim, starting from the
   * count the trim left (a trim hands pages back but frees no chunk). A rise above it is
   * memory freed since: chunks reused meanwhile lower it, so a burst after them is not
   * hidden by a count that happens to match the last trim's.
   */
  #lowFree = 0;
  #observer: PerformanceObserver | undefined;
  #reductions = 0;
  #trims = 0;

  constructor(o: MemoryReducerOptions) {
    this.#o = { ...MEMORY_REDUCER_DEFAULTS, oldSpace: readOldSpace, now: () => performance.now(), ...o };
  }

  /** Watches full collections from now on. */
  start(): void {
    if (this.#observer) return;
    this.#observer = new PerformanceObserver((list) => {
      if (!list.getEntries().some(isMajorGc)) return;
      this.afterFullCollection();
      this.#scheduleTrim();
    });
    this.#observer.observe({ entryTypes: ['gc'] });
    const { minFreeBytes, minFreeRatio, minIntervalMs, minMallocFreeBytes } = this.#o;
    this.#o.log.info(
      { minFreeMb: minFreeBytes / MB, minFreeRatio, minIntervalMs, minMallocFreeMb: minMallocFreeBytes / MB },
      'memory reducer on: after a full collection, a fragmented old generation is compacted and the C allocator trimmed',
    );
  }

  stop(): void {
    this.#observer?.disconnect();
    this.#observer = undefined;
    clearTimeout(this.#trimTimer);
    this.#trimTimer = undefined;
  }

  // A moment after the collection: V8 frees the dead array buffers' memory on a
  // background sweep after it, and a trim before that finds their pages still in use.
  #scheduleTrim(): void {
    if (this.#trimTimer || this.#trimming) return;
    this.#trimTimer = setTimeout(() => {
      this.#trimTimer = undefined;
      this.maybeTrim();
    }, this.#o.trimDelayMs);
    this.#trimTimer.unref();
  }

  get reductions(): number {
    return this.#reductions;
  }

  get trims(): number {
    return this.#trims;
  }

  /** The trim under way, if any (for tests and benches). */
  get trimming(): Promise<void> | undefined {
    return this.#trimming;
  }

  /**
   * Right after a full collection the old space's used bytes are its live ones, so the
   * free bytes in its pages are its fragmentation. Returns whether a reduction was asked.
   */
  afterFullCollection(): boolean {
    const { committed, used } = this.#o.oldSpace();
    const free = committed - used;
    if (free < this.#o.minFreeBytes || free < used * this.#o.minFreeRatio) return false;
    const now = this.#o.now();
    if (now - this.#last < this.#o.minIntervalMs) return false;
    this.#last = now;
    if (!this.#signal(free)) return false;
    this.#o.log.debug(
      { oldSpaceMb: Math.round(committed / MB), liveMb: Math.round(used / MB) },
      'old generation fragmented: memory-reducing collection asked',
    );
    return true;
  }

  /**
   * One memory-reducing collection now, whatever the heap looks like: after the initial
   * sync, whose garbage a node that then goes quiet may not collect for a long time, and
   * with it the C allocator's trim that follows a full collection. A single event, so it
   * leaves the fragmentation rule's interval alone: under churn that rule's first
   * reduction still comes at the stream's first fragmented collection. Returns whether
   * it was asked.
   */
  reduceNow(why: string): boolean {
    const { committed, used } = this.#o.oldSpace();
    if (!this.#signal(committed - used)) return false;
    this.#o.log.info({ reason: why }, 'memory-reducing collection asked');
    return true;
  }

  #signal(free: number): boolean {
    // Called from the GC observer's callback and the driver's, where a throw would stop the agent.
    try {
      this.#o.pressure();
    } catch (e) {
      this.#o.log.warn({ err: e }, "V8's memory pressure signal failed; the old generation is left as it is");
      return false;
    }
    this.#reductions++;
    this.#o.onReduce?.(free);
    return true;
  }

  /**
   * Trims the C allocator when its arenas' free bytes rose enough above their lowest count
   * since the last trim, at most once in the interval and never two at once. Returns
   * whether a trim was started.
   */
  maybeTrim(): boolean {
    if (this.#trimming) return false;
    const now = this.#o.now();
    let free: number;
    let rss: number;
    let trimmed: Promise<boolean>;
    // Called from a timer, where a throw would stop the agent.
    try {
      free = this.#o.mallocFree();
      const risen = free - this.#lowFree;
      // Read within the interval too: a dip there is where a later rise counts from.
      this.#lowFree = Math.min(this.#lowFree, free);
      if (risen < this.#o.minMallocFreeBytes || now - this.#lastTrim < this.#o.minIntervalMs) return false;
      rss = process.memoryUsage.rss();
      trimmed = this.#o.trim();
    } catch (e) {
      this.#o.log.warn({ err: e }, 'malloc_trim failed; the C allocator keeps its free pages');
      return false;
    }
    this.#lastTrim = now;
    this.#lowFree = free;
    this.#trimming = trimmed
      .then(
        (released) => {
          const t: TrimResult = { mallocFree: free, released, rssBefore: rss, rssAfter: process.memoryUsage.rss() };
          this.#trims++;
          this.#o.onTrim?.(t);
          this.#o.log.debug(
            {
              mallocFreeMb: Math.round(free / MB),
              released,
              rssMb: Math.round(rss / MB),
              rssAfterMb: Math.round(t.rssAfter / MB),
            },
            "C allocator trimmed: its arenas' free pages handed back",
          );
        },
        (e: unknown) => this.#o.log.warn({ err: e }, 'malloc_trim failed; the C allocator keeps its free pages'),
      )
      .finally(() => {
        this.#trimming = undefined;
      });
    return true;
  }
}

/** The agent's reducer, started after its first apply as the GOGC bound is (runtime-setup.ts). */
export function startMemoryReducer(
  log: Logger,
  counters: Pick<MemoryReducerOptions, 'onReduce' | 'onTrim'> = {},
): MemoryReducer {
  const r = new MemoryReducer({
    log,
    pressure: () => native.memoryPressure('moderate'),
    mallocFree: () => native.mallocStats().free,
    trim: () => native.mallocTrim(),
    ...counters,
  });
  r.start();
  return r;
}
