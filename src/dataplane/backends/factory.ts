// One place that chooses the rules backend from the configuration, as Felix chooses
// between its nftables and iptables tables at start: NFTablesMode as mode.ts resolves it
// (Auto follows kube-proxy); iptables mode goes through the backend IptablesBackend names
// (or detects, as Felix does).
import type { Config } from '../../config/params.js';
import type { Logger } from '../../log.js';
import { families } from '../render/ruleset.js';
import { detectIptablesBackend } from './iptables/detect.js';
import { IptablesRulesBackend } from './iptables/rules-backend.js';
import { NftRulesBackend } from './nft/rules-backend.js';
import { dataplaneMode } from './mode.js';
import type { RulesBackend } from './rules-backend.js';

export function createRulesBackend(config: Config, log: Logger): RulesBackend {
  const { mode, kubeProxyNftables } = dataplaneMode(config);
  log.info(
    { calicoMode: config.NFTablesMode, kubeProxyNftables, useNftables: mode === 'nftables' },
    'determined whether or not to use nftables',
  );
  if (mode === 'iptables') {
    const flavour = detectIptablesBackend(config.IptablesBackend);
    log.info({ setting: config.IptablesBackend, backend: `iptables-${flavour}` }, 'iptables mode');
    return new IptablesRulesBackend(config, families(config), { flavour, log });
  }
  return new NftRulesBackend(config, families(config));
}
