// `palisade agent`: the node agent (see agent/agent.ts), until SIGTERM/SIGINT, which stop
// it and leave the programmed dataplane in place so traffic keeps flowing through a
// restart. `--cleanup` removes everything palisade programmed (our nftables tables, our
// routes).
import { NodeAgent } from '../agent/agent.js';
import { missingPrivileges, PRIVILEGE_EXIT_CODE } from '../agent/preflight.js';
import { CONFIG_EXIT_CODE, RESTART_EXIT_CODE } from '../config/config.js';
import { DataplaneDriver } from '../dataplane/driver.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

export const AGENT_USAGE = `Usage: palisade agent [options]

Runs the node agent: reads the datastore (and its FelixConfiguration), computes this
node's policy and programs it (nftables table "calico" per family, workload routes and
interface settings). Programs nothing before the datastore is in sync; reads back what it
programmed earlier and repairs or sweeps it. SIGTERM or SIGINT stops it and leaves the
dataplane in place.

Options:
${DATASTORE_FLAGS_USAGE}
  --cleanup               remove everything palisade programmed on this host, then exit

Examples:
  palisade agent --datastore-dir /etc/palisade/resources --hostname node1
  FELIX_DATASTORETYPE=etcdv3 FELIX_ETCDENDPOINTS=http://10.0.0.5:2379 palisade agent
  palisade agent --cleanup

SIGTERM and SIGINT stop it; SIGHUP is ignored (logged): a terminal hang-up is no reason to
stop a node agent. SIGUSR1 does not open the Node inspector.

Exit codes: 0 stopped by a signal (or cleaned up), 1 failed, 2 bad usage,
${CONFIG_EXIT_CODE} a configuration palisade refuses to run with (a value Felix refuses to start
with, or a Kubernetes datastore whose configuration cannot be loaded), ${PRIVILEGE_EXIT_CODE} not privileged enough (no
CAP_NET_ADMIN, or /proc/sys/net not writable), ${RESTART_EXIT_CODE} a configuration change needs a
restart.`;

export async function runAgent(argv: string[]): Promise<number> {
  const start = await startCommand('agent', AGENT_USAGE, argv, { cleanup: { type: 'boolean' } });
  if (typeof start === 'number') return start;
  const { values, config, log } = start;
  const lacking = missingPrivileges();
  if (lacking) {
    log.fatal({ exitCode: PRIVILEGE_EXIT_CODE }, `palisade agent cannot program this node: ${lacking}`);
    return PRIVILEGE_EXIT_CODE;
  }

  if (values.cleanup) {
    try {
      await new DataplaneDriver({ config: config.config, log }).cleanup();
      return 0;
    } catch (e) {
      log.error({ error: (e as Error).message }, 'cleanup failed');
      return 1;
    }
  }
  return new NodeAgent(config, log).run();
}
