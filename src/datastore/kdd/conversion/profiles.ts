// Namespaces and service accounts as Calico's profiles: `kns.<namespace>` (allow all both
// ways; the namespace's labels as `pcns.` labels to apply, plus its name) and
// `ksa.<namespace>.<account>` (no rules; `pcsa.` labels, plus its name).
import { NAMESPACE_LABEL_PREFIX, SERVICE_ACCOUNT_LABEL_PREFIX } from '../../../model/names.js';
import type { Namespace, ServiceAccount } from '../k8s-types.js';
import { NAME_LABEL, NAMESPACE_PROFILE_PREFIX, serviceAccountProfileName } from './names.js';

function prefixed(labels: Record<string, string> | undefined, prefix: string, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {})) out[`${prefix}${k}`] = v;
  out[`${prefix}${NAME_LABEL}`] = name;
  return out;
}

export function namespaceToProfile(ns: Namespace): Record<string, unknown> {
  const name = ns.metadata?.name ?? '';
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: {
      name: `${NAMESPACE_PROFILE_PREFIX}${name}`,
      ...(ns.metadata?.resourceVersion ? { resourceVersion: ns.metadata.resourceVersion } : {}),
    },
    spec: {
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      labelsToApply: prefixed(ns.metadata?.labels, NAMESPACE_LABEL_PREFIX, name),
    },
  };
}

export function serviceAccountToProfile(sa: ServiceAccount): Record<string, unknown> {
  const name = sa.metadata?.name ?? '';
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: {
      name: serviceAccountProfileName(name, sa.metadata?.namespace ?? ''),
      ...(sa.metadata?.resourceVersion ? { resourceVersion: sa.metadata.resourceVersion } : {}),
    },
    spec: { labelsToApply: prefixed(sa.metadata?.labels, SERVICE_ACCOUNT_LABEL_PREFIX, name) },
  };
}
