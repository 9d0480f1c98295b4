// ValidationFilter, as Felix's: between the syncer and the calc graph. A value that fails
// validation, or that does not match its key, is logged (once for as long as it stays
// bad) and passed on as a delete, so the bad resource is dropped and nothing else is
// affected - except where dropping could open traffic (KEEP_LAST_GOOD: a policy, network
// set, host endpoint or tier that was valid), where the last good value stays in force.
// Each is counted (`onInvalid`). Statuses pass through after the updates before them.
import type { Logger } from '../log.js';
import { NAMESPACED_KINDS, type Resource } from '../model/schemas.js';
import { describeRef, type ResourceRef, validateResource } from '../model/validate.js';
import { keyOf, refOfKey } from './keys.js';
import { type InvalidHandler, KEEP_LAST_GOOD, type SyncerCallbacks, type SyncStatus, type Update } from './types.js';

export interface ResourceSink {
  onUpdate(ref: ResourceRef, resource: Resource | undefined): void;
  onStatus(status: SyncStatus): void;
}

/**
 * Whether a valid resource is the one its key names (its own key is the key), compared
 * by field: building its key for each of 5,000 updates a second cost more than the check.
 */
function namesRef(r: Resource, ref: ResourceRef): boolean {
  if (r.kind !== ref.kind || r.metadata.name !== ref.name) return false;
  // A cluster-wide kind's key has no namespace (validation refuses one in the value).
  return !NAMESPACED_KINDS.has(r.kind) || ('namespace' in r.metadata && r.metadata.namespace === ref.namespace);
}

export class ValidationFilter implements SyncerCallbacks {
  readonly #sink: ResourceSink;
  readonly #log: Logger;
  /** key -> the last problem reported for it, so it is reported once. */
  readonly #reported = new Map<string, string>();
  #invalid = 0;
  /** Keys of KEEP_LAST_GOOD kinds whose last value passed on was valid. */
  readonly #good = new Set<string>();
  readonly #onInvalid: InvalidHandler | undefined;

  constructor(sink: ResourceSink, log: Logger, onInvalid?: InvalidHandler) {
    this.#sink = sink;
    this.#log = log;
    this.#onInvalid = onInvalid;
  }

  /** Keys whose current value is invalid (dropped). */
  get invalidCount(): number {
    return this.#reported.size;
  }

  /** Invalid values seen since start (each counted once per change). */
  get invalidTotal(): number {
    return this.#invalid;
  }

  onUpdates(updates: Update[]): void {
    for (const u of updates) this.#onUpdate(u);
  }

  onStatusUpdated(status: SyncStatus): void {
    this.#sink.onStatus(status);
  }

  #onUpdate(u: Update): void {
    const ref = refOfKey(u.key);
    if (!ref) {
      this.#report(u.key, `ignoring key outside Calico's v3 layout: ${u.key}`, u);
      return;
    }
    if (u.decodeError !== undefined) {
      this.#drop(u, ref, `${u.source ?? u.key}: ${u.decodeError}`);
      return;
    }
    if (u.value === null || u.value === undefined) {
      if (this.#reported.size) this.#reported.delete(u.key);
      this.#good.delete(u.key);
      this.#sink.onUpdate(ref, undefined);
      return;
    }
    let resource = u.validated;
    if (!resource) {
      const r = validateResource(u.value, u.source);
      if (!r.ok) {
        this.#drop(u, ref, r.error.message, r.error.issues);
        return;
      }
      for (const w of r.warnings) this.#warnOnce(`${u.key}\u0000${w}`, w);
      resource = r.resource;
    }
    if (!namesRef(resource, ref)) {
      const valueKey = keyOf({
        kind: resource.kind,
        name: resource.metadata.name,
        ...('namespace' in resource.metadata ? { namespace: resource.metadata.namespace as string } : {}),
      });
      this.#drop(u, ref, `${describeRef(ref)}: the value names a different resource (${valueKey ?? 'none'})`);
      return;
    }
    if (this.#reported.size && this.#reported.delete(u.key))
      this.#log.info({ key: u.key }, `${describeRef(ref)} is valid again`);
    if (KEEP_LAST_GOOD.has(ref.kind)) this.#good.add(u.key);
    this.#sink.onUpdate(ref, resource);
  }

  #drop(u: Update, ref: ResourceRef, message: string, issues?: unknown): void {
    const keep = this.#good.has(u.key);
    if (this.#reported.get(u.key) !== message) {
      this.#invalid++;
      this.#onInvalid?.(ref.kind, keep ? 'kept' : 'dropped');
    }
    this.#report(u.key, message, u, issues, keep);
    if (!keep) this.#sink.onUpdate(ref, undefined);
  }

  #report(key: string, message: string, u: Update, issues?: unknown, kept = false): void {
    if (this.#reported.get(key) === message) return;
    this.#reported.set(key, message);
    this.#log.warn(
      { key, revision: u.revision, ...(u.source ? { source: u.source } : {}), ...(issues ? { issues } : {}) },
      kept
        ? `invalid update ignored, the last good value stays in force: ${message}`
        : `invalid resource dropped: ${message}`,
    );
  }

  readonly #warned = new Set<string>();
  #warnOnce(id: string, message: string): void {
    if (this.#warned.has(id)) return;
    this.#warned.add(id);
    this.#log.warn(message);
  }
}
