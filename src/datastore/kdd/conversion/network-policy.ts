// Kubernetes NetworkPolicy -> Calico policy, as libcalico-go's K8sNetworkPolicyToCalico:
// kind KubernetesNetworkPolicy under the k8s name, tier default, order 1000; the pod
// selector prefixed with the k8s orchestrator clause; one Allow rule per (protocol, peer),
// protocols sorted, a port's protocol TCP unless given, numeric ports merged into ranges
// (SimplifyPorts), `endPort` as a range; an ipBlock peer becomes nets and notNets, other
// peers a selector and a namespace selector (an empty one: all(); none: the policy's own
// namespace). Types from policyTypes, Ingress when there are none. A rule that cannot be
// converted (a peer's selector Kubernetes would not accept, a protocol, a port) is dropped
// and reported; the rest of the policy stands and keeps isolating (issue 51 D9: a bad
// value dropped the whole policy, and the pods it isolated were open).
import { parseCidr } from '../../../model/net.js';
import type { LabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from '../k8s-types.js';

export const KNP_ORDER = 1000;

// Kubernetes' label syntax: a key is an optional DNS-subdomain prefix and a name, a value
// empty or a name. What does not match is refused, never interpolated: a value such as
// `nobody' || app == 'client` would otherwise close the quote and widen the selector
// (issue 51 D9).
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export class SelectorError extends Error {}

function labelKey(k: unknown): string {
  const text = String(k);
  const slash = text.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : text.slice(0, slash);
  const name = slash < 0 ? text : text.slice(slash + 1);
  const ok =
    typeof k === 'string' &&
    name.length <= 63 &&
    LABEL_NAME.test(name) &&
    (prefix === undefined || (prefix.length <= 253 && LABEL_PREFIX.test(prefix)));
  if (!ok) throw new SelectorError(`label key ${JSON.stringify(text).slice(0, 80)} is not a Kubernetes label key`);
  return text;
}

function labelValue(v: unknown): string {
  if (typeof v !== 'string' || v.length > 63 || (v !== '' && !LABEL_NAME.test(v)))
    throw new SelectorError(`label value ${JSON.stringify(v).slice(0, 80)} is not a Kubernetes label value`);
  return `'${v}'`;
}

/**
 * A k8s label selector in Calico's syntax; pod selectors get the orchestrator clause, empty namespace selectors are
 * all(). A key, value or operator Kubernetes would not accept is a SelectorError.
 */
export function k8sSelectorToCalico(s: LabelSelector | undefined, type: 'pod' | 'namespace'): string {
  const parts: string[] = type === 'pod' ? ["projectcalico.org/orchestrator == 'k8s'"] : [];
  if (!s) return parts.join(' && ');
  const labels = s.matchLabels ?? {};
  const exprs = s.matchExpressions ?? [];
  if (type === 'namespace' && Object.keys(labels).length === 0 && exprs.length === 0) return 'all()';
  for (const k of Object.keys(labels).sort()) parts.push(`${labelKey(k)} == ${labelValue(labels[k])}`);
  for (const e of exprs) parts.push(expression(e));
  return parts.join(' && ');
}

function expression(e: NonNullable<LabelSelector['matchExpressions']>[number]): string {
  const key = labelKey(e.key);
  const values = e.values ?? [];
  const set = () => {
    if (!values.length) throw new SelectorError(`operator ${e.operator} on ${key} needs values`);
    return `{ ${values.map(labelValue).join(', ')} }`;
  };
  if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length)
    throw new SelectorError(`operator ${e.operator} on ${key} takes no values`);
  if (e.operator === 'In') return `${key} in ${set()}`;
  if (e.operator === 'NotIn') return `${key} not in ${set()}`;
  if (e.operator === 'Exists') return `has(${key})`;
  if (e.operator === 'DoesNotExist') return `! has(${key})`;
  throw new SelectorError(`operator ${JSON.stringify(e.operator)} on ${key} is not In, NotIn, Exists or DoesNotExist`);
}

/** The protocols a Kubernetes NetworkPolicy port may name. */
const K8S_PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
/** A named port, as Calico's validation takes it. */
const PORT_NAME = /^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9])?$/;

export type Port = number | string;

/**
 * Adds a protocol's ports to a protocol -> ports map, as Calico's conversions merge them:
 * no ports means every port of that protocol (undefined), which later ports do not narrow.
 */
export function addProtocolPorts(map: Map<string, Port[] | undefined>, protocol: string, ports: Port[]): void {
  if (!ports.length) map.set(protocol, undefined);
  else if (!map.has(protocol) || map.get(protocol) !== undefined)
    map.set(protocol, [...(map.get(protocol) ?? []), ...ports]);
}

/** Calico's SimplifyPorts: named ports as they are, numeric ports and ranges merged into the fewest ranges. */
export function simplifyPorts(ports: Port[]): Port[] {
  if (ports.length <= 1) return ports;
  const named: Port[] = [];
  const numbers: number[] = [];
  for (const p of ports) {
    const range =
      typeof p === 'number'
        ? [p, p]
        : (/^(\d+):(\d+)$/.exec(p)?.slice(1).map(Number) ?? (/^\d+$/.test(p) ? [Number(p), Number(p)] : undefined));
    if (!range) named.push(p);
    else for (let i = range[0] as number; i <= (range[1] as number); i++) numbers.push(i);
  }
  if (numbers.length <= 1) return ports;
  numbers.sort((a, b) => a - b);
  const out = [...named];
  for (let i = 0; i < numbers.length; ) {
    const first = numbers[i] as number;
    let last = first;
    i++;
    while (i < numbers.length && (numbers[i] as number) <= last + 1) last = numbers[i++] as number;
    out.push(first === last ? first : `${first}:${last}`);
  }
  return out;
}

