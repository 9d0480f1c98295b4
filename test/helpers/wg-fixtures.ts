// What the WireGuard tests and bench build alike: a RouteUpdate as the calc graph sends it,
// and a WireGuard manager's configuration with Felix's defaults.
import type { WireguardConfig } from '../../src/dataplane/managers/wireguard-manager.js';
import type { ToDataplane } from '../../src/proto/messages.js';

export const routeUpdate = (dst: string, node: string, types: number): ToDataplane => ({
  type: 'RouteUpdate',
  route: {
    types,
    ipPoolType: 'VXLAN',
    dst,
    dstNodeName: node,
    dstNodeIp: '',
    sameSubnet: false,
    natOutgoing: false,
    localWorkload: false,
    borrowed: false,
  },
});

/** IPv4, wireguard.cali on 51820, table 1, rule 99, mark 0x200000, protocol 80; `over` replaces any of it. */
export function wireguardConfig(over: Partial<WireguardConfig> = {}): WireguardConfig {
  return {
    family: 4,
    hostname: 'node1',
    enabled: true,
    device: 'wireguard.cali',
    listenPort: 51820,
    mtu: 1420,
    table: 1,
    rulePriority: 99,
    fwmark: 0x200000,
    hostEncryption: false,
    keepalive: 0,
    threading: false,
    required: false,
    routeProtocol: 80,
    ...over,
  };
}
