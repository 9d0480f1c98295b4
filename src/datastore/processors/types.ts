// An update processor, as libcalico-go's SyncerUpdateProcessor: one v3 resource (or its
// deletion) in, the internal-model updates Felix consumes out.
import type { V1Update } from '../../model/v1/values.js';
import type { Kind, ResourceOf } from '../../model/schemas.js';
import type { ResourceRef } from '../../model/validate.js';

export interface UpdateProcessor<K extends Kind = Kind> {
  /**
   * `resource` is validated; undefined means `ref` was deleted. Throws ProcessorError for a value it cannot convert.
   */
  process(ref: ResourceRef & { name: string }, resource: ResourceOf<K> | undefined): V1Update[];
}

/** A resource that validates but cannot be converted (the processor has already retracted what it had sent for it). */
export class ProcessorError extends Error {
  readonly code = 'EPROCESSOR';
  /** What to send instead (deletions of what the resource had produced). */
  readonly updates: V1Update[];

  constructor(message: string, updates: V1Update[] = []) {
    super(message);
    this.updates = updates;
  }
}
