// Pod -> WorkloadEndpoint, as libcalico-go's default workload-endpoint converter: only a
// scheduled pod that is not host-networked is a Calico endpoint; its IPs come from the
// first of status.podIPs, status.podIP, Calico's CNI annotations (podIPs, podIP) and the
// AWS VPC CNI's; a finished pod no longer owns them. Name, interface, profiles, labels,
// named and host ports, floating IPs and allowed source prefixes follow Calico.
import { LABEL_NAMESPACE, LABEL_ORCHESTRATOR, LABEL_SERVICE_ACCOUNT } from '../../../model/names.js';
import { parseCidr } from '../../../model/net.js';
import type { ContainerPort, Pod } from '../k8s-types.js';
import {
  ANNOTATION_AWS_POD_IPS,
  ANNOTATION_CONTAINER_ID,
  ANNOTATION_FLOATING_IPS,
  ANNOTATION_POD_IP,
  ANNOTATION_POD_IPS,
  ANNOTATION_SOURCE_PREFIXES,
  NAMESPACE_PROFILE_PREFIX,
  podWorkloadEndpointName,
  serviceAccountProfileName,
  vethNameForWorkload,
} from './names.js';

export class KddConversionError extends Error {
  readonly code = 'EKDDCONVERT';
}

/** Not a Calico endpoint (host-networked or not scheduled); Calico skips such pods. */
export function isCalicoPod(pod: Pod): boolean {
  return !pod.spec?.hostNetwork && !!pod.spec?.nodeName;
}

/** Failed or Succeeded, or being deleted with its IPs already released by the CNI plugin. */
export function isFinished(pod: Pod): boolean {
  const a = pod.metadata?.annotations ?? {};
  if (pod.metadata?.deletionTimestamp && (a[ANNOTATION_POD_IP] === '' || a[ANNOTATION_AWS_POD_IPS] === '')) return true;
  const phase = pod.status?.phase;
  return phase === 'Failed' || phase === 'Succeeded' || phase === 'Completed';
}

function podIPs(pod: Pod): string[] {
  const a = pod.metadata?.annotations ?? {};
  let ips: string[] = [];
  const status = (pod.status?.podIPs ?? []).map((p) => p.ip ?? '').filter(Boolean);
  if (status.length) ips = status;
  else if (pod.status?.podIP) ips = [pod.status.podIP];
  else if (a[ANNOTATION_POD_IPS]) ips = a[ANNOTATION_POD_IPS].split(',');
  else if (a[ANNOTATION_POD_IP]) ips = [a[ANNOTATION_POD_IP]];
  else if (a[ANNOTATION_AWS_POD_IPS]) ips = a[ANNOTATION_AWS_POD_IPS].split(',');
  return ips.map((ip) => {
    const c = parseCidr(ip.trim());
    if (!c) throw new KddConversionError(`pod IP "${ip}" is not an IP address`);
    return c.text;
  });
}

const PORT_PROTOCOLS: Record<string, string> = { '': 'TCP', TCP: 'TCP', UDP: 'UDP', SCTP: 'SCTP' };

function endpointPorts(
  pod: Pod,
): Array<{ name?: string; protocol: string; port: number; hostPort?: number; hostIP?: string }> {
  const out: Array<{ name?: string; protocol: string; port: number; hostPort?: number; hostIP?: string }> = [];
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const c of containers) {
    for (const p of c.ports ?? ([] as ContainerPort[])) {
      if (!p.containerPort || !(p.hostPort || p.name)) continue;
      const protocol = PORT_PROTOCOLS[p.protocol ?? ''];
      if (!protocol) continue; // Calico ignores a port of a protocol it does not know
      out.push({
        ...(p.name ? { name: p.name } : {}),
        protocol,
        port: p.containerPort,
        ...(p.hostPort ? { hostPort: p.hostPort } : {}),
        ...(p.hostIP ? { hostIP: p.hostIP } : {}),
      });
    }
  }
  return out;
}

