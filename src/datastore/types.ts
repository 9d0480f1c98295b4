// The contract every datastore meets, as Felix's api.Syncer: batches of updates (key,
// value or null for a delete, revision) and sync-status changes, delivered in order; a
// syncer delivers all updates it has before it reports a new status.
import type { Resource } from '../model/schemas.js';
import type { V1Update } from '../model/v1/values.js';

export type SyncStatus = 'wait-for-datastore' | 'resync-in-progress' | 'in-sync';

export interface Update {
  /** Calico's key: /calico/resources/v3/projectcalico.org/<plural>/[<namespace>/]<name> */
  key: string;
  /** The decoded v3 resource (unvalidated), or null for a delete. */
  value: unknown;
  /** The datastore's revision of this value (etcd's mod revision; a counter for files). */
  revision: string;
  /** Where the value came from, for error messages ("policies.yaml document 2"). */
  source?: string;
  /** Why the stored value could not be decoded (value is then null but this is no delete). */
  decodeError?: string;
  /** The value, already validated by the syncer (the file datastore validates to keep last-good values). */
  validated?: Resource;
}

export interface SyncerCallbacks {
  onUpdates(updates: Update[]): void;
  onStatusUpdated(status: SyncStatus): void;
}

export interface Syncer {
  /** Told of each invalid resource a syncer refuses itself (the file datastore keeps the last good of any kind). */
  onInvalid?: InvalidHandler | undefined;
  /** Starts listing and watching; callbacks run on the event loop, in order. */
  start(callbacks: SyncerCallbacks): void;
  /** Stops watching and releases connections, timers and watches. */
  stop(): Promise<void>;
  /**
   * Since when, and why, the datastore has not answered, for a syncer that stays in sync
   * while it reconnects (Kubernetes); one that is not answered leaves in-sync instead.
   */
  lostContact?(): { since: number; reason: string } | undefined;
  /** Why the syncer cannot come in sync on its own (the datastore refuses it, as RBAC's 403), if it cannot. */
  blocked?(): string | undefined;
}

export interface ModelSyncerCallbacks {
  onModelUpdates(updates: V1Update[]): void;
  onStatusUpdated(status: SyncStatus): void;
}

/**
 * An update validation refused, by the kind of resource: `kept` when the last good value
 * stays in force (a policy, network set, host endpoint or tier: dropping it could open
 * traffic), `dropped` when the resource is removed as Felix removes it.
 */
export type InvalidHandler = (kind: string, outcome: 'kept' | 'dropped') => void;

/**
 * Kinds whose removal can leave traffic less protected (a policy's isolation, a deny's
 * network set, a host endpoint's, a tier's default deny): an invalid update of one that was
 * valid keeps the last good value in force instead (issue 52), reported and counted.
 */
export const KEEP_LAST_GOOD: ReadonlySet<string> = new Set([
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'KubernetesNetworkPolicy',
  'KubernetesClusterNetworkPolicy',
  'NetworkSet',
  'GlobalNetworkSet',
  'HostEndpoint',
  'Tier',
]);

/** A syncer that delivers Felix's internal model itself, already processed (Typha). */
export interface ModelSyncer {
  readonly deliversModel: true;
  /** Told of each value that does not parse (set before start). */
  onInvalid?: InvalidHandler | undefined;
  start(callbacks: ModelSyncerCallbacks): void;
  stop(): Promise<void>;
}
