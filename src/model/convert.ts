// v3 -> internal conversion, as Calico's syncer update processors do it
// (libcalico-go/lib/backend/syncersv1/updateprocessors): namespace scoping of a
// NetworkPolicy's selector and rule selectors, "pcns." / "pcsa." prefixes for namespace and
// service-account selectors, Pass -> next-tier, the default tier, profiles' labelsToApply,
// and workload endpoints' namespace / service-account labels. Input must be validated.
import { parseSelector } from '../native/selector.js';
import {
  type EndpointPort,
  type InternalHostEndpoint,
  type InternalIpPool,
  type InternalNetworkSet,
  type InternalPolicy,
  type InternalProfile,
  type InternalRule,
  type InternalTier,
  type InternalWorkloadEndpoint,
  none,
  orNone,
  type PortSpec,
} from './internal.js';
import {
  DEFAULT_TIER,
  LABEL_NAMESPACE,
  LABEL_ORCHESTRATOR,
  LABEL_SERVICE_ACCOUNT,
  NAMESPACE_LABEL_PREFIX,
  policyId,
  policySortKey,
  SERVICE_ACCOUNT_LABEL_PREFIX,
} from './names.js';
import { isCanonicalV4Host, parseCidr, parseIp } from './net.js';
import type { EntityRule, ResourceOf, Rule } from './schemas.js';

/** A rule that matches everything, with `action`; fields set later narrow it. */
export function matchAllRule(action: InternalRule['action']): InternalRule {
  return {
    action,
    srcNets: none(),
    notSrcNets: none(),
    dstNets: none(),
    notDstNets: none(),
    srcSelector: '',
    notSrcSelector: '',
    dstSelector: '',
    notDstSelector: '',
    srcPorts: none(),
    notSrcPorts: none(),
    dstPorts: none(),
    notDstPorts: none(),
  };
}

const prefixSelector = (s: string, prefix: string) => parseSelector(s).prefixed(prefix);

/** `(current) && prefixed(extra)`, as Calico's prefixAndAppendSelector. */
function prefixAndAppend(current: string, extra: string | undefined, prefix: string): string {
  if (!extra) return current;
  const p = prefixSelector(extra, prefix);
  return current ? `(${current}) && ${p}` : p;
}

function serviceAccountSelector(sa: NonNullable<EntityRule['serviceAccounts']>): string {
  const bySelector = sa.selector ? prefixSelector(sa.selector, SERVICE_ACCOUNT_LABEL_PREFIX) : '';
  if (!sa.names?.length) return bySelector;
  const byName = parseSelector(`${LABEL_SERVICE_ACCOUNT} in { '${sa.names.join("', '")}' }`).canonical;
  return bySelector ? `(${bySelector}) && (${byName})` : byName;
}

/** Calico's getEndpointSelector: one selector for the endpoints an entity rule matches. */
function entitySelector(e: EntityRule | undefined, ns: string): string {
  if (!e) return '';
  let nsSelector = '';
  if (e.namespaceSelector) {
    // all() means every namespace and global() none, in a model where all() would also
    // select host endpoints. Calico rewrites the text, and so does this.
    nsSelector = prefixSelector(e.namespaceSelector, NAMESPACE_LABEL_PREFIX)
      .replaceAll('all()', `has(${LABEL_NAMESPACE})`)
      .replaceAll('global()', `!has(${LABEL_NAMESPACE})`);
  } else if (ns) {
    nsSelector = `${LABEL_NAMESPACE} == '${ns}'`;
  }
  const parts: string[] = [];
  if (e.serviceAccounts) {
    const sa = serviceAccountSelector(e.serviceAccounts);
    if (sa) parts.push(sa);
  }
  if (e.selector) parts.push(e.selector);
  let selector = parts.length === 1 ? (parts[0] as string) : parts.length ? `(${parts.join(') && (')})` : '';
  if (nsSelector && (selector || e.notSelector || e.namespaceSelector)) {
    selector = selector ? `(${nsSelector}) && (${selector})` : nsSelector;
  }
  return selector;
}

function nets(list: string[] | undefined): string[] {
  if (!list?.length) return none();
  return list.map((n) => (parseCidr(n) as NonNullable<ReturnType<typeof parseCidr>>).text);
}

function ports(list: Array<number | string> | undefined): PortSpec[] {
  if (!list?.length) return none();
  return list.map((p) => {
    if (typeof p === 'number') return { first: p, last: p };
    const range = /^(\d+):(\d+)$/.exec(p);
    if (range) return { first: Number(range[1]), last: Number(range[2]) };
    if (/^\d+$/.test(p)) return { first: Number(p), last: Number(p) };
    return { name: p };
  });
}

