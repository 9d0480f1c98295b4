// A bench's record of a stream's timings, allocated whole (and its pages written) before
// the bench first reads RSS: arrays grown by pushing were part of the growth a soak
// reported as the agent's (2 MB of the live heap's +6 MB over 600 s of churn).
import { withSlot } from '../../src/calc/typed-arrays.js';

export class Samples {
  #a: Float64Array;
  #n = 0;

  constructor(capacity: number) {
    this.#a = new Float64Array(Math.max(16, capacity)).fill(0);
  }

  push(x: number): void {
    // A stream longer than planned still records every sample.
    this.#a = withSlot(this.#a, this.#n);
    this.#a[this.#n++] = x;
  }

  get length(): number {
    return this.#n;
  }

  /** The samples so far (a view: valid until the next push). */
  get values(): Float64Array {
    return this.#a.subarray(0, this.#n);
  }
}
