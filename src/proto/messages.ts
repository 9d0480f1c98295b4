// Dataplane messages: the calc graph's output, named and shaped after Felix's
// felixbackend.proto (fields in camelCase). Each message carries its proto name in `type`.

export type IPSetType = 'IP' | 'IP_AND_PORT' | 'NET';

export interface PortRange {
  first: number;
  last: number;
}

/** proto Protocol: a number or a (lower-case) name. */
export type Protocol = { number: number } | { name: string };

export interface Rule {
  action: string;
  ipVersion?: 4 | 6;
  protocol?: Protocol;
  srcNet: string[];
  srcPorts: PortRange[];
  srcNamedPortIpSetIds: string[];
  srcIpSetIds: string[];
  dstNet: string[];
  dstPorts: PortRange[];
  dstNamedPortIpSetIds: string[];
  dstIpSetIds: string[];
  dstIpPortSetIds: string[];
  icmpType?: number;
  icmpCode?: number;
  notProtocol?: Protocol;
  notSrcNet: string[];
  notSrcPorts: PortRange[];
  notSrcNamedPortIpSetIds: string[];
  notSrcIpSetIds: string[];
  notDstNet: string[];
  notDstPorts: PortRange[];
  notDstNamedPortIpSetIds: string[];
  notDstIpSetIds: string[];
  notIcmpType?: number;
  notIcmpCode?: number;
  annotations?: Record<string, string>;
}

export interface PolicyID {
  tier: string;
  name: string;
}

export interface Policy {
  namespace: string;
  inboundRules: Rule[];
  outboundRules: Rule[];
  untracked: boolean;
  preDnat: boolean;
  originalSelector: string;
}

export interface ProfileID {
  name: string;
}

export interface Profile {
  inboundRules: Rule[];
  outboundRules: Rule[];
}

export interface TierInfo {
  name: string;
  ingressPolicies: string[];
  egressPolicies: string[];
  defaultAction: string;
}

export interface NatInfo {
  extIp: string;
  intIp: string;
}

export interface WorkloadEndpointID {
  orchestratorId: string;
  workloadId: string;
  endpointId: string;
}

export interface WorkloadEndpoint {
  state: string;
  name: string;
  mac: string;
  profileIds: string[];
  ipv4Nets: string[];
  ipv6Nets: string[];
  tiers: TierInfo[];
  ipv4Nat: NatInfo[];
  ipv6Nat: NatInfo[];
  allowSpoofedSourcePrefixes: string[];
}

export interface HostEndpointID {
  endpointId: string;
}

export interface HostEndpoint {
  name: string;
  profileIds: string[];
  tiers: TierInfo[];
  untrackedTiers: TierInfo[];
  preDnatTiers: TierInfo[];
  forwardTiers: TierInfo[];
  expectedIpv4Addrs: string[];
  expectedIpv6Addrs: string[];
}

export interface IPAMPool {
  cidr: string;
  masquerade: boolean;
  /** The pool's allowedUses (Workload, Tunnel, LoadBalancer); empty: Calico's default. */
  allowedUses: string[];
}

/** Felix's RouteType bits (felixbackend.proto). */
export const RouteType = {
  REMOTE_WORKLOAD: 1,
  REMOTE_HOST: 2,
  LOCAL_WORKLOAD: 4,
  LOCAL_HOST: 8,
  REMOTE_TUNNEL: 16,
  LOCAL_TUNNEL: 32,
} as const;
export type IPPoolType = 'NONE' | 'NO_ENCAP' | 'VXLAN' | 'IPIP';

/** A route Felix's L3RouteResolver sends (RouteUpdate): what `dst` is and where it lives. */
export interface RouteUpdate {
  /** RouteType bits. */
  types: number;
  ipPoolType: IPPoolType;
  dst: string;
  dstNodeName: string;
  dstNodeIp: string;
  sameSubnet: boolean;
  natOutgoing: boolean;
  localWorkload: boolean;
  tunnelType?: { ipip: boolean; vxlan: boolean; wireguard: boolean };
  borrowed: boolean;
}

/** A node's WireGuard record (libcalico-go's model.Wireguard): its device addresses and public keys. */
export interface WireguardInfo {
  interfaceIPv4Addr?: string;
  publicKey?: string;
  interfaceIPv6Addr?: string;
  publicKeyV6?: string;
}

/** A node's VXLAN tunnel endpoint (VXLANTunnelEndpointUpdate). */
export interface VXLANTunnelEndpoint {
  node: string;
  mac: string;
  ipv4Addr: string;
  parentDeviceIp: string;
  macV6: string;
  ipv6Addr: string;
  parentDeviceIpv6: string;
}

/**
 * The default BGPConfiguration's service CIDRs (GlobalBGPConfigUpdate): what
 * ServiceLoopPrevention blocks. Sent empty when that configuration goes.
 */
export interface GlobalBGPConfig {
  serviceClusterCidrs: string[];
  serviceExternalCidrs: string[];
  serviceLoadbalancerCidrs: string[];
}

export type ToDataplane =
  | { type: 'InSync' }
  | { type: 'ConfigUpdate'; config: Record<string, string> }
  | { type: 'IPSetUpdate'; id: string; members: string[]; ipsetType: IPSetType }
  | { type: 'IPSetDeltaUpdate'; id: string; addedMembers: string[]; removedMembers: string[] }
  | { type: 'IPSetRemove'; id: string }
  | { type: 'ActivePolicyUpdate'; id: PolicyID; policy: Policy }
  | { type: 'ActivePolicyRemove'; id: PolicyID }
  | { type: 'ActiveProfileUpdate'; id: ProfileID; profile: Profile }
  | { type: 'ActiveProfileRemove'; id: ProfileID }
  | { type: 'WorkloadEndpointUpdate'; id: WorkloadEndpointID; endpoint: WorkloadEndpoint }
  | { type: 'WorkloadEndpointRemove'; id: WorkloadEndpointID }
  | { type: 'HostEndpointUpdate'; id: HostEndpointID; endpoint: HostEndpoint }
  | { type: 'HostEndpointRemove'; id: HostEndpointID }
  | { type: 'IPAMPoolUpdate'; id: string; pool: IPAMPool }
  | { type: 'IPAMPoolRemove'; id: string }
  | { type: 'HostMetadataUpdate'; hostname: string; ipv4Addr: string }
  | { type: 'HostMetadataRemove'; hostname: string }
  | { type: 'HostMetadataV6Update'; hostname: string; ipv6Addr: string }
  | { type: 'HostMetadataV6Remove'; hostname: string }
  | { type: 'WireguardEndpointUpdate'; hostname: string; publicKey: string; interfaceIpv4Addr: string }
  | { type: 'WireguardEndpointRemove'; hostname: string }
  | { type: 'WireguardEndpointV6Update'; hostname: string; publicKeyV6: string; interfaceIpv6Addr: string }
  | { type: 'WireguardEndpointV6Remove'; hostname: string }
  | { type: 'RouteUpdate'; route: RouteUpdate }
  | { type: 'RouteRemove'; dst: string }
  | { type: 'VXLANTunnelEndpointUpdate'; vtep: VXLANTunnelEndpoint }
  | { type: 'VXLANTunnelEndpointRemove'; node: string }
  | { type: 'GlobalBGPConfigUpdate'; config: GlobalBGPConfig };

export type MessageType = ToDataplane['type'];
