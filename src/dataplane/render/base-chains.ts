// The nftables base chains as Felix's nftables mode declares them (felix/nftables/table.go):
// hook type and priority per table and hook, so `nft list` shows the same chains whether
// palisade or Felix programmed the node. Both nftables renderings (plan's text, the native
// backend) take them from here.
import type { TableName } from './model.js';

/** nft's standard priorities (numbers, as the kernel holds them). */
const PRIO = { raw: -300, mangle: -150, dstnat: -100, filter: 0, srcnat: 100 } as const;

export interface BaseChainSpec {
  type: 'filter' | 'nat' | 'route';
  priority: number;
}

export function baseChainSpec(table: TableName, hook: string): BaseChainSpec {
  switch (table) {
    case 'raw':
      return { type: 'filter', priority: PRIO.raw };
    case 'mangle':
      return { type: hook === 'OUTPUT' ? 'route' : 'filter', priority: PRIO.mangle };
    case 'nat':
      // Felix: DNAT priority before routing, SNAT priority + 10 after (and for OUTPUT).
      return { type: 'nat', priority: hook === 'PREROUTING' || hook === 'INPUT' ? PRIO.dstnat : PRIO.srcnat + 10 };
    default:
      return { type: 'filter', priority: PRIO.filter };
  }
}
