// Configurations the agent refuses to run with rather than run wrongly: each is a valid
// Felix setting that palisade does not implement yet, where carrying on would program
// something the operator did not ask for (or nothing at all, silently).
import type { Config } from './params.js';

/**
 * Why the agent cannot run with `cfg`, or undefined. `local` checks what env, file and
 * flags decide (before the datastore is read); `datastore` what FelixConfiguration may set.
 */
export function refusal(
  _cfg: Readonly<Pick<Config, 'DatastoreType'>>,
  _stage: 'local' | 'datastore',
): string | undefined {
  // Nothing is refused today; the Kubernetes datastore, the last refusal, now exists.
  return undefined;
}
