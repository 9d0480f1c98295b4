// What the Kubernetes admin policy kinds share when libcalico-go converts their rules
// (ClusterNetworkPolicy v1alpha2, AdminNetworkPolicy / BaselineAdminNetworkPolicy
// v1alpha1): the peers (namespaces, pods, and egress networks; anything else fails the
// rule), and one Calico rule per (protocol, peer), protocols sorted, numeric ports merged,
// the rule's name as its `name` annotation.
import { parseCidr } from '../../../model/net.js';
import type { LabelSelector, NamespacedPod } from '../k8s-types.js';
import { k8sSelectorToCalico, type Port, simplifyPorts } from './network-policy.js';

/** The rule annotation carrying an admin policy rule's name (upstream's AdminPolicyRuleNameLabel). */
export const ADMIN_RULE_NAME_ANNOTATION = 'name';

export interface AdminPeer {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
  /** Egress only. */
  networks?: string[];
}

/** A peer as entity-rule fields; an Error for one with none of the fields Calico converts. */
export function adminPeerFields(peer: AdminPeer, egress: boolean): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  let found = false;
  if (peer.namespaces) {
    fields.namespaceSelector = k8sSelectorToCalico(peer.namespaces, 'namespace');
    found = true;
  }
  if (peer.pods) {
    fields.selector = k8sSelectorToCalico(peer.pods.podSelector ?? {}, 'pod');
    fields.namespaceSelector = k8sSelectorToCalico(peer.pods.namespaceSelector ?? {}, 'namespace');
    found = true;
  }
  if (egress && peer.networks?.length) {
    fields.nets = peer.networks.map((n) => {
      const c = typeof n === 'string' && n.includes('/') ? parseCidr(n) : undefined;
      if (!c) throw new Error(`invalid CIDR "${String(n).slice(0, 64)}" in networks`);
      return c.text;
    });
    found = true;
  }
  if (!found) {
    const other = Object.keys(peer).filter((k) => (peer as Record<string, unknown>)[k] !== undefined);
    throw new Error(
      `none of the supported fields in '${egress ? 'to' : 'from'}' is set${other.length ? ` (${other.join(', ')} not supported)` : ''}`,
    );
  }
  return fields;
}

/** One Calico rule per (protocol, peer): `byProtocol` maps protocol ("" for any) to ports (undefined: all). */
export function adminRules(
  action: string,
  name: string | undefined,
  byProtocol: Map<string, Port[] | undefined>,
  peers: readonly AdminPeer[],
  egress: boolean,
): Array<Record<string, unknown>> {
  const rules: Array<Record<string, unknown>> = [];
  for (const protocol of [...byProtocol.keys()].sort()) {
    const list = byProtocol.get(protocol);
    const ports = list ? simplifyPorts(list) : undefined;
    for (const peer of peers) {
      const fields = adminPeerFields(peer, egress);
      const rule: Record<string, unknown> = { action };
      if (name) rule.metadata = { annotations: { [ADMIN_RULE_NAME_ANNOTATION]: name } };
      if (protocol) rule.protocol = protocol;
      const dst: Record<string, unknown> = ports?.length ? { ports } : {};
      if (egress) Object.assign(dst, fields);
      else rule.source = fields;
      if (Object.keys(dst).length) rule.destination = dst;
      rules.push(rule);
    }
  }
  return rules;
}

type CalicoRule = Record<string, unknown>;

/**
 * A policy's rules of one direction, each converted by `toCalico`; one that cannot be
 * converted fails closed as the API asks (and upstream does): a deny-all where it would have
 * denied or passed (`failsClosed`), dropped where it would have allowed; each said in `problems`.
 */
export function convertAdminRules<R extends { action?: string; name?: string }>(
  rules: readonly R[] | undefined,
  dir: 'ingress' | 'egress',
  toCalico: (r: R) => CalicoRule[],
  failsClosed: (r: R) => boolean,
  problems: string[],
): CalicoRule[] {
  const out: CalicoRule[] = [];
  for (const [i, r] of (rules ?? []).entries()) {
    try {
      out.push(...toCalico(r));
    } catch (e) {
      const closed = failsClosed(r);
      problems.push(
        `${dir} rule ${i}${r.name ? ` "${r.name}"` : ''}: ${(e as Error).message}; ${closed ? 'replaced by a deny-all rule' : 'dropped'}`,
      );
      if (closed) out.push({ action: 'Deny' });
    }
  }
  return out;
}

/** The spec's rules and the Types they give (the admin tiers pass by default: a direction without rules needs none). */
export function withRules(
  spec: Record<string, unknown>,
  ingress: CalicoRule[],
  egress: CalicoRule[],
): Record<string, unknown> {
  const types = [...(ingress.length ? ['Ingress'] : []), ...(egress.length ? ['Egress'] : [])];
  if (types.length) spec.types = types;
  if (ingress.length) spec.ingress = ingress;
  if (egress.length) spec.egress = egress;
  return spec;
}
