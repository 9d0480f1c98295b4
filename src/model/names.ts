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

const KIND_OF_SHORT = new Map<string, PolicyKind>(
  Object.entries(POLICY_KIND_SHORT).map(([kind, short]) => [short, kind as PolicyKind]),
);
const NAMESPACED_SHORT = new Set(['np', 'snp', 'sknp', 'knp']);

/** A policy ID's parts ("np/prod/allow" -> NetworkPolicy, prod, allow); the kind is the short name if unknown. */
export function policyIdParts(id: string): { kind: string; namespace: string; name: string } {
  const slash = id.indexOf('/');
  const short = id.slice(0, slash);
  let name = id.slice(slash + 1);
  let namespace = '';
  if (NAMESPACED_SHORT.has(short)) {
    const s = name.indexOf('/');
    namespace = name.slice(0, s);
    name = name.slice(s + 1);
  }
  return { kind: KIND_OF_SHORT.get(short) ?? short, namespace, name };
}

/**
 * The v1 name Calico before 3.32 gave a policy ("<namespace>/" then its name with the kind's
 * prefix, a Calico policy's name with its tier's: libcalico-go's TieredPolicyName puts
 * "default." before a name without a dot), from its ID.
 */
export function legacyV1Name(id: string): string {
  const { kind, namespace, name } = policyIdParts(id);
  return legacyV1NameOf(kind, namespace, name);
}

/** The same from a policy's kind, namespace ("" for global kinds) and name. */
export function legacyV1NameOf(kind: string, namespace: string, name: string): string {
  const ns = namespace ? `${namespace}/` : '';
  switch (kind) {
    case 'KubernetesNetworkPolicy':
      return `${ns}knp.default.${name}`;
    case 'StagedKubernetesNetworkPolicy':
      return `${ns}staged:knp.default.${name}`;
    case 'KubernetesClusterNetworkPolicy':
      return `kcnp.${name}`;
    case 'StagedNetworkPolicy':
    case 'StagedGlobalNetworkPolicy':
      return `${ns}staged:${tieredName(name)}`;
    default:
      return `${ns}${tieredName(name)}`;
  }
}

const FORMATTED = ['knp.default.', 'kanp.adminnetworkpolicy.', 'kbanp.baselineadminnetworkpolicy.', 'ossg.'];

function tieredName(name: string): string {
  if (FORMATTED.some((p) => name.startsWith(p))) return name;
  return name.includes('.') ? name : `default.${name}`;
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
