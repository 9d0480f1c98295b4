// Kubernetes ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) -> Calico policy, as
// libcalico-go's K8sClusterNetworkPolicyToCalico: kind KubernetesClusterNetworkPolicy (a
// GlobalNetworkPolicy's spec), tier kube-admin (Admin) or kube-baseline (Baseline), order =
// priority. The subject becomes a namespace selector plus the k8s orchestrator pod
// selector. Each rule gives one rule per (protocol, peer), protocols sorted, numeric ports
// merged (SimplifyPorts); Accept is Allow, Deny and Pass stay. Types follow the rules
// present (the tiers pass by default, so a direction without rules needs no policy).
// A rule that cannot be converted (an unknown action, a peer of a kind Calico does not
// convert: nodes, domainNames) fails closed as the API asks: dropped if it accepts,
// replaced by a deny-all if it denies or passes. A bad tier or subject withdraws the policy.
import type { ClusterNetworkPolicy, CnpPort, CnpProtocol, CnpRule } from '../k8s-types.js';
import { ADMIN_RULE_NAME_ANNOTATION, adminRules, convertAdminRules, withRules } from './admin-rules.js';
import { addProtocolPorts, k8sSelectorToCalico, type Port, SelectorError } from './network-policy.js';

export const KUBE_ADMIN_TIER = 'kube-admin';
export const KUBE_BASELINE_TIER = 'kube-baseline';
/** The rule annotation carrying a CNP rule's name (upstream's K8sCNPRuleNameLabel). */
export const CNP_RULE_NAME_ANNOTATION = ADMIN_RULE_NAME_ANNOTATION;

const TIERS: Record<string, string> = { Admin: KUBE_ADMIN_TIER, Baseline: KUBE_BASELINE_TIER };
const ACTIONS: Record<string, string> = { Accept: 'Allow', Deny: 'Deny', Pass: 'Pass' };

function portOf(p: CnpPort | undefined): Port | undefined {
  if (!p) return undefined;
  if (p.number) {
    if (!Number.isInteger(p.number) || p.number < 1 || p.number > 65535) throw new Error(`invalid port ${p.number}`);
    return p.number;
  }
  if (p.range) {
    const { start = 0, end = 0 } = p.range;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 1 || end > 65535 || start > end)
      throw new Error(`invalid port range ${start}:${end}`);
    return `${start}:${end}`;
  }
  return undefined;
}

/**
 * One protocol entry: its protocol ("" for a named port) and port (undefined: all its ports), or undefined for an empty
 * entry.
 */
function protocolOf(p: CnpProtocol): { protocol: string; port: Port | undefined } | undefined {
  for (const [field, protocol] of [
    ['tcp', 'TCP'],
    ['udp', 'UDP'],
    ['sctp', 'SCTP'],
  ] as const) {
    const entry = p[field];
    if (entry) return { protocol, port: portOf(entry.destinationPort) };
  }
  if (p.destinationNamedPort) return { protocol: '', port: p.destinationNamedPort };
  return undefined;
}

/** protocol -> ports (undefined: all ports); "" alone with undefined: any traffic. */
function protocolPorts(protocols: CnpProtocol[] | undefined): Map<string, Port[] | undefined> {
  const out = new Map<string, Port[] | undefined>();
  for (const p of protocols?.length ? protocols : [{}]) {
    const entry = protocolOf(p);
    if (!entry) return new Map([['', undefined]]);
    addProtocolPorts(out, entry.protocol, entry.port === undefined ? [] : [entry.port]);
  }
  return out;
}

function ruleToCalico(r: CnpRule, egress: boolean): Array<Record<string, unknown>> {
  const action = ACTIONS[r.action ?? ''];
  if (!action) throw new Error(`unsupported action "${r.action ?? ''}"`);
  return adminRules(action, r.name, protocolPorts(r.protocols), (egress ? r.to : r.from) ?? [], egress);
}

export interface ConvertedClusterPolicy {
  /** Undefined when the policy as a whole cannot stand (bad tier or subject): a deletion. */
  resource: Record<string, unknown> | undefined;
  problems: string[];
}

export function k8sClusterNetworkPolicyToCalico(cnp: ClusterNetworkPolicy): ConvertedClusterPolicy {
  const problems: string[] = [];
  const spec = cnp.spec ?? {};
  const tier = TIERS[spec.tier ?? ''];
  if (!tier)
    return {
      resource: undefined,
      problems: [`invalid tier "${spec.tier ?? ''}" (Admin or Baseline); the policy is not applied`],
    };
  let namespaceSelector: string;
  let selector: string;
  try {
    if (spec.subject?.namespaces) {
      namespaceSelector = k8sSelectorToCalico(spec.subject.namespaces, 'namespace');
      selector = k8sSelectorToCalico(undefined, 'pod');
    } else if (spec.subject?.pods) {
      namespaceSelector = k8sSelectorToCalico(spec.subject.pods.namespaceSelector ?? {}, 'namespace');
      selector = k8sSelectorToCalico(spec.subject.pods.podSelector ?? {}, 'pod');
    } else {
      return { resource: undefined, problems: ['no subject (namespaces or pods); the policy is not applied'] };
    }
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    return { resource: undefined, problems: [`subject: ${e.message}; the policy is not applied`] };
  }
  // Fail closed: a rule that would have denied or passed denies everything instead.
  const failsClosed = (r: CnpRule) => r.action === 'Deny' || r.action === 'Pass';
  const rules = (dir: 'ingress' | 'egress') =>
    convertAdminRules(spec[dir], dir, (r) => ruleToCalico(r, dir === 'egress'), failsClosed, problems);
  const out = withRules(
    { tier, order: spec.priority ?? 0, namespaceSelector, selector },
    rules('ingress'),
    rules('egress'),
  );
  const m = cnp.metadata ?? {};
  return {
    resource: {
      apiVersion: 'projectcalico.org/v3',
      kind: 'KubernetesClusterNetworkPolicy',
      metadata: { name: m.name ?? '', ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}) },
      spec: out,
    },
    problems,
  };
}
