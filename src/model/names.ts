// Label keys and prefixes Calico uses when it converts v3 resources for Felix.
export const LABEL_NAMESPACE = 'projectcalico.org/namespace';
export const LABEL_ORCHESTRATOR = 'projectcalico.org/orchestrator';
export const LABEL_SERVICE_ACCOUNT = 'projectcalico.org/serviceaccount';
/** Namespace labels as seen from rule namespaceSelectors. */
export const NAMESPACE_LABEL_PREFIX = 'pcns.';
/** Service-account labels as seen from serviceAccount selectors. */
export const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';
export const DEFAULT_TIER = 'default';
export const API_VERSION = 'projectcalico.org/v3';

/** The policy kinds Felix's PolicyID knows, with the short names its chain names use. */
export const POLICY_KIND_SHORT = {
  NetworkPolicy: 'np',
  GlobalNetworkPolicy: 'gnp',
  StagedNetworkPolicy: 'snp',
  StagedGlobalNetworkPolicy: 'sgnp',
  StagedKubernetesNetworkPolicy: 'sknp',
  KubernetesNetworkPolicy: 'knp',
  KubernetesClusterNetworkPolicy: 'kcnp',
} as const;
export type PolicyKind = keyof typeof POLICY_KIND_SHORT;

/** Felix's PolicyID.ID(): "<kind short name>/<namespace>/<name>", the namespace left out for global kinds. */
export function policyId(kind: PolicyKind, namespace: string, name: string): string {
  return namespace ? `${POLICY_KIND_SHORT[kind]}/${namespace}/${name}` : `${POLICY_KIND_SHORT[kind]}/${name}`;
}

/** Felix's tie-break between policies of equal order: "<name>/<namespace>/<kind>", compared as strings. */
export function policySortKey(kind: PolicyKind, namespace: string, name: string): string {
  return `${name}/${namespace}/${kind}`;
}
