// A Kubernetes Node as Calico's Node (libcalico-go's K8sNodeToCalico): its labels, and the
// Calico fields calico-node keeps in annotations (BGP addresses, AS number, tunnel
// addresses, VXLAN MACs, WireGuard). An annotation whose value does not validate is
// ignored, as upstream ignores it, and reported.
import { parseCidr, parseIp } from '../../../model/net.js';
import type { Node } from '../k8s-types.js';

const A = 'projectcalico.org/';
const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;

type Check = (v: string) => boolean;
const cidrOf =
  (version: 4 | 6): Check =>
  (v) =>
    v.includes('/') && parseCidr(v)?.version === version;
const ipOf =
  (version: 4 | 6): Check =>
  (v) =>
    parseIp(v)?.version === version || (v.includes('/') && parseCidr(v)?.version === version);

export interface ConvertedNode {
  resource: Record<string, unknown>;
  /** Annotations ignored because their values are invalid. */
  problems: string[];
}

export function k8sNodeToCalico(node: Node): ConvertedNode {
  const a = node.metadata?.annotations ?? {};
  const problems: string[] = [];
  const get = (name: string, check: Check): string | undefined => {
    const v = a[`${A}${name}`];
    if (!v) return undefined;
    if (check(v)) return v;
    problems.push(`annotation ${A}${name}="${v}" is invalid; ignored`);
    return undefined;
  };
  const bgp: Record<string, unknown> = {};
  const set = (o: Record<string, unknown>, k: string, v: unknown) => {
    if (v !== undefined) o[k] = v;
  };
  set(bgp, 'ipv4Address', get('IPv4Address', cidrOf(4)));
  set(bgp, 'ipv6Address', get('IPv6Address', cidrOf(6)));
  set(bgp, 'routeReflectorClusterID', get('RouteReflectorClusterID', ipOf(4)));
  set(bgp, 'ipv4IPIPTunnelAddr', get('IPv4IPIPTunnelAddr', ipOf(4)));
  const asn = get('ASNumber', (v) => /^\d+(\.\d+)?$/.test(v));
  if (asn !== undefined) bgp.asNumber = asn.includes('.') ? asn : Number(asn);
  const spec: Record<string, unknown> = {};
  if (Object.keys(bgp).length) spec.bgp = bgp;
  set(spec, 'ipv4VXLANTunnelAddr', get('IPv4VXLANTunnelAddr', ipOf(4)));
  set(
    spec,
    'vxlanTunnelMACAddr',
    get('VXLANTunnelMACAddr', (v) => MAC.test(v)),
  );
  set(spec, 'ipv6VXLANTunnelAddr', get('IPv6VXLANTunnelAddr', ipOf(6)));
  set(
    spec,
    'vxlanTunnelMACAddrV6',
    get('VXLANTunnelMACAddrV6', (v) => MAC.test(v)),
  );
  const wireguard: Record<string, unknown> = {};
  set(wireguard, 'interfaceIPv4Address', get('IPv4WireguardInterfaceAddr', ipOf(4)));
  set(wireguard, 'interfaceIPv6Address', get('IPv6WireguardInterfaceAddr', ipOf(6)));
  if (Object.keys(wireguard).length) spec.wireguard = wireguard;
  spec.orchRefs = [{ nodeName: node.metadata?.name ?? '', orchestrator: 'k8s' }];
  const addresses = (node.status?.addresses ?? [])
    .filter((x) => x.address)
    .map((x) => ({ address: x.address as string, ...(x.type ? { type: x.type } : {}) }));
  if (addresses.length) spec.addresses = addresses;
  const status: Record<string, unknown> = {};
  set(status, 'wireguardPublicKey', a[`${A}WireguardPublicKey`] || undefined);
  set(status, 'wireguardPublicKeyV6', a[`${A}WireguardPublicKeyV6`] || undefined);
  const m = node.metadata ?? {};
  const resource: Record<string, unknown> = {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: {
      name: m.name ?? '',
      labels: { ...(m.labels ?? {}) },
      ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
    },
    spec,
  };
  if (Object.keys(status).length) resource.status = status;
  return { resource, problems };
}
