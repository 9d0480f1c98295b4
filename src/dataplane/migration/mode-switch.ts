// Switching dataplane modes removes the other mode's Calico state, never anything
// foreign: in nftables mode, what Calico's iptables mode left (takeover.ts); in iptables
// mode, our `calico` nftables tables (from an earlier run in nftables mode, or Felix's
// nftables mode, which uses the same tables). Runs once, after the first apply has
// committed and hooked our own rules (the driver's #removeOtherMode): never before, or
// the node is open in between.
import type { Logger } from '../../log.js';
import { NftBackend } from '../backends/nft/backend.js';
import type { RulesBackend } from '../backends/rules-backend.js';
import { removeFelixIptablesState } from './takeover.js';

export async function removeOtherModeState(rules: RulesBackend, log: Logger): Promise<void> {
  if (!rules.name.startsWith('iptables')) {
    await removeFelixIptablesState(log);
    return;
  }
  try {
    await new NftBackend().removeTables([...rules.families]);
  } catch (e) {
    log.error({ error: (e as Error).message }, 'could not remove the nftables-mode tables; iptables mode goes on');
  }
}
