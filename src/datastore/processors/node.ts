// Felix's node processor: a Node becomes this host's tunnel addresses as host config,
// its v3 resource (host IPs, labels) and its WireGuard record. Every key is sent on each
// update, unset ones as deletions, so nothing stale survives an edit.
import { parseIp } from '../../model/net.js';
import type { ResourceOf } from '../../model/schemas.js';
import type { V1Update } from '../../model/v1/values.js';
import type { UpdateProcessor } from './types.js';

export const nodeProcessor: UpdateProcessor<'Node'> = {
  process(ref, r) {
    const hostname = ref.name;
    const config = (name: string, value: string | undefined): V1Update => ({
      key: { type: 'HostConfig', hostname, name },
      value: value || undefined,
    });
    return [
      config('IpInIpTunnelAddr', r?.spec.bgp?.ipv4IPIPTunnelAddr),
      config('IPv4VXLANTunnelAddr', r?.spec.ipv4VXLANTunnelAddr),
      config('VXLANTunnelMACAddr', r?.spec.vxlanTunnelMACAddr),
      config('IPv6VXLANTunnelAddr', r?.spec.ipv6VXLANTunnelAddr),
      config('VXLANTunnelMACAddrV6', r?.spec.vxlanTunnelMACAddrV6),
      { key: { type: 'Resource', kind: 'Node', name: hostname }, value: r },
      { key: { type: 'Wireguard', nodeName: hostname }, value: wireguardOf(r) },
    ];
  },
};

/**
 * As libcalico-go's felix node processor: the node's WireGuard addresses (spec) and public
 * keys (status), when any is set; an address that is not an IP is left out. A key is
 * passed on as written (Felix's processor does the same): the dataplane checks it.
 */
function wireguardOf(r: ResourceOf<'Node'> | undefined): Record<string, string> | undefined {
  if (!r) return undefined;
  const addr = (text: string | undefined, v: 4 | 6) => {
    const p = text ? parseIp(text) : undefined;
    return p?.version === v ? p.address : undefined;
  };
  const wg = {
    interfaceIPv4Addr: addr(r.spec.wireguard?.interfaceIPv4Address, 4),
    publicKey: r.status?.wireguardPublicKey || undefined,
    interfaceIPv6Addr: addr(r.spec.wireguard?.interfaceIPv6Address, 6),
    publicKeyV6: r.status?.wireguardPublicKeyV6 || undefined,
  };
  const set = Object.entries(wg).filter((e): e is [string, string] => e[1] !== undefined);
  return set.length ? Object.fromEntries(set) : undefined;
}