/** numorstring.Protocol.ToV1: names in lower case, numbers as numbers. */
function protocolV1(p: string | number | undefined): string | number | undefined {
  if (p === undefined) return undefined;
  if (typeof p === 'number') return p;
  return /^\d+$/.test(p) ? Number(p) : p.toLowerCase();
}

export function convertRule(r: Rule, ns: string): InternalRule {
  const out: InternalRule = {
    action: r.action === 'Pass' ? 'next-tier' : (r.action.toLowerCase() as 'allow' | 'deny' | 'log'),
    srcNets: nets(r.source?.nets),
    notSrcNets: nets(r.source?.notNets),
    dstNets: nets(r.destination?.nets),
    notDstNets: nets(r.destination?.notNets),
    srcSelector: entitySelector(r.source, ns),
    notSrcSelector: r.source?.notSelector ?? '',
    dstSelector: entitySelector(r.destination, ns),
    notDstSelector: r.destination?.notSelector ?? '',
    srcPorts: ports(r.source?.ports),
    notSrcPorts: ports(r.source?.notPorts),
    dstPorts: ports(r.destination?.ports),
    notDstPorts: ports(r.destination?.notPorts),
  };
  if (r.ipVersion !== undefined) out.ipVersion = r.ipVersion;
  const protocol = protocolV1(r.protocol);
  if (protocol !== undefined) out.protocol = protocol;
  const notProtocol = protocolV1(r.notProtocol);
  if (notProtocol !== undefined) out.notProtocol = notProtocol;
  if (r.icmp?.type !== undefined) out.icmpType = r.icmp.type;
  if (r.icmp?.code !== undefined) out.icmpCode = r.icmp.code;
  if (r.notICMP?.type !== undefined) out.notIcmpType = r.notICMP.type;
  if (r.notICMP?.code !== undefined) out.notIcmpCode = r.notICMP.code;
  if (r.source?.services)
    out.srcService = { name: r.source.services.name, namespace: r.source.services.namespace ?? ns };
  if (r.destination?.services) {
    out.dstService = { name: r.destination.services.name, namespace: r.destination.services.namespace ?? ns };
  }
  if (r.metadata?.annotations) out.annotations = { ...r.metadata.annotations };
  return out;
}

/** Calico's default for an empty `types`: ingress, egress, or both, from the rules present. */
function policyTypes(spec: {
  types?: Array<'Ingress' | 'Egress'> | undefined;
  ingress?: Rule[] | undefined;
  egress?: Rule[] | undefined;
}): Array<'ingress' | 'egress'> {
  if (spec.types?.length) return spec.types.map((t) => (t === 'Ingress' ? 'ingress' : 'egress'));
  if (!spec.egress?.length) return ['ingress'];
  if (!spec.ingress?.length) return ['egress'];
  return ['ingress', 'egress'];
}

/**
 * A NetworkPolicy, or a Kubernetes NetworkPolicy as the Kubernetes datastore gives it (the same spec, its own policy
 * kind).
 */
export function convertNetworkPolicy(
  p: ResourceOf<'NetworkPolicy'> | ResourceOf<'KubernetesNetworkPolicy'>,
  kind: 'NetworkPolicy' | 'KubernetesNetworkPolicy' = 'NetworkPolicy',
): InternalPolicy {
  const ns = p.metadata.namespace;
  const nsClause = `${LABEL_NAMESPACE} == '${ns}'`;
  let selector = p.spec.selector ? `(${p.spec.selector}) && ${nsClause}` : nsClause;
  selector = prefixAndAppend(selector, p.spec.serviceAccountSelector, SERVICE_ACCOUNT_LABEL_PREFIX);
  const out: InternalPolicy = {
    key: {
      tier: p.spec.tier ?? DEFAULT_TIER,
      name: policyId(kind, ns, p.metadata.name),
      sortKey: policySortKey(kind, ns, p.metadata.name),
    },
    namespace: ns,
    selector,
    inboundRules: (p.spec.ingress ?? []).map((r) => convertRule(r, ns)),
    outboundRules: (p.spec.egress ?? []).map((r) => convertRule(r, ns)),
    types: policyTypes(p.spec),
    doNotTrack: false,
    preDNAT: false,
    // as upstream: only host endpoints apply policy on forward, and NetworkPolicies select workloads
    applyOnForward: false,
  };
  if (p.spec.order !== undefined) out.order = p.spec.order;
  if (p.spec.performanceHints?.includes('AssumeNeededOnEveryNode')) out.assumeNeededOnEveryNode = true;
  return out;
}

/**
 * A GlobalNetworkPolicy, or a Kubernetes ClusterNetworkPolicy as the Kubernetes datastore gives it (its spec, its own
 * policy kind).
 */
