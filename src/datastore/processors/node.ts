// Felix's node processor: a Node becomes this host's tunnel addresses as host config,
// its v3 resource (host IPs, labels) and its WireGuard record. Every key is sent on each
// update, unset ones as deletions, so nothing stale survives an edit.
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
      { key: { type: 'Wireguard', nodeName: hostname }, value: undefined },
    ];
  },
};
