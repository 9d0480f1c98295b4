// Which dataplane NFTablesMode means on this node, as Felix's nftables.Enabled(): Enabled
// is nftables, Disabled iptables, and Auto follows kube-proxy, so that the two use the
// same netfilter generation: nftables when kube-proxy runs in nftables mode (its
// `kube-proxy` table, IPv4 or IPv6, has chains), iptables otherwise. Felix re-checks every
// 15 s in Auto mode and restarts when the answer changes; so does the agent.
import { spawnSync } from 'node:child_process';

import type { Config } from '../../config/params.js';
import { run } from '../exec.js';

export type DataplaneMode = 'nftables' | 'iptables';

// Read-only: `nft -j list table <family> kube-proxy`, per family; chains mean nftables mode.
const listKubeProxy = (family: string) => ['-j', 'list', 'table', family, 'kube-proxy'];
const hasChains = (code: number | null, stdout: string) => code === 0 && /"chain"\s*:/.test(stdout);

/** kube-proxy runs in nftables mode: its table has chains. */
export function kubeProxyNftables(): boolean {
  return ['ip', 'ip6'].some((family) => {
    const r = spawnSync('nft', listKubeProxy(family), { encoding: 'utf8', timeout: 10_000 });
    return hasChains(r.status, r.stdout);
  });
}

/** The same check without blocking the event loop (the agent's 15 s re-check). */
export async function kubeProxyNftablesAsync(): Promise<boolean> {
  for (const family of ['ip', 'ip6']) {
    const r = await run('nft', listKubeProxy(family));
    if (hasChains(r.code, r.stdout)) return true;
  }
  return false;
}

export function dataplaneMode(
  config: Pick<Config, 'NFTablesMode'>,
  detect: () => boolean = kubeProxyNftables,
): { mode: DataplaneMode; kubeProxyNftables?: boolean } {
  if (config.NFTablesMode === 'Enabled') return { mode: 'nftables' };
  if (config.NFTablesMode === 'Disabled') return { mode: 'iptables' };
  const kp = detect();
  return { mode: kp ? 'nftables' : 'iptables', kubeProxyNftables: kp };
}
