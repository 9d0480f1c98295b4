// The C allocator's free bytes as the memory reducer sees them: a moment after each full
// collection (MEMORY_REDUCER_DEFAULTS.trimDelayMs). Under steady churn they decide
// whether a rule that trims on a rise above the lowest count since the last trim would
// trim over and over (a rise of 16 MB or more between collections) or stay quiet.
import { PerformanceObserver } from 'node:perf_hooks';

import { isMajorGc, MEMORY_REDUCER_DEFAULTS } from '../../src/agent/memory-reducer.js';
import { native } from '../../src/native/load.js';

const MB = 1024 * 1024;

export class ArenaFreeAfterCollections {
  readonly #free: number[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some(isMajorGc)) return;
    const t = setTimeout(() => {
      this.#timers.delete(t);
      this.#free.push(native.mallocStats().free);
    }, MEMORY_REDUCER_DEFAULTS.trimDelayMs);
    this.#timers.add(t);
  });

  start(): void {
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.#observer.disconnect();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  /** "min / median / max MB (n readings), largest rise above the lowest before it". */
  summary(): string {
    const f = this.#free;
    if (!f.length) return 'no full collection';
    const sorted = [...f].sort((a, b) => a - b);
    let low = Number.POSITIVE_INFINITY;
    let rise = 0;
    for (const x of f) {
      rise = Math.max(rise, x - low);
      low = Math.min(low, x);
    }
    const mb = (x: number) => (x / MB).toFixed(1);
    const mid = sorted[Math.floor(sorted.length / 2)] as number;
    return `${mb(sorted[0] as number)} / ${mb(mid)} / ${mb(sorted[sorted.length - 1] as number)} MB (${f.length} readings), largest rise above the lowest before it ${mb(rise)} MB`;
  }
}
