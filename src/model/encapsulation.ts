// Which overlays are on, as Felix's EncapsulationCalculator decides them from the IP pools
// and FelixConfiguration: IPIP and IPv4 VXLAN from their setting, or when unset from a pool of
// that family using them; IPv6 VXLAN only from IPv6 pools (Felix has no setting for it).
// The rules (which sets and static rules exist) and the managers (which devices exist) both
// ask here, so they never disagree about an overlay.
export type PoolEncap = 'VXLAN' | 'IPIP' | 'NO_ENCAP' | 'NONE';

export interface Encapsulation {
  ipip: boolean;
  vxlan: boolean;
  vxlanV6: boolean;
}

export interface EncapSettings {
  /** VXLANEnabled: undefined means "when an IPv4 pool uses VXLAN". */
  VXLANEnabled?: boolean | undefined;
  /** IpInIpEnabled: undefined means "when an IPv4 pool uses IPIP". */
  IpInIpEnabled?: boolean | undefined;
}

/** `pools`: each pool's CIDR and its encapsulation. */
export function encapsulation(settings: EncapSettings, pools: Iterable<[string, PoolEncap]>): Encapsulation {
  let ipip4 = false;
  let vxlan4 = false;
  let vxlan6 = false;
  for (const [cidr, type] of pools) {
    const v6 = cidr.includes(':');
    if (type === 'IPIP' && !v6) ipip4 = true;
    if (type === 'VXLAN') {
      if (v6) vxlan6 = true;
      else vxlan4 = true;
    }
  }
  return { ipip: settings.IpInIpEnabled ?? ipip4, vxlan: settings.VXLANEnabled ?? vxlan4, vxlanV6: vxlan6 };
}