function jsonList(annotation: string, what: string): string[] {
  let v: unknown;
  try {
    v = JSON.parse(annotation);
  } catch (e) {
    throw new KddConversionError(`${what}: "${annotation}" is not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
    throw new KddConversionError(`${what}: expected a JSON list of strings`);
  return v as string[];
}

function floatingIPs(pod: Pod, nets: string[]): Array<{ internalIP: string; externalIP: string }> {
  const annotation = pod.metadata?.annotations?.[ANNOTATION_FLOATING_IPS];
  if (annotation === undefined || !nets.length) return [];
  const v4 = nets.map((n) => parseCidr(n)).find((c) => c?.version === 4);
  const v6 = nets.map((n) => parseCidr(n)).find((c) => c?.version === 6);
  if ((v4 && v4.prefix !== 32) || (v6 && v6.prefix !== 128))
    throw new KddConversionError('a pod with floating IPs needs /32 and /128 pod IPs');
  const out: Array<{ internalIP: string; externalIP: string }> = [];
  for (const ip of jsonList(annotation, ANNOTATION_FLOATING_IPS)) {
    const internal = ip.includes(':') ? v6 : v4;
    if (internal) out.push({ internalIP: internal.address, externalIP: ip });
  }
  return out;
}

function sourcePrefixes(pod: Pod): string[] {
  const annotation = pod.metadata?.annotations?.[ANNOTATION_SOURCE_PREFIXES];
  if (!annotation) return [];
  return jsonList(annotation, ANNOTATION_SOURCE_PREFIXES).map((p) => {
    const c = p.includes('/') ? parseCidr(p) : undefined;
    if (!c) throw new KddConversionError(`${ANNOTATION_SOURCE_PREFIXES}: "${p}" is not a CIDR`);
    return c.text;
  });
}

/** The WorkloadEndpoint for a Calico pod (see isCalicoPod); KddConversionError for a bad annotation. */
export function podToWorkloadEndpoint(pod: Pod, interfacePrefix = 'cali'): Record<string, unknown> {
  const ns = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const node = pod.spec?.nodeName ?? '';
  const sa = pod.spec?.serviceAccountName ?? '';
  const nets = isFinished(pod) ? [] : podIPs(pod);
  const labels: Record<string, string> = {
    ...(pod.metadata?.labels ?? {}),
    [LABEL_NAMESPACE]: ns,
    [LABEL_ORCHESTRATOR]: 'k8s',
  };
  if (sa && sa.length < 63) labels[LABEL_SERVICE_ACCOUNT] = sa;
  const spec: Record<string, unknown> = {
    orchestrator: 'k8s',
    node,
    pod: name,
    endpoint: 'eth0',
    interfaceName: vethNameForWorkload(ns, name, interfacePrefix),
    profiles: [`${NAMESPACE_PROFILE_PREFIX}${ns}`, ...(sa ? [serviceAccountProfileName(sa, ns)] : [])],
    ipNetworks: nets,
  };
  const ports = endpointPorts(pod);
  if (ports.length) spec.ports = ports;
  const nats = floatingIPs(pod, nets);
  if (nats.length) spec.ipNATs = nats;
  const prefixes = sourcePrefixes(pod);
  if (prefixes.length) spec.allowSpoofedSourcePrefixes = prefixes;
  const containerID = pod.metadata?.annotations?.[ANNOTATION_CONTAINER_ID];
  if (containerID) spec.containerID = containerID;
  if (sa) spec.serviceAccountName = sa;
  const metadata: Record<string, unknown> = { name: podWorkloadEndpointName(node, name), namespace: ns, labels };
  if (pod.metadata?.uid) metadata.uid = pod.metadata.uid;
  if (pod.metadata?.resourceVersion) metadata.resourceVersion = pod.metadata.resourceVersion;
  if (pod.metadata?.creationTimestamp) metadata.creationTimestamp = pod.metadata.creationTimestamp;
  return { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata, spec };
}
