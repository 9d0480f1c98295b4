// Names Calico gives what it makes from Kubernetes objects (libcalico-go's
// k8s/conversion constants and names.WorkloadEndpointIdentifiers).
import { createHash } from 'node:crypto';

export const NAMESPACE_PROFILE_PREFIX = 'kns.';
export const SERVICE_ACCOUNT_PROFILE_PREFIX = 'ksa.';
export const NAME_LABEL = 'projectcalico.org/name';

export const ANNOTATION_POD_IP = 'cni.projectcalico.org/podIP';
export const ANNOTATION_POD_IPS = 'cni.projectcalico.org/podIPs';
export const ANNOTATION_AWS_POD_IPS = 'vpc.amazonaws.com/pod-ips';
export const ANNOTATION_CONTAINER_ID = 'cni.projectcalico.org/containerID';
export const ANNOTATION_FLOATING_IPS = 'cni.projectcalico.org/floatingIPs';
export const ANNOTATION_SOURCE_PREFIXES = 'cni.projectcalico.org/allowedSourcePrefixes';

/** "-" doubled, as in every part of a WorkloadEndpoint name. */
const escapeDashes = (s: string) => s.replaceAll('-', '--');

/** `<node>-k8s-<pod>-eth0`. */
export function podWorkloadEndpointName(node: string, pod: string): string {
  return `${escapeDashes(node)}-k8s-${escapeDashes(pod)}-eth0`;
}

/**
 * The host side of a pod's veth: the interface prefix (the first of FELIX_INTERFACEPREFIX,
 * "cali" by default) and the first 11 hex digits of sha1("<namespace>.<pod>"), as Calico's
 * CNI plugin names it. It must never change between releases: pods would lose their
 * interface on upgrade.
 */
export function vethNameForWorkload(namespace: string, pod: string, interfacePrefix = 'cali'): string {
  const prefix = interfacePrefix.split(',')[0] || 'cali';
  return `${prefix}${createHash('sha1').update(`${namespace}.${pod}`).digest('hex').slice(0, 11)}`;
}

export function serviceAccountProfileName(sa: string, namespace: string): string {
  return `${SERVICE_ACCOUNT_PROFILE_PREFIX}${namespace || 'default'}.${sa}`;
}
