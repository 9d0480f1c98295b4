// The Manager seam, as Felix's int_dataplane managers: the driver hands every dataplane
// message to every manager (onUpdate only records what changed, cheaply), tells them when
// interfaces changed, and after the rules transaction calls each manager's apply(), in
// order, for its own kernel work. A manager that fails its apply throws; the driver
// retries the whole apply after a fresh read-back, and calls markResync() first.
import type { ToDataplane, WorkloadEndpoint } from '../../proto/messages.js';

export interface Manager {
  /** For logs and the apply report. */
  readonly name: string;
  onUpdate(msg: ToDataplane): void;
  /** An apply starts: the rules about to be committed are built from the messages so far. */
  beginApply?(): void;
  /** The interface table changed for these names (it is already updated). */
  onInterfaces?(changed: ReadonlySet<string>): void;
  /** Re-read or re-assert the kernel state at the next apply (refresh timers, failures). */
  markResync?(): void;
  /** The kernel work for what changed; returns counters for the apply report. */
  apply(): Promise<Record<string, number>>;
  /** --cleanup: removes what this manager programs (and only that). */
  removeAll?(): Promise<unknown>;
}

/** The local workload endpoints, as the messages leave them: each manager keeps its own. */
export class LocalEndpoints {
  readonly byId = new Map<string, WorkloadEndpoint>();

  /** Applies a message; true when it was about a workload endpoint. */
  onUpdate(msg: ToDataplane): boolean {
    if (msg.type === 'WorkloadEndpointUpdate')
      this.byId.set(`${msg.id.orchestratorId}/${msg.id.workloadId}/${msg.id.endpointId}`, msg.endpoint);
    else if (msg.type === 'WorkloadEndpointRemove')
      this.byId.delete(`${msg.id.orchestratorId}/${msg.id.workloadId}/${msg.id.endpointId}`);
    else return false;
    return true;
  }

  values(): IterableIterator<WorkloadEndpoint> {
    return this.byId.values();
  }
}
