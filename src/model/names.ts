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
  // The common case (no escaped dash), natively; a leading dash is part of the first part.
  if (!name.includes('--') && name.charCodeAt(0) !== 45 /* - */) {
    const parts = name.split('-');
    return parts.length === count && parts.every((p) => p !== '') ? parts : undefined;
  }
  // Pod names are full of dashes, so this is the common case too: the text between dashes
  // is sliced, not copied a character at a time. The first character is never a
  // separator (as upstream).
  // The array is made at its size: grown by push it was a tenth of a snapshot's garbage.
  const parts = new Array<string>(count);
  let n = 0;
  let escaped = ''; // the current part up to `from`, when it has an escaped dash
  let from = 0;
  for (let i = name.indexOf('-', 1); i !== -1; i = name.indexOf('-', from)) {
    if (name.charCodeAt(i + 1) === 45 /* - */) {
      escaped += name.slice(from, i + 1);
      from = i + 2;
      continue;
    }
    if (n === count - 1) return undefined;
    parts[n++] = partOf(escaped, name.slice(from, i));
    escaped = '';
    from = i + 1;
  }
  parts[n++] = partOf(escaped, name.slice(from));
  return n === count && parts.every((p) => p !== '') ? parts : undefined;
}

// A flat string (a part joined with `+` would stay a rope, and be flattened by every lookup).
function partOf(escaped: string, rest: string): string {
  return escaped ? [escaped, rest].join('') : rest;
}
