// The parts of Kubernetes objects the Kubernetes datastore reads, as the API serves them
// (JSON). Everything is optional: an object from the API is checked as it is converted.
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  generateName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ContainerPort {
  name?: string;
  containerPort?: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: string;
}

export interface Pod {
  metadata?: ObjectMeta;
  spec?: {
    nodeName?: string;
    hostNetwork?: boolean;
    serviceAccountName?: string;
    containers?: Array<{ ports?: ContainerPort[] }>;
    initContainers?: Array<{ ports?: ContainerPort[] }>;
  };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip?: string }> };
}

export interface Namespace {
  metadata?: ObjectMeta;
}

export interface ServiceAccount {
  metadata?: ObjectMeta;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

export interface NetworkPolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

export interface NetworkPolicy {
  metadata?: ObjectMeta;
  spec?: {
    podSelector?: LabelSelector;
    ingress?: Array<{ from?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }>;
    egress?: Array<{ to?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }>;
    policyTypes?: string[];
  };
}

export interface Node {
  metadata?: ObjectMeta;
  spec?: { podCIDR?: string; podCIDRs?: string[] };
  status?: { addresses?: Array<{ type?: string; address?: string }> };
}

/** policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicy (sigs.k8s.io/network-policy-api). */
export interface NamespacedPod {
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
}

export interface CnpPort {
  number?: number;
  range?: { start?: number; end?: number };
}

export interface CnpProtocol {
  tcp?: { destinationPort?: CnpPort };
  udp?: { destinationPort?: CnpPort };
  sctp?: { destinationPort?: CnpPort };
  destinationNamedPort?: string;
}

export interface CnpPeer {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
  /** Egress only. */
  networks?: string[];
  /** Egress only; Calico does not convert these (the rule fails closed). */
  nodes?: LabelSelector;
  domainNames?: string[];
}

export interface CnpRule {
  name?: string;
  action?: string;
  from?: CnpPeer[];
  to?: CnpPeer[];
  protocols?: CnpProtocol[];
}

export interface ClusterNetworkPolicy {
  metadata?: ObjectMeta;
  spec?: {
    tier?: string;
    priority?: number;
    subject?: { namespaces?: LabelSelector; pods?: NamespacedPod };
    ingress?: CnpRule[];
    egress?: CnpRule[];
  };
}

/** policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy (read by Calico 3.29-3.31). */
export interface AnpPort {
  portNumber?: { protocol?: string; port?: number };
  namedPort?: string;
  portRange?: { protocol?: string; start?: number; end?: number };
}

export interface AnpPeer {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
  /** Egress only. */
  networks?: string[];
  /** Egress only; Calico 3.31 does not convert these (the rule fails closed). */
  nodes?: LabelSelector;
}

export interface AnpRule {
  name?: string;
  action?: string;
  from?: AnpPeer[];
  to?: AnpPeer[];
  ports?: AnpPort[];
}

export interface AdminNetworkPolicy {
  metadata?: ObjectMeta;
  spec?: {
    /** AdminNetworkPolicy only (a BaselineAdminNetworkPolicy has none). */
    priority?: number;
    subject?: { namespaces?: LabelSelector; pods?: NamespacedPod };
    ingress?: AnpRule[];
    egress?: AnpRule[];
  };
}
