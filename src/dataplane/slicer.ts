// Long renders (a cold rebuild of 100,000 rules, planning its transaction) are written as
// generators that yield at safe points; a Slicer runs one in time slices and gives the
// event loop back between slices, so health checks, the datastore watch and the calc
// graph keep running during a cold apply. The same generator drained at once is the
// synchronous form (tests, `palisade plan`).

/** The steps of a long render: each `yield` is a point where the loop may run. */
export type Steps = Generator<void, void, undefined>;

/** Runs the steps with no pause. */
export function drain(steps: Generator<void, unknown, undefined>): void {
  for (let r = steps.next(); !r.done; r = steps.next());
}

/** Runs the steps in the slicer's slices when there is one, else at once. */
export async function runSteps(steps: Steps, slicer: Slicer | undefined): Promise<void> {
  if (slicer) await slicer.run(steps);
  else drain(steps);
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

  async run(steps: Steps): Promise<void> {
    let until = performance.now() + this.#budgetMs;
    for (let r = steps.next(); !r.done; r = steps.next()) {
      if (performance.now() < until) continue;
      this.pauses++;
      await nextTurn();
      until = performance.now() + this.#budgetMs;
    }
  }
}
