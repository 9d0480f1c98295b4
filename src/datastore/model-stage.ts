// The stages between a syncer of v3 resources and Felix's internal model, as Felix's
// syncer runs them: the validation filter, then the update processors. The agent's
// control plane and `palisade typha`'s feeder both sit behind it; a syncer that already
// delivers the model (Typha) skips it.
import type { Logger } from '../log.js';
import type { V1Update } from '../model/v1/values.js';
import { UpdateProcessors } from './processors/index.js';
import type { InvalidHandler, SyncerCallbacks, SyncStatus, Update } from './types.js';
import { ValidationFilter } from './validation-filter.js';

export interface ModelSink {
  onModelUpdate(u: V1Update): void;
  /** After the model updates that came before it. */
  onStatus(status: SyncStatus): void;
}

export class ModelStage implements SyncerCallbacks {
  readonly #filter: ValidationFilter;

  constructor(sink: ModelSink, log: Logger, onInvalid?: InvalidHandler) {
    const processors = new UpdateProcessors(log);
    this.#filter = new ValidationFilter(
      {
        onUpdate: (ref, resource) => {
          for (const u of processors.process(ref, resource)) sink.onModelUpdate(u);
        },
        onStatus: (s) => sink.onStatus(s),
      },
      log,
      onInvalid,
    );
  }

  onUpdates(updates: Update[]): void {
    this.#filter.onUpdates(updates);
  }

  onStatusUpdated(status: SyncStatus): void {
    this.#filter.onStatusUpdated(status);
  }
}
