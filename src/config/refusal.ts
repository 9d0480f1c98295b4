// Configurations the agent refuses to run with rather than run wrongly: each is a valid
// Felix setting that palisade does not implement yet, where carrying on would program
// something the operator did not ask for (or nothing at all, silently).
import { describeRelease, isSupported, OLDEST_SUPPORTED, releaseOf } from '../model/release.js';
import type { Config } from './params.js';

/**
 * Why the agent cannot run with `cfg`, or undefined. `local` checks what env, file and
 * flags decide (before the datastore is read); `datastore` what the datastore may set too.
 */
export function refusal(
  cfg: Readonly<Pick<Config, 'DatastoreType'> & Partial<Pick<Config, 'CalicoVersion'>>>,
  stage: 'local' | 'datastore',
): string | undefined {
  if (stage === 'datastore') {
    const release = releaseOf(cfg.CalicoVersion ?? '');
    if (!isSupported(release))
      return `Calico ${describeRelease(release)} (CalicoVersion) is older than palisade supports (${OLDEST_SUPPORTED.major}.${OLDEST_SUPPORTED.minor} and newer): its datastore layout and Felix's names differ`;
  }
  return undefined;
}
