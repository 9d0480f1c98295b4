// Long renders (a cold rebuild of 100,000 rules, planning its transaction) are written as
// generators that yield at safe points; a Slicer runs one in time slices and gives the
// event loop back between slices, so health checks, the datastore watch and the calc
// graph keep running during a cold apply. The same generator drained at once is the
// synchronous form (tests, `palisade plan`).

/** The steps of a long render: each `yield` is a point where the loop may run. */
export type Steps = Generator<void, void, undefined>;

/** Runs the steps with no pause; what they return. */
export function drain<T>(steps: Generator<void, T, undefined>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Runs the steps in the slicer's slices when there is one, else at once; what they return. */
export async function runSteps<T>(steps: Generator<void, T, undefined>, slicer: Slicer | undefined): Promise<T> {
  return slicer ? slicer.run(steps) : drain(steps);
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Slicer {
  /** Slices given back to the loop so far. */
  pauses = 0;
  readonly #budgetMs: number;

  /** `budgetMs`: how long one slice may run before the loop gets a turn. */
  constructor(budgetMs = 8) {
    this.#budgetMs = budgetMs;
  }

  async run<T>(steps: Generator<void, T, undefined>): Promise<T> {
    let until = performance.now() + this.#budgetMs;
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
      if (performance.now() < until) continue;
      this.pauses++;
      await nextTurn();
      until = performance.now() + this.#budgetMs;
    }
  }
}