export function convertGlobalNetworkPolicy(
  p: ResourceOf<'GlobalNetworkPolicy'> | ResourceOf<'KubernetesClusterNetworkPolicy'>,
  kind: 'GlobalNetworkPolicy' | 'KubernetesClusterNetworkPolicy' = 'GlobalNetworkPolicy',
): InternalPolicy {
  const s: ResourceOf<'GlobalNetworkPolicy'>['spec'] = p.spec;
  let selector = p.spec.selector ?? '';
  if (p.spec.namespaceSelector) {
    selector = prefixAndAppend(selector, p.spec.namespaceSelector, NAMESPACE_LABEL_PREFIX).replaceAll(
      'all()',
      `has(${LABEL_NAMESPACE})`,
    );
  }
  if (p.spec.serviceAccountSelector) {
    selector = prefixAndAppend(selector, p.spec.serviceAccountSelector, SERVICE_ACCOUNT_LABEL_PREFIX).replaceAll(
      'all()',
      `has(${LABEL_SERVICE_ACCOUNT})`,
    );
  }
  const out: InternalPolicy = {
    key: {
      tier: p.spec.tier ?? DEFAULT_TIER,
      name: policyId(kind, '', p.metadata.name),
      sortKey: policySortKey(kind, '', p.metadata.name),
    },
    namespace: '',
    selector,
    inboundRules: (p.spec.ingress ?? []).map((r) => convertRule(r, '')),
    outboundRules: (p.spec.egress ?? []).map((r) => convertRule(r, '')),
    types: policyTypes(p.spec),
    doNotTrack: s.doNotTrack ?? false,
    preDNAT: s.preDNAT ?? false,
    applyOnForward: s.applyOnForward ?? false,
  };
  if (p.spec.order !== undefined) out.order = p.spec.order;
  if (p.spec.performanceHints?.includes('AssumeNeededOnEveryNode')) out.assumeNeededOnEveryNode = true;
  return out;
}

export function convertTier(t: ResourceOf<'Tier'>): InternalTier {
  const out: InternalTier = { name: t.metadata.name, defaultAction: t.spec.defaultAction ?? 'Deny' };
  if (t.spec.order !== undefined) out.order = t.spec.order;
  return out;
}

export function convertProfile(p: ResourceOf<'Profile'>): InternalProfile {
  return {
    name: p.metadata.name,
    labels: { ...(p.spec.labelsToApply ?? {}) },
    inboundRules: (p.spec.ingress ?? []).map((r) => convertRule(r, '')),
    outboundRules: (p.spec.egress ?? []).map((r) => convertRule(r, '')),
  };
}

function endpointPorts(
  list: Array<{ name?: string | undefined; protocol: string | number; port: number }> | undefined,
): EndpointPort[] {
  if (!list?.length) return none();
  // Felix has no use for unnamed ports (the CNI plugin records them); Calico drops them too.
  return list
    .filter((p) => p.name)
    .map((p) => ({ name: p.name as string, protocol: protocolV1(p.protocol) as string | number, port: p.port }));
}

/** Parses CIDRs into normalised IPv4 and IPv6 lists, each exactly sized (or shared empty), into `out`. */
function cidrsByFamily(list: readonly string[], out: { ipv4Nets: string[]; ipv6Nets: string[] }): void {
  if (list.length === 1) {
    // The common case, without the intermediate arrays (250,000 endpoints in a snapshot).
    const text = list[0] as string;
    if (isCanonicalV4Host(text)) {
      out.ipv4Nets = [text];
      return;
    }
    const c = parseCidr(text) as NonNullable<ReturnType<typeof parseCidr>>;
    if (c.version === 4) out.ipv4Nets = [c.text];
    else out.ipv6Nets = [c.text];
    return;
  }
  const parsed = list.map((n) => parseCidr(n) as NonNullable<ReturnType<typeof parseCidr>>);
  out.ipv4Nets = orNone(parsed.filter((c) => c.version === 4).map((c) => c.text));
  out.ipv6Nets = orNone(parsed.filter((c) => c.version === 6).map((c) => c.text));
}

// Both reserved prefixes start "pcns."/"pcsa.": one character is tested before the strings.
function reservedLabel(k: string): boolean {
  return (
    k.charCodeAt(0) === 112 /* p */ &&
    (k.startsWith(NAMESPACE_LABEL_PREFIX) || k.startsWith(SERVICE_ACCOUNT_LABEL_PREFIX))
  );
}

