// The internal ("v1") model the calc graph consumes: what Calico's syncer update
// processors hand Felix after converting v3 resources. Field names follow Felix's
// model.Rule / model.Policy / model.WorkloadEndpoint.

const EMPTY: readonly never[] = Object.freeze([]);

/**
 * One shared empty list. A rule has a dozen lists, nearly all empty, and a node holds
 * tens of thousands of rules, so empty ones are not allocated each time; the array is
 * frozen, so code that tried to push to it would throw instead of corrupting others.
 */
export function none<T>(): T[] {
  return EMPTY as unknown as T[];
}

/** `list`, or the shared empty list when it is empty. */
export function orNone<T>(list: T[]): T[] {
  return list.length ? list : none();
}

export type PortSpec = { first: number; last: number } | { name: string };

export interface InternalRule {
  action: 'allow' | 'deny' | 'log' | 'next-tier';
  ipVersion?: 4 | 6;
  /** Lower-case name ("tcp", "icmpv6", "udplite") or a number, as Felix's v1 model has it. */
  protocol?: string | number;
  notProtocol?: string | number;
  icmpType?: number;
  icmpCode?: number;
  notIcmpType?: number;
  notIcmpCode?: number;
  srcNets: string[];
  notSrcNets: string[];
  dstNets: string[];
  notDstNets: string[];
  /** Selector text after namespace / service-account scoping; "" for none. */
  srcSelector: string;
  notSrcSelector: string;
  dstSelector: string;
  notDstSelector: string;
  srcPorts: PortSpec[];
  notSrcPorts: PortSpec[];
  dstPorts: PortSpec[];
  notDstPorts: PortSpec[];
  srcService?: { name: string; namespace: string };
  dstService?: { name: string; namespace: string };
  annotations?: Record<string, string>;
}

export interface PolicyKey {
  tier: string;
  /**
   * Felix's PolicyID.ID() ("np/<namespace>/<name>", "gnp/<name>"): the policy's identity, and what its chains are named
   * after.
   */
  name: string;
  /** Felix's order tie-break ("<name>/<namespace>/<Kind>"). */
  sortKey: string;
}

export interface InternalPolicy {
  key: PolicyKey;
  /** "" for a GlobalNetworkPolicy. */
  namespace: string;
  order?: number;
  selector: string;
  inboundRules: InternalRule[];
  outboundRules: InternalRule[];
  types: Array<'ingress' | 'egress'>;
  doNotTrack: boolean;
  preDNAT: boolean;
  applyOnForward: boolean;
  /**
   * performanceHints AssumeNeededOnEveryNode: programmed on every node, matching endpoints or not (Felix's
   * force-programmed policy).
   */
  assumeNeededOnEveryNode?: boolean;
}

export interface InternalTier {
  name: string;
  order?: number;
  defaultAction: 'Deny' | 'Pass';
}

/** A profile's rules (Felix's ProfileRulesKey); its labels travel separately (ProfileLabelsKey). */
export interface InternalProfileRules {
  inboundRules: InternalRule[];
  outboundRules: InternalRule[];
}

export interface InternalProfile extends InternalProfileRules {
  name: string;
  labels: Record<string, string>;
}

export interface EndpointPort {
  name: string;
  protocol: string | number;
  port: number;
}

export interface WorkloadEndpointKey {
  hostname: string;
  orchestratorId: string;
  workloadId: string;
  endpointId: string;
}

export interface InternalWorkloadEndpoint {
  key: WorkloadEndpointKey;
  state: 'active';
  /** Interface name. */
  name: string;
  mac?: string;
  profileIds: string[];
  ipv4Nets: string[];
  ipv6Nets: string[];
  ipv4Nat: Array<{ intIp: string; extIp: string }>;
  ipv6Nat: Array<{ intIp: string; extIp: string }>;
  ipv4Gateway?: string;
  ipv6Gateway?: string;
  labels: Record<string, string>;
  ports: EndpointPort[];
  allowSpoofedSourcePrefixes: string[];
}

export interface InternalHostEndpoint {
  key: { hostname: string; endpointId: string };
  name: string;
  expectedIpv4Addrs: string[];
  expectedIpv6Addrs: string[];
  labels: Record<string, string>;
  profileIds: string[];
  ports: EndpointPort[];
}

export interface InternalNetworkSet {
  /** "namespace/name" for a NetworkSet, the name for a GlobalNetworkSet. */
  name: string;
  nets: string[];
  labels: Record<string, string>;
}

export interface InternalIpPool {
  cidr: string;
  masquerade: boolean;
  ipipMode: 'Never' | 'Always' | 'CrossSubnet';
  vxlanMode: 'Never' | 'Always' | 'CrossSubnet';
  disabled: boolean;
  /** spec.allowedUses; empty when the pool names none. */
  allowedUses: string[];
}
