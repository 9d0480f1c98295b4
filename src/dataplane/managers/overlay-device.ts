// What the VXLAN and IPIP managers do alike to their tunnel device: find the underlay
// interface that holds this node's address, size the tunnel's MTU (the host's, as Felix), and bring the
// device up with exactly one address of ours in its family (for IPv6 that leaves no other,
// not even the kernel's link-local one: Felix's ensureAddressOnLink removes every other).
import { parseIp } from '../../model/net.js';
import { addrChange, addrDump, type Link, linkSet } from '../../native/rtnl.js';
import type { IfaceState, InterfaceTable } from './interfaces.js';
import { type Encap, encapMtu, findHostMtu } from './mtu.js';

/** The interface holding `address` (the underlay the tunnel leaves from), if any. */
export function interfaceHolding(ifaces: InterfaceTable, address: string): IfaceState | undefined {
  const same = (a: string) => a === address || (a.includes(':') && canonical6(a) === canonical6(address));
  return [...ifaces.byName.values()].find((i) => i.addrs.some((a) => same(a.split('/')[0] as string)));
}

/** An IPv6 address in one spelling (the kernel's and a resource's may differ: "fd00:0::1" is "fd00::1"). */
const canonical6 = (a: string) => parseIp(a)?.address ?? a;

/**
 * The tunnel's MTU, as Felix's ConfigureDefaultMTUs: the configured one, else the host's
 * (the smallest MTUIfacePattern matches, mtu.ts) less the encapsulation's overhead.
 */
export async function tunnelMtu(
  configured: number,
  ifaces: InterfaceTable,
  pattern: RegExp | undefined,
  encap: Encap,
): Promise<number> {
  return configured || encapMtu(0, (await findHostMtu(ifaces, pattern)).mtu, encap);
}

/** Up, at `mtu`, with `addr` (e.g. "10.65.0.1/32"; "" for none) as its only address of `family`. */
export async function settleDevice(link: Link, mtu: number, addr: string, family: 4 | 6 = 4): Promise<void> {
  if (link.mtu !== mtu || !link.up) await linkSet(link.index, mtu === link.mtu ? 0 : mtu, true);
  const addrs = (await addrDump(link.index)).filter((a) => a.includes(':') === (family === 6));
  for (const a of addrs) if (a !== addr) await addrChange(false, link.index, a);
  if (addr && !addrs.includes(addr)) await addrChange(true, link.index, addr);
}
