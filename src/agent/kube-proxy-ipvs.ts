// kube-proxy in IPVS mode, found as Felix finds it: its dummy device kube-ipvs0. Felix then
// programs extra rules (render/kube-ipvs.ts) so that traffic IPVS forwards to a local pod,
// which leaves by OUTPUT rather than FORWARD, still passes the pods' policy. As Felix, the
// choice is made at start (KubeIPVSSupport Auto) and a change of kube-proxy's mode, the
// device coming or going, restarts the agent, which starts again without flushing.
import { existsSync } from 'node:fs';
import type { Config } from '../config/params.js';

export const KUBE_IPVS_DEVICE = 'kube-ipvs0';

/** Whether this network namespace has kube-proxy's IPVS device (sysfs shows the caller's namespace). */
export function kubeIpvsPresent(sysClassNet = '/sys/class/net'): boolean {
  return existsSync(`${sysClassNet}/${KUBE_IPVS_DEVICE}`);
}

/** The configuration with KubeIPVSSupport Auto resolved: Enabled while the device is there. */
export function resolveKubeIpvs<T extends Pick<Config, 'KubeIPVSSupport'>>(cfg: T, present = kubeIpvsPresent()): T {
  return cfg.KubeIPVSSupport === 'Auto' && present ? { ...cfg, KubeIPVSSupport: 'Enabled' } : cfg;
}

/** Auto's choice no longer matches the host: kube-proxy changed mode, and the agent restarts (as Felix). */
export function kubeIpvsChanged(
  resolved: Pick<Config, 'KubeIPVSSupport'>,
  configured: Pick<Config, 'KubeIPVSSupport'>,
  present = kubeIpvsPresent(),
): boolean {
  return configured.KubeIPVSSupport === 'Auto' && (resolved.KubeIPVSSupport === 'Enabled') !== present;
}
