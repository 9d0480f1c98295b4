// Kubernetes AdminNetworkPolicy and BaselineAdminNetworkPolicy (policy.networking.k8s.io/
// v1alpha1) -> Calico GlobalNetworkPolicy, as libcalico-go v3.31.7's
// K8sAdminNetworkPolicyToCalico / K8sBaselineAdminNetworkPolicyToCalico convert them (Calico
// 3.29-3.31 read them; 3.32 reads ClusterNetworkPolicy instead, cluster-network-policy.ts):
// - named "kanp.adminnetworkpolicy.<name>" in tier adminnetworkpolicy, order = priority;
//   "kbanp.baselineadminnetworkpolicy.<name>" in tier baselineadminnetworkpolicy, order 1000;
// - the subject becomes a namespace selector plus the k8s orchestrator pod selector;
// - each rule gives one rule per (protocol, peer), protocols sorted, numeric ports merged;
//   a port entry with no number or range (a named port, which 3.31 does not convert)
//   makes the rule cover every protocol and port, as upstream's does;
// - Types follow the rules present (both tiers pass by default);
// - a rule that cannot be converted (an unknown action, a `nodes` peer, a bad CIDR or
//   range) fails closed as upstream: dropped if it allows, a deny-all if it denies or passes.
import type { AdminNetworkPolicy, AnpPort, AnpRule } from '../k8s-types.js';
import { adminRules, convertAdminRules, withRules } from './admin-rules.js';
import { addProtocolPorts, k8sSelectorToCalico, type Port, SelectorError } from './network-policy.js';

export const ANP_TIER = 'adminnetworkpolicy';
export const BANP_TIER = 'baselineadminnetworkpolicy';
export const ANP_PREFIX = 'kanp.adminnetworkpolicy.';
export const BANP_PREFIX = 'kbanp.baselineadminnetworkpolicy.';
/** Upstream's order for every BaselineAdminNetworkPolicy. */
const BANP_ORDER = 1000;

type Flavour = 'admin' | 'baseline';
const ACTIONS: Record<Flavour, readonly string[]> = { admin: ['Allow', 'Deny', 'Pass'], baseline: ['Allow', 'Deny'] };

/** One port entry: its protocol and port, or undefined when it names neither (all traffic). */
function portOf(p: AnpPort): { protocol: string; port: Port } | undefined {
  const protocol = (raw: string | undefined) => {
    const v = raw || 'TCP';
    if (!['TCP', 'UDP', 'SCTP'].includes(v)) throw new Error(`unsupported protocol "${v}"`);
    return v;
  };
  if (p.portNumber) {
    const n = p.portNumber.port ?? 0;
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`invalid port ${n}`);
    return { protocol: protocol(p.portNumber.protocol), port: n };
  }
  if (p.portRange) {
    const { start = 0, end = 0 } = p.portRange;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 1 || end > 65535)
      throw new Error(`invalid port range ${start}-${end}`);
    if (start > end) throw new Error(`minimum port number (${start}) is greater than maximum port number (${end})`);
    return { protocol: protocol(p.portRange.protocol), port: start === end ? start : `${start}:${end}` };
  }
  return undefined;
}

/** Upstream's unpackANPPorts: protocol -> ports (undefined: all of them); "" alone: any traffic. */
function protocolPorts(ports: AnpPort[] | undefined): Map<string, Port[] | undefined> {
  const out = new Map<string, Port[] | undefined>();
  for (const p of ports?.length ? ports : [{}]) {
    const entry = portOf(p);
    if (!entry) return new Map([['', undefined]]);
    addProtocolPorts(out, entry.protocol, [entry.port]);
  }
  return out;
}

function ruleToCalico(r: AnpRule, egress: boolean, flavour: Flavour): Array<Record<string, unknown>> {
  if (!ACTIONS[flavour].includes(r.action ?? ''))
    throw new Error(`unsupported admin network policy action "${r.action ?? ''}"`);
  return adminRules(r.action as string, r.name, protocolPorts(r.ports), (egress ? r.to : r.from) ?? [], egress);
}

export interface ConvertedAdminPolicy {
  /** Undefined when the policy as a whole cannot stand (no readable subject): a deletion. */
  resource: Record<string, unknown> | undefined;
  problems: string[];
}

function subjectSelectors(spec: NonNullable<AdminNetworkPolicy['spec']>): [string, string] | string {
  try {
    if (spec.subject?.namespaces)
      return [k8sSelectorToCalico(spec.subject.namespaces, 'namespace'), k8sSelectorToCalico(undefined, 'pod')];
    if (spec.subject?.pods)
      return [
        k8sSelectorToCalico(spec.subject.pods.namespaceSelector ?? {}, 'namespace'),
        k8sSelectorToCalico(spec.subject.pods.podSelector ?? {}, 'pod'),
      ];
    return 'no subject (namespaces or pods)';
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    return `subject: ${e.message}`;
  }
}

function adminToCalico(anp: AdminNetworkPolicy, flavour: Flavour): ConvertedAdminPolicy {
  const spec = anp.spec ?? {};
  const subject = subjectSelectors(spec);
  if (typeof subject === 'string') return { resource: undefined, problems: [`${subject}; the policy is not applied`] };
  const problems: string[] = [];
  const failsClosed = (r: AnpRule) => r.action === 'Deny' || (flavour === 'admin' && r.action === 'Pass');
  const rules = (dir: 'ingress' | 'egress') =>
    convertAdminRules(spec[dir], dir, (r) => ruleToCalico(r, dir === 'egress', flavour), failsClosed, problems);
  const [namespaceSelector, selector] = subject;
  const out = withRules(
    {
      tier: flavour === 'admin' ? ANP_TIER : BANP_TIER,
      order: flavour === 'admin' ? (spec.priority ?? 0) : BANP_ORDER,
      namespaceSelector,
      selector,
    },
    rules('ingress'),
    rules('egress'),
  );
  const m = anp.metadata ?? {};
  return {
    resource: {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: {
        name: `${flavour === 'admin' ? ANP_PREFIX : BANP_PREFIX}${m.name ?? ''}`,
        ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      },
      spec: out,
    },
    problems,
  };
}

export const k8sAdminNetworkPolicyToCalico = (anp: AdminNetworkPolicy) => adminToCalico(anp, 'admin');
export const k8sBaselineAdminNetworkPolicyToCalico = (banp: AdminNetworkPolicy) => adminToCalico(banp, 'baseline');
