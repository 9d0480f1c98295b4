// Configurations the agent refuses to run with rather than run wrongly: each is a valid
// Felix setting that palisade does not implement yet, where carrying on would program
// something the operator did not ask for (or nothing at all, silently).
import { describeRelease, isSupported, OLDEST_SUPPORTED, releaseOf } from '../model/release.js';
import { wireguardTables } from '../model/wireguard-tables.js';
import type { Config } from './params.js';

type WireguardSettings = Pick<
  Config,
  'WireguardEnabled' | 'WireguardEnabledV6' | 'WireguardRequired' | 'RouteTableRange' | 'RouteTableRanges'
>;

/**
 * Why the agent cannot run with `cfg`, or undefined. `local` checks what env, file and
 * flags decide (before the datastore is read); `datastore` what the datastore may set too.
 */
export function refusal(
  cfg: Readonly<Pick<Config, 'DatastoreType'> & Partial<Pick<Config, 'CalicoVersion'> & WireguardSettings>>,
  stage: 'local' | 'datastore',
): string | undefined {
  if (stage === 'datastore') {
    const release = releaseOf(cfg.CalicoVersion ?? '');
    if (!isSupported(release))
      return `Calico ${describeRelease(release)} (CalicoVersion) is older than palisade supports (${OLDEST_SUPPORTED.major}.${OLDEST_SUPPORTED.minor} and newer): its datastore layout and Felix's names differ`;
    return wireguardRefusal(cfg);
  }
  return undefined;
}

/**
 * WireguardRequired promises nothing goes to another node's pods in clear; without a
 * routing table to hold the WireGuard routes (RouteTableRange(s) leaving none free) the
 * manager can program nothing, and traffic would go in clear: refused.
 */
function wireguardRefusal(cfg: Partial<WireguardSettings>): string | undefined {
  if (!cfg.WireguardRequired) return undefined;
  const tables = wireguardTables(cfg.RouteTableRange ?? '', cfg.RouteTableRanges ?? '');
  if ((cfg.WireguardEnabled && tables.v4 === undefined) || (cfg.WireguardEnabledV6 && tables.v6 === undefined))
    return 'WireguardRequired: RouteTableRange(s) leave no routing table free for WireGuard, so traffic to other nodes would go in clear';
  return undefined;
}
