// A desired state that exercises every rule shape the renderers produce: workloads in
// both families with floating IPs and spoofed-source exemptions, policies with every
// action (Log rate-limited), ICMP and negated ICMP, port ranges, named ports, nets and
// negated nets, selectors, untracked and pre-DNAT host policy, NAT-outgoing pools (every
// outgoing-NAT option), service CIDRs ServiceLoopPrevention rejects, a policy group, the
// overlays' static rules.
import { defaultConfig } from '../../src/config/params.js';
import { gnp, gns, np, profile, tier, wep } from './calc-fixtures.js';
import { stateOf } from './render-fixtures.js';

const V3 = 'projectcalico.org/v3';

export const richConfig = () => ({
  ...defaultConfig(),
  Ipv6Support: true,
  FloatingIPs: 'Enabled' as const,
  WorkloadSourceSpoofing: 'Any' as const,
  LogActionRateLimit: '10/minute',
  LogActionRateLimitBurst: 7,
  IptablesFilterDenyAction: 'REJECT' as const,
  // The overlays' static rules (VXLAN on both families' pools, WireGuard), with this node's
  // tunnel addresses: the tunnel-source MASQ rules (addrtype --limit-iface-out) among them.
  IPv4VXLANTunnelAddr: '10.65.0.1',
  IPv6VXLANTunnelAddr: 'fd00:65::1',
  WireguardEnabled: true,
  WireguardEnabledV6: true,
  // Outgoing NAT with everything Felix has (and palisade's address range): IPv4 source-NATs
  // to a range of addresses and ports, IPv6 masquerades to the ports.
  NATOutgoingAddress: '10.65.200.1-10.65.200.4',
  NATPortRange: { first: 32768, last: 65000 },
  NATOutgoingExclusions: 'IPPoolsAndHostIPs' as const,
  IptablesNATOutgoingInterfaceFilter: 'eth+',
  ServiceLoopPrevention: 'Reject' as const,
});

/** Every kind and rule feature the renderers handle, as v3 resources. */
export function richResources() {
  return [
    tier('t1', 10),
    profile('kns.prod', { team: 'a' }),
    wep(
      'a',
      'node1',
      '10.65.0.2',
      { app: 'web' },
      {
        ipNetworks: ['10.65.0.2/32', 'fd00:65::2/128'],
        ipNATs: [{ internalIP: '10.65.0.2', externalIP: '192.0.2.9' }],
        allowSpoofedSourcePrefixes: ['198.51.100.0/24'],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    ),
    wep('b', 'node1', '10.65.0.3', { app: 'db' }, { ipNetworks: ['10.65.0.3/32', 'fd00:65::3/128'] }),
    wep('r', 'node2', '10.65.1.4', { app: 'web' }),
    gns('feed', ['192.0.2.0/24', '2001:db8::/32'], { feed: 'x' }),
    np('web', {
      selector: "app == 'web'",
      ingress: [
        { action: 'Log', protocol: 'TCP', source: { selector: "app == 'db'" } },
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { nets: ['10.0.0.0/8', '172.16.0.0/12'], notNets: ['10.1.0.0/16'] },
          destination: { ports: [80, '8000:8100', 'http'] },
        },
        { action: 'Deny', protocol: 'ICMP', icmp: { type: 8, code: 0 } },
        { action: 'Allow', protocol: 'ICMP', notICMP: { type: 3 } },
        { action: 'Deny', protocol: 'UDP', notProtocol: undefined, destination: { notPorts: [53] } },
        { action: 'Pass', source: { selector: "feed == 'x'" } },
      ],
      egress: [
        { action: 'Allow', destination: { selector: "app == 'db'", ports: ['http'] }, protocol: 'TCP' },
        { action: 'Deny', notProtocol: 'TCP' },
      ],
    }),
    // Same selector as web, next in order: the two are Felix's policy group (cali-gi-).
    np('web2', {
      selector: "app == 'web'",
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [81] } }],
    }),
    gnp('t1.g', {
      tier: 't1',
      order: 1,
      selector: 'all()',
      ingress: [{ action: 'Pass' }],
      egress: [{ action: 'Pass' }],
    }),
    gnp('untracked', {
      selector: 'has(host)',
      doNotTrack: true,
      applyOnForward: true,
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [22] } }],
    }),
    gnp('prednat', {
      selector: 'has(host)',
      preDNAT: true,
      applyOnForward: true,
      ingress: [{ action: 'Deny', source: { nets: ['203.0.113.0/24'] } }],
    }),
    gnp('host', {
      selector: 'has(host)',
      ingress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [4789] } }],
      egress: [{ action: 'Allow' }],
    }),
    {
      apiVersion: V3,
      kind: 'HostEndpoint',
      metadata: { name: 'node1-eth0', labels: { host: 'true' } },
      spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: ['192.0.2.10'] },
    },
    {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'p4' },
      spec: { cidr: '10.65.0.0/16', natOutgoing: true, vxlanMode: 'Always' },
    },
    {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'p6' },
      spec: { cidr: 'fd00:65::/48', natOutgoing: true, vxlanMode: 'Always' },
    },
  ];
}

/** The default BGPConfiguration's service CIDRs (cali-cidr-block), both families. */
const serviceCidrs = {
  apiVersion: V3,
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec: {
    serviceClusterIPs: [{ cidr: '10.96.0.0/12' }, { cidr: 'fd00:96::/112' }],
    serviceExternalIPs: [{ cidr: '192.0.2.0/24' }],
    serviceLoadBalancerIPs: [{ cidr: '198.51.100.0/24' }],
  },
};

export function richState() {
  return stateOf(...richResources(), serviceCidrs);
}