function workloadNats(list: ResourceOf<'WorkloadEndpoint'>['spec']['ipNATs'], out: InternalWorkloadEndpoint): void {
  if (!list?.length) return;
  const nat4: Array<{ intIp: string; extIp: string }> = [];
  const nat6: Array<{ intIp: string; extIp: string }> = [];
  for (const n of list) {
    const i = parseIp(n.internalIP);
    const e = parseIp(n.externalIP);
    if (i && e) (i.version === 4 ? nat4 : nat6).push({ intIp: i.address, extIp: e.address });
  }
  out.ipv4Nat = orNone(nat4);
  out.ipv6Nat = orNone(nat6);
}

/**
 * A WorkloadEndpoint for Felix, or undefined when it has no IP networks yet (Calico
 * filters those out). `key` is the v1 key when the caller has made it already (the
 * update processor, from the name). Every endpoint in the cluster passes here (250,000 in
 * a snapshot): what most of them lack (NATs, a second address) costs no allocation.
 */
export function convertWorkloadEndpoint(
  w: ResourceOf<'WorkloadEndpoint'>,
  key?: InternalWorkloadEndpoint['key'],
): InternalWorkloadEndpoint | undefined {
  const s = w.spec;
  if (!s.ipNetworks?.length) return undefined;
  // No endpoint may claim another namespace's or service account's labels.
  const labels: Record<string, string> = {};
  const own = w.metadata.labels;
  if (own) for (const k in own) if (!reservedLabel(k)) labels[k] = own[k] as string;
  labels[LABEL_NAMESPACE] = w.metadata.namespace;
  if (s.orchestrator) labels[LABEL_ORCHESTRATOR] = s.orchestrator;
  if (s.serviceAccountName) labels[LABEL_SERVICE_ACCOUNT] = s.serviceAccountName;
  const out: InternalWorkloadEndpoint = {
    key: key ?? {
      hostname: s.node ?? '',
      orchestratorId: s.orchestrator ?? 'k8s',
      workloadId: `${w.metadata.namespace}/${s.workload || s.pod || w.metadata.name}`,
      endpointId: s.endpoint || 'eth0',
    },
    state: 'active',
    name: s.interfaceName ?? '',
    profileIds: s.profiles?.length ? [...s.profiles] : none(),
    ipv4Nets: none(),
    ipv6Nets: none(),
    ipv4Nat: none(),
    ipv6Nat: none(),
    labels,
    ports: endpointPorts(s.ports),
    allowSpoofedSourcePrefixes: nets(s.allowSpoofedSourcePrefixes),
  };
  cidrsByFamily(s.ipNetworks, out);
  workloadNats(s.ipNATs, out);
  if (s.mac) out.mac = s.mac.toLowerCase().replaceAll('-', ':');
  if (s.ipv4Gateway) out.ipv4Gateway = s.ipv4Gateway;
  if (s.ipv6Gateway) out.ipv6Gateway = s.ipv6Gateway;
  return out;
}

export function convertHostEndpoint(h: ResourceOf<'HostEndpoint'>): InternalHostEndpoint {
  const v4: string[] = [];
  const v6: string[] = [];
  for (const a of h.spec.expectedIPs ?? []) {
    const ip = parseIp(a) as NonNullable<ReturnType<typeof parseIp>>;
    (ip.version === 4 ? v4 : v6).push(ip.address);
  }
  return {
    key: { hostname: h.spec.node ?? '', endpointId: h.metadata.name },
    name: h.spec.interfaceName ?? '',
    expectedIpv4Addrs: v4,
    expectedIpv6Addrs: v6,
    labels: { ...(h.metadata.labels ?? {}) },
    profileIds: [...(h.spec.profiles ?? [])],
    ports: endpointPorts(h.spec.ports),
  };
}

export function convertNetworkSet(n: ResourceOf<'NetworkSet'>): InternalNetworkSet {
  return {
    name: `${n.metadata.namespace}/${n.metadata.name}`,
    nets: nets(n.spec.nets),
    labels: { ...(n.metadata.labels ?? {}), [LABEL_NAMESPACE]: n.metadata.namespace },
  };
}

export function convertGlobalNetworkSet(n: ResourceOf<'GlobalNetworkSet'>): InternalNetworkSet {
  return { name: n.metadata.name, nets: nets(n.spec.nets), labels: { ...(n.metadata.labels ?? {}) } };
}

export function convertIpPool(p: ResourceOf<'IPPool'>): InternalIpPool {
  return {
    cidr: (parseCidr(p.spec.cidr) as NonNullable<ReturnType<typeof parseCidr>>).text,
    masquerade: p.spec.natOutgoing ?? false,
    ipipMode: p.spec.ipipMode ?? 'Never',
    vxlanMode: p.spec.vxlanMode ?? 'Never',
    disabled: p.spec.disabled ?? false,
    allowedUses: [...(p.spec.allowedUses ?? [])],
  };
}
