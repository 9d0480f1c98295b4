// What the VXLAN and IPIP managers do alike to their tunnel device: find the underlay
// interface that holds this node's address, size the tunnel's MTU from it, and bring the
// device up with exactly one IPv4 address of ours.
import { addrChange, addrDump, type Link, linkGet, linkSet } from '../../native/rtnl.js';
import type { IfaceState, InterfaceTable } from './interfaces.js';

/** The interface holding `address` (the underlay the tunnel leaves from), if any. */
export function interfaceHolding(ifaces: InterfaceTable, address: string): IfaceState | undefined {
  return [...ifaces.byName.values()].find((i) => i.addrs.some((a) => a.split('/')[0] === address));
}

/** The tunnel's MTU: the configured one, else the underlay's less the encapsulation overhead. */
export async function tunnelMtu(configured: number, parentName: string, overhead: number): Promise<number> {
  return configured || Math.max(0, ((await linkGet(parentName))?.mtu ?? 1500) - overhead);
}

/** Up, at `mtu`, with `addr` (e.g. "10.65.0.1/32"; "" for none) as its only IPv4 address. */
export async function settleDevice(link: Link, mtu: number, addr: string): Promise<void> {
  if (link.mtu !== mtu || !link.up) await linkSet(link.index, mtu === link.mtu ? 0 : mtu, true);
  const addrs = (await addrDump(link.index)).filter((a) => !a.includes(':'));
  for (const a of addrs) if (a !== addr) await addrChange(false, link.index, a);
  if (addr && !addrs.includes(addr)) await addrChange(true, link.index, addr);
}
