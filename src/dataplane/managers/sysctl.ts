// Per-interface kernel settings Felix makes on workload interfaces (and IP forwarding),
// written under /proc/sys of the agent's own network namespace. PALISADE_PROC_SYS moves
// the root: a container that is not privileged has /proc/sys read-only, so the DaemonSet
// mounts the host's /proc/sys/net writable at /host/proc/sys/net instead.
import { writeFile } from 'node:fs/promises';

import type { Logger } from '../../log.js';

const ROOT = process.env.PALISADE_PROC_SYS || '/proc/sys';

export async function writeSysctl(path: string, value: string, log: Logger): Promise<boolean> {
  try {
    await writeFile(`${ROOT}/${path}`, value);
    return true;
  } catch (e) {
    log.warn({ path, value, error: (e as Error).message }, 'could not set sysctl');
    return false;
  }
}

/**
 * Felix's workload-interface settings: the host answers ARP/ND for the pod's gateway; strict
 * reverse-path filtering, except (rp_filter 0) for an endpoint allowed to spoof sources.
 */
export async function configureWorkloadInterface(
  name: string,
  ipv6: boolean,
  log: Logger,
  allowSpoofing = false,
): Promise<void> {
  const v4 = `net/ipv4/conf/${name}`;
  await writeSysctl(`${v4}/rp_filter`, allowSpoofing ? '0' : '1', log);
  await writeSysctl(`${v4}/route_localnet`, '1', log);
  await writeSysctl(`${v4}/proxy_arp`, '1', log);
  await writeSysctl(`net/ipv4/neigh/${name}/proxy_delay`, '0', log);
  await writeSysctl(`${v4}/forwarding`, '1', log);
  if (ipv6) {
    const v6 = `net/ipv6/conf/${name}`;
    await writeSysctl(`${v6}/accept_ra`, '0', log);
    await writeSysctl(`${v6}/proxy_ndp`, '1', log);
    await writeSysctl(`${v6}/forwarding`, '1', log);
  }
}
