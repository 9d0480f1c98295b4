// Kubernetes NetworkPolicy -> Calico policy, as libcalico-go's K8sNetworkPolicyToCalico:
// kind KubernetesNetworkPolicy under the k8s name, tier default, order 1000; the pod
// selector prefixed with the k8s orchestrator clause; one Allow rule per (protocol, peer),
// protocols sorted, a port's protocol TCP unless given, numeric ports merged into ranges
// (SimplifyPorts), `endPort` as a range; an ipBlock peer becomes nets and notNets, other
// peers a selector and a namespace selector (an empty one: all(); none: the policy's own
// namespace). Types from policyTypes, Ingress when there are none. A rule that cannot be
// converted is dropped and reported; the rest of the policy stands.
import { parseCidr } from '../../../model/net.js';
import type { LabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from '../k8s-types.js';

export const KNP_ORDER = 1000;

/**
 * A k8s label selector in Calico's syntax; pod selectors get the orchestrator clause, empty namespace selectors are
 * all().
 */
export function k8sSelectorToCalico(s: LabelSelector | undefined, type: 'pod' | 'namespace'): string {
  const parts: string[] = type === 'pod' ? ["projectcalico.org/orchestrator == 'k8s'"] : [];
  if (!s) return parts.join(' && ');
  const labels = s.matchLabels ?? {};
  const exprs = s.matchExpressions ?? [];
  if (type === 'namespace' && Object.keys(labels).length === 0 && exprs.length === 0) return 'all()';
  for (const k of Object.keys(labels).sort()) parts.push(`${k} == '${labels[k]}'`);
  for (const e of exprs) {
    const values = (e.values ?? []).join("', '");
    if (e.operator === 'In') parts.push(`${e.key} in { '${values}' }`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} not in { '${values}' }`);
    else if (e.operator === 'Exists') parts.push(`has(${e.key})`);
    else if (e.operator === 'DoesNotExist') parts.push(`! has(${e.key})`);
  }
  return parts.join(' && ');
}

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
  return [base];
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
    addProtocolPorts(byProtocol, (p.protocol ?? 'TCP').toUpperCase(), portOf(p));
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
    selector: k8sSelectorToCalico(np.spec?.podSelector, 'pod'),
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
