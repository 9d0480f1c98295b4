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

/**
 * Splits a WorkloadEndpoint name into its dash-separated parts ("--" is an escaped "-"), as
 * Calico's names.ExtractDashSeparatedParms; undefined unless there are exactly `count`.
 */
export function dashSeparatedParts(name: string, count: number): string[] | undefined {
  if (name.length < 2 * count - 1) return undefined;
  if (!name.includes('--')) {
    // The common case (no escaped dash), natively.
    const parts = name.split('-');
    return parts.length === count && parts.every((p) => p !== '') ? parts : undefined;
  }
  const parts: string[] = [];
  // The first character is never a separator (as upstream).
  let cur = name[0] as string;
  for (let i = 1; i < name.length; i++) {
    const c = name[i] as string;
    if (c !== '-') cur += c;
    else if (name[i + 1] === '-') {
      cur += '-';
      i++;
    } else {
      parts.push(cur);
      cur = '';
    }
  }
  parts.push(cur);
  return parts.length === count && parts.every((p) => p !== '') ? parts : undefined;
}
