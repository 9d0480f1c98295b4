// Felix's AsyncCalcGraph throttles its flushes with a leaky bucket: ten flushes in hand,
// one more every 10 ms. While the bucket holds one, the graph flushes as soon as the
// update batch in hand is processed, so an update reaches the dataplane without a fixed
// coalescing delay; a datastore streaming faster than 100 batches a second is flushed at
// that rate, its batches coalescing while it waits.

/** Flushes in hand at most (Felix's leakyBucketSize). */
export const FLUSH_BURST = 10;
/** One flush more every this many ms (Felix's tickInterval). */
export const FLUSH_REFILL_MS = 10;

export class LeakyBucket {
  #tokens: number;
  /** The last refill tick: ticks fall every intervalMs from the start, as a ticker's. */
  #tick: number;

  constructor(
    readonly size = FLUSH_BURST,
    readonly intervalMs = FLUSH_REFILL_MS,
    now = performance.now(),
  ) {
    this.#tokens = size;
    this.#tick = now;
  }

  /** How long until a flush may go (0: now). */
  wait(now = performance.now()): number {
    this.#refill(now);
    return this.#tokens > 0 ? 0 : this.#tick + this.intervalMs - now;
  }

  /** A flush went out. */
  take(now = performance.now()): void {
    this.#refill(now);
    if (this.#tokens > 0) this.#tokens--;
  }

  #refill(now: number): void {
    const ticks = Math.floor((now - this.#tick) / this.intervalMs);
    if (ticks <= 0) return;
    this.#tick += ticks * this.intervalMs;
    this.#tokens = Math.min(this.size, this.#tokens + ticks);
  }
}
