// One place that chooses the rules backend from the configuration, as Felix chooses
// between its nftables and iptables tables at start. NFTablesMode Enabled and Auto program
// nftables; Disabled (iptables mode) is refused before the dataplane starts
// (config/refusal.ts) until the iptables backends exist.
import type { Config } from '../../config/params.js';
import { families } from '../render/ruleset.js';
import { NftRulesBackend } from './nft/rules-backend.js';
import type { RulesBackend } from './rules-backend.js';

export function createRulesBackend(config: Config): RulesBackend {
  if (config.NFTablesMode === 'Disabled') throw new Error('NFTablesMode Disabled (iptables mode) has no rules backend yet');
  return new NftRulesBackend(config, families(config));
}
