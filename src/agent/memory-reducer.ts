// The agent's memory reducer. Under steady churn the old generation fragments: endpoint
// state replaced a few seconds after it was promoted leaves holes all over its pages,
// and V8's ordinary full collections only compact pages that are 70% free, 4 MB at a time
// (they are tuned for latency), so the committed old space climbs under the GOGC bound
// while the live heap holds (docs/dataplane.md, "Memory under churn"). Chrome's answer is
// to tell V8 when memory matters more than a pause; this one does it when a full
// collection has just shown the fragmentation: V8's memory pressure signal ('moderate')
// starts an incremental collection that compacts pages down to 20% free, up to 12 MB of
// objects a time, and hands the emptied pages back to the system.
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
  log: Logger;
  /** Sends V8's memory pressure signal (the agent's: the addon's `memoryPressure`). */
  pressure: () => void;
  onReduce?: (free: number) => void;
  // Seams for tests.
  oldSpace?: () => OldSpace;
  now?: () => number;
}

export const MEMORY_REDUCER_DEFAULTS = { minFreeBytes: 16 * MB, minFreeRatio: 0.2, minIntervalMs: 120_000 };

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
  readonly #o: Required<Omit<MemoryReducerOptions, 'onReduce'>> & Pick<MemoryReducerOptions, 'onReduce'>;
  #last = Number.NEGATIVE_INFINITY;
  #observer: PerformanceObserver | undefined;
  #reductions = 0;

  constructor(o: MemoryReducerOptions) {
    this.#o = { ...MEMORY_REDUCER_DEFAULTS, oldSpace: readOldSpace, now: () => performance.now(), ...o };
  }

  /** Watches full collections from now on. */
  start(): void {
    if (this.#observer) return;
    this.#observer = new PerformanceObserver((list) => {
      if (list.getEntries().some(isMajorGc)) this.afterFullCollection();
    });
    this.#observer.observe({ entryTypes: ['gc'] });
    const { minFreeBytes, minFreeRatio, minIntervalMs } = this.#o;
    this.#o.log.info(
      { minFreeMb: minFreeBytes / MB, minFreeRatio, minIntervalMs },
      'memory reducer on: a fragmented old generation is compacted after a full collection',
    );
  }

  stop(): void {
    this.#observer?.disconnect();
    this.#observer = undefined;
  }

  get reductions(): number {
    return this.#reductions;
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
    // Called from the GC observer's callback, where a throw would stop the agent.
    try {
      this.#o.pressure();
    } catch (e) {
      this.#o.log.warn({ err: e }, "V8's memory pressure signal failed; the old generation is left as it is");
      return false;
    }
    this.#reductions++;
    this.#o.onReduce?.(free);
    this.#o.log.debug(
      { oldSpaceMb: Math.round(committed / MB), liveMb: Math.round(used / MB) },
      'old generation fragmented: memory-reducing collection asked',
    );
    return true;
  }
}

/** The agent's reducer, started after its first apply as the GOGC bound is (runtime-setup.ts). */
export function startMemoryReducer(log: Logger, onReduce?: (free: number) => void): MemoryReducer {
  const r = new MemoryReducer({
    log,
    pressure: () => native.memoryPressure('moderate'),
    ...(onReduce ? { onReduce } : {}),
  });
  r.start();
  return r;
}