function portOf(p: NetworkPolicyPort): Port[] {
  if (p.port === undefined) return [];
  const base = String(p.port);
  if (p.endPort !== undefined) {
    if (!/^\d+$/.test(base) || p.endPort < Number(base)) throw new Error(`invalid port range ${base}:${p.endPort}`);
    return [`${base}:${p.endPort}`];
  }
  if (/^\d+$/.test(base)) {
    const n = Number(base);
    if (n < 1 || n > 65535) throw new Error(`invalid port ${base}`);
    return [n];
  }
  if (base.length > 15 || !PORT_NAME.test(base))
    throw new Error(`invalid port name ${JSON.stringify(base).slice(0, 40)}`);
  return [base];
}

function protocolOf(p: NetworkPolicyPort): string {
  const protocol = String(p.protocol ?? 'TCP').toUpperCase();
  if (!K8S_PROTOCOLS.has(protocol))
    throw new Error(`protocol ${JSON.stringify(String(p.protocol)).slice(0, 40)} is not TCP, UDP or SCTP`);
  return protocol;
}

function peerFields(peer: NetworkPolicyPeer | undefined): Record<string, unknown> {
  if (!peer) return {};
  if (peer.ipBlock) {
    const net = parseCidr(peer.ipBlock.cidr);
    if (!net || !peer.ipBlock.cidr.includes('/')) throw new Error(`ipBlock cidr "${peer.ipBlock.cidr}" is not a CIDR`);
    const notNets = (peer.ipBlock.except ?? []).map((e) => {
      const c = parseCidr(e);
      if (!c || !e.includes('/')) throw new Error(`ipBlock except "${e}" is not a CIDR`);
      return c.text;
    });
    return { nets: [net.text], ...(notNets.length ? { notNets } : {}) };
  }
  const selector = k8sSelectorToCalico(peer.podSelector, 'pod');
  const nsSelector = k8sSelectorToCalico(peer.namespaceSelector, 'namespace');
  return { selector, ...(nsSelector ? { namespaceSelector: nsSelector } : {}) };
}

function rulesOf(
  peers: NetworkPolicyPeer[] | undefined,
  ports: NetworkPolicyPort[] | undefined,
  ingress: boolean,
): Array<Record<string, unknown>> {
  // protocol -> ports (undefined: all ports of it); "" -> no protocol at all.
  let byProtocol = new Map<string, Port[] | undefined>();
  for (const p of ports?.length ? ports : [undefined]) {
    if (!p) {
      byProtocol = new Map([['', undefined]]);
      break;
    }
    addProtocolPorts(byProtocol, protocolOf(p), portOf(p));
  }
  const rules: Array<Record<string, unknown>> = [];
  for (const protocol of [...byProtocol.keys()].sort()) {
    const list = byProtocol.get(protocol);
    const dstPorts = list ? simplifyPorts(list) : undefined;
    for (const peer of peers?.length ? peers : [undefined]) {
      const fields = peerFields(peer);
      const rule: Record<string, unknown> = { action: 'Allow' };
      if (protocol) rule.protocol = protocol;
      if (ingress) {
        if (Object.keys(fields).length) rule.source = fields;
        if (dstPorts?.length) rule.destination = { ports: dstPorts };
      } else {
        const dst = { ...(dstPorts?.length ? { ports: dstPorts } : {}), ...fields };
        if (Object.keys(dst).length) rule.destination = dst;
      }
      rules.push(rule);
    }
  }
  return rules;
}

export interface ConvertedPolicy {
  resource: Record<string, unknown>;
  /** Rules that could not be converted (dropped). */
  problems: string[];
}

/**
 * The pods the policy isolates. One whose selector cannot be read isolates every pod of its
 * namespace: dropping the policy would leave the pods it was written for open, and its
 * rules still allow what they allow.
 */
function podSelector(np: NetworkPolicy, problems: string[]): string {
  try {
    return k8sSelectorToCalico(np.spec?.podSelector, 'pod');
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    problems.push(`podSelector: ${e.message}; the policy isolates every pod of its namespace instead (fail closed)`);
    return k8sSelectorToCalico(undefined, 'pod');
  }
}

export function k8sNetworkPolicyToCalico(np: NetworkPolicy): ConvertedPolicy {
  const problems: string[] = [];
  const convert = (dir: 'ingress' | 'egress') => {
    const out: Array<Record<string, unknown>> = [];
    for (const [i, r] of (np.spec?.[dir] ?? []).entries()) {
      try {
        out.push(
          ...rulesOf(
            dir === 'ingress' ? (r as { from?: NetworkPolicyPeer[] }).from : (r as { to?: NetworkPolicyPeer[] }).to,
            r.ports,
            dir === 'ingress',
          ),
        );
      } catch (e) {
        problems.push(`${dir} rule ${i}: ${(e as Error).message}; dropped`);
      }
    }
    return out;
  };
  const ingress = convert('ingress');
  const egress = convert('egress');
  const declared = np.spec?.policyTypes ?? [];
  const types = [
    ...(declared.includes('Ingress') ? ['Ingress'] : []),
    ...(declared.includes('Egress') ? ['Egress'] : []),
  ];
  if (!types.length) types.push('Ingress');
  const spec: Record<string, unknown> = {
    order: KNP_ORDER,
    tier: 'default',
    selector: podSelector(np, problems),
    types,
  };
  if (ingress.length) spec.ingress = ingress;
  if (egress.length) spec.egress = egress;
  const m = np.metadata ?? {};
  return {
    resource: {
      apiVersion: 'projectcalico.org/v3',
      kind: 'KubernetesNetworkPolicy',
      metadata: {
        name: m.name ?? '',
        namespace: m.namespace ?? '',
        ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      },
      spec,
    },
    problems,
  };
}
