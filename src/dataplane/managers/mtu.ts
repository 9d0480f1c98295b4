// MTUs as Felix's int_dataplane sizes them (findHostMTU, ConfigureDefaultMTUs,
// determinePodMTU): the host's MTU is the smallest of the up interfaces MTUIfacePattern
// matches (1460, the smallest common cloud MTU, when none does), each encapsulation's is
// its configured MTU or the host's less its overhead, and the pods' is the smallest of the
// encapsulations in use (the host's with none), which Calico's CNI plugin reads from
// /var/lib/calico/mtu when its own MTU is 0. Felix restarts when the host's MTU changes;
// palisade sizes again at each resync and changes devices, routes and the file in place.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

import { linkGet } from '../../native/rtnl.js';
import type { InterfaceTable } from './interfaces.js';

/** Felix's ipipMTUOverhead, vxlanMTUOverhead, vxlanV6MTUOverhead, wireguardMTUOverhead, wireguardV6MTUOverhead. */
export const MTU_OVERHEAD = { ipip: 20, vxlan: 50, vxlanV6: 70, wireguard: 60, wireguardV6: 80 } as const;
export type Encap = keyof typeof MTU_OVERHEAD;

/** Felix's fallback when no interface matches MTUIfacePattern. */
export const FALLBACK_HOST_MTU = 1460;

export interface HostMtu {
  mtu: number;
  /** The interfaces it was taken from (empty: none matched, the fallback). */
  from: string[];
}

/** Felix's findHostMTU over the interface table: the smallest MTU of the up interfaces the pattern matches. */
export async function findHostMtu(
  ifaces: InterfaceTable,
  pattern: RegExp | undefined,
  mtuOf: (name: string) => Promise<number | undefined> = async (n) => (await linkGet(n))?.mtu,
): Promise<HostMtu> {
  let mtu = 0;
  const from: string[] = [];
  for (const i of ifaces.byName.values()) {
    if (!pattern?.test(i.name) || !i.up) continue;
    const m = await mtuOf(i.name);
    if (!m) continue;
    if (mtu === 0 || m < mtu) mtu = m;
    from.push(i.name);
  }
  return mtu ? { mtu, from } : { mtu: FALLBACK_HOST_MTU, from };
}

/** Felix's ConfigureDefaultMTUs for one encapsulation: the configured MTU, else the host's less the overhead. */
export function encapMtu(configured: number, host: number, encap: Encap): number {
  return configured || Math.max(0, host - MTU_OVERHEAD[encap]);
}

/** Felix's determinePodMTU: the smallest MTU of the encapsulations in use, the host's with none. */
export function podMtu(inUse: ReadonlyArray<{ encap: Encap; configured: number }>, host: number): number {
  let mtu = 0;
  for (const { encap, configured } of inUse) {
    const m = encapMtu(configured, host, encap);
    if (m && (mtu === 0 || m < mtu)) mtu = m;
  }
  return mtu || host;
}

/**
 * Writes the MTU file as Felix's writeMTUFile (the number, no newline, 0644), atomically (a
 * reader never sees it half written), and only when it changes; true when written.
 */
export function writeMtuFile(path: string, mtu: number): boolean {
  const text = String(mtu);
  try {
    if (readFileSync(path, 'utf8') === text) return false;
  } catch {
    // Missing: written below.
  }
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.palisade-tmp`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, path);
  return true;
}
