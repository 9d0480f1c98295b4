// What the agent needs from the host before it starts: CAP_NET_ADMIN (netlink writes to
// nftables, routes, conntrack) and a writable /proc/sys/net (interface settings). Without
// them it would retry "Operation not permitted" forever; it says so and exits instead.
import { accessSync, constants, readFileSync } from 'node:fs';

/** palisade's exit code for a process that lacks the privileges it needs. */
export const PRIVILEGE_EXIT_CODE = 4;
const CAP_NET_ADMIN = 12;

/** Why this process cannot program the dataplane, or undefined. `status`/`procSys` are for tests. */
export function missingPrivileges(
  status = '/proc/self/status',
  procSys = process.env.PALISADE_PROC_SYS || '/proc/sys',
): string | undefined {
  let eff: bigint;
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(status, 'utf8'));
    eff = m ? BigInt(`0x${m[1]}`) : 0n;
  } catch (e) {
    return `cannot read ${status}: ${(e as Error).message}`;
  }
  if (!(eff & (1n << BigInt(CAP_NET_ADMIN)))) {
    return 'the process lacks CAP_NET_ADMIN (run as root, or give the container NET_ADMIN)';
  }
  try {
    accessSync(`${procSys}/net/ipv4/ip_forward`, constants.W_OK);
  } catch {
    return `${procSys}/net is not writable (mount the host's /proc/sys/net writable, as deploy/daemonset.yaml does)`;
  }
  return undefined;
}
