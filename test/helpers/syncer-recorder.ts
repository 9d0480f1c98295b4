// Records what a Syncer delivers and mirrors the datastore it describes, so tests can
// wait for a state and check the exact updates that led there.
import type { SyncerCallbacks, SyncStatus, Update } from '../../src/datastore/types.js';

export class SyncerRecorder implements SyncerCallbacks {
  readonly statuses: SyncStatus[] = [];
  readonly batches: Update[][] = [];
  /** key -> current value (deletes remove). */
  readonly state = new Map<string, unknown>();
  readonly #waiters = new Set<() => void>();

  onUpdates(updates: Update[]): void {
    this.batches.push(updates);
    for (const u of updates) {
      if (u.value === null) this.state.delete(u.key);
      else this.state.set(u.key, u.value);
    }
    this.#wake();
  }

  onStatusUpdated(status: SyncStatus): void {
    this.statuses.push(status);
    this.#wake();
  }

  get updates(): Update[] {
    return this.batches.flat();
  }

  /** Forgets the updates seen so far (state is kept). */
  clear(): void {
    this.batches.length = 0;
  }

  /** Resolves when `pred` holds (checked after every delivery and every 20 ms), rejects after `ms`. */
  waitFor(pred: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        clearTimeout(timer);
        clearInterval(poll);
        this.#waiters.delete(check);
        resolve();
      };
      const poll = setInterval(check, 20);
      const timer = setTimeout(() => {
        clearInterval(poll);
        this.#waiters.delete(check);
        reject(
          new Error(
            `timed out after ${ms} ms waiting for ${what}; statuses ${this.statuses.join(',')}, ${this.state.size} keys`,
          ),
        );
      }, ms);
      this.#waiters.add(check);
    });
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }
}
