// `palisade agent`: the node agent. Configuration, datastore, calc graph, dataplane
// driver (nftables, routes, interface settings), until SIGTERM/SIGINT, which stop it and
// leave the programmed dataplane in place so traffic keeps flowing through a restart.
// `--cleanup` removes everything palisade programmed (our nftables tables, our routes).
import { parseArgs } from 'node:util';

import { ControlPlane } from '../agent/control-plane.js';
import { RESTART_EXIT_CODE } from '../config/config.js';
import { DataplaneDriver } from '../dataplane/driver.js';
import { createSyncer } from '../datastore/index.js';
import { createLogger } from '../log.js';
import { configFromFlags, DATASTORE_FLAGS, DATASTORE_FLAGS_USAGE } from './datastore-flags.js';

export const AGENT_USAGE = `Usage: palisade agent [options]

Runs the node agent: reads the datastore, computes this node's policy and programs it
(nftables table "calico" per family, workload routes and interface settings). Programs
nothing before the datastore is in sync; reads back what it programmed earlier and
repairs or sweeps it. SIGTERM or SIGINT stops it and leaves the dataplane in place.

Options:
${DATASTORE_FLAGS_USAGE}
  --cleanup               remove everything palisade programmed on this host, then exit

Examples:
  palisade agent --datastore-dir /etc/palisade/resources --hostname node1
  FELIX_DATASTORETYPE=etcdv3 FELIX_ETCDENDPOINTS=http://10.0.0.5:2379 palisade agent
  palisade agent --cleanup

Exit codes: 0 stopped by a signal (or cleaned up), 1 failed, 2 bad usage,
${RESTART_EXIT_CODE} a configuration change needs a restart.`;

export async function runAgent(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...DATASTORE_FLAGS, cleanup: { type: 'boolean' } }, strict: true }));
  } catch (e) {
    console.error(`palisade agent: ${(e as Error).message}\n\n${AGENT_USAGE}`);
    return 2;
  }
  const log = createLogger();
  let config;
  try {
    config = configFromFlags(values, log);
  } catch (e) {
    console.error(`palisade agent: ${(e as Error).message}`);
    return 2;
  }
  log.level = createLogger({ severity: config.config.LogSeverityScreen }).level;

  if (values.cleanup) {
    try {
      await new DataplaneDriver({ config: config.config, log }).cleanup();
      return 0;
    } catch (e) {
      log.error({ error: (e as Error).message }, 'cleanup failed');
      return 1;
    }
  }

  return new Promise<number>((resolve) => {
    let done = false;
    const driver = new DataplaneDriver({ config: config.config, log });
    const plane = new ControlPlane({
      syncer: createSyncer(config.config, log),
      config,
      log,
      onMessages: (msgs) => driver.onMessages(msgs),
      onRestartNeeded: () => finish(RESTART_EXIT_CODE),
      onStatus: (status) => log.info({ status }, 'datastore sync status'),
    });
    const finish = (code: number) => {
      if (done) return;
      done = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      log.info({ code }, 'stopping; the dataplane stays as programmed');
      void Promise.allSettled([plane.stop(), driver.stop()]).then(() => resolve(code));
    };
    const onSignal = () => finish(0);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    log.info({ hostname: config.config.FelixHostname, datastore: config.config.DatastoreType }, 'palisade agent starting');
    driver.start();
    plane.start();
  });
}
