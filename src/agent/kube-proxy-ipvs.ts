// kube-proxy in IPVS mode, found as Felix finds it: its dummy device kube-ipvs0. Felix then
// programs extra rules (cali-forward-check, the endpoint mark, NodePort ranges) so that
// traffic IPVS forwards to a local pod, which leaves through OUTPUT rather than FORWARD,
// still passes that pod's policy. palisade does not program them yet, so it refuses to run
// beside IPVS rather than run open (issue 52): at start, and when the device appears.
import { existsSync } from 'node:fs';

export const KUBE_IPVS_DEVICE = 'kube-ipvs0';

export const IPVS_REFUSAL = `kube-proxy runs in IPVS mode (${KUBE_IPVS_DEVICE} exists): palisade does not program Felix's IPVS rules, without which traffic IPVS forwards to a local pod could bypass the pod's policy; refusing to run`;

/** Whether this network namespace has kube-proxy's IPVS device (sysfs shows the caller's namespace). */
export function kubeIpvsPresent(sysClassNet = '/sys/class/net'): boolean {
  return existsSync(`${sysClassNet}/${KUBE_IPVS_DEVICE}`);
}
