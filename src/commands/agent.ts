// `palisade agent`: the node agent. Configuration, datastore, calc graph, dataplane
// driver (nftables, routes, interface settings), until SIGTERM/SIGINT, which stop it and
// leave the programmed dataplane in place so traffic keeps flowing through a restart.
// `--cleanup` removes everything palisade programmed (our nftables tables, our routes).
import type { Server } from 'node:http';

import { ControlPlane } from '../agent/control-plane.js';
import { RESTART_EXIT_CODE } from '../config/config.js';
import { DataplaneDriver } from '../dataplane/driver.js';
import { createSyncer } from '../datastore/index.js';
import { HealthAggregator, serveHealth } from '../health/health.js';
import { AgentMetrics, RESYNC_STATE, serveMetrics } from '../metrics/metrics.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

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
  const start = startCommand('agent', AGENT_USAGE, argv, { cleanup: { type: 'boolean' } });
  if (start === 2) return 2;
  const { values, config, log } = start;

  if (values.cleanup) {
    try {
      await new DataplaneDriver({ config: config.config, log }).cleanup();
      return 0;
    } catch (e) {
      log.error({ error: (e as Error).message }, 'cleanup failed');
      return 1;
    }
  }

  const cfg = config.config;
  const metrics = new AgentMetrics();
  const health = new HealthAggregator();
  health.register('calc_graph', { live: true, ready: true, timeoutMs: 60_000 });
  health.register('int_dataplane', { live: true, ready: true, timeoutMs: 90_000 });
  const servers: Server[] = [];
  try {
    if (cfg.HealthEnabled) servers.push(await serveHealth(health, cfg.HealthHost, cfg.HealthPort, log));
    if (cfg.PrometheusMetricsEnabled) servers.push(await serveMetrics(metrics, cfg.PrometheusMetricsPort, log));
  } catch (e) {
    log.error({ error: (e as Error).message }, 'cannot serve health or metrics');
    for (const s of servers) s.close();
    return 1;
  }

  return new Promise<number>((resolve) => {
    let done = false;
    let inSync = false;
    let applied = false;
    const driver = new DataplaneDriver({
      config: cfg,
      log,
      onApplied: (r) => {
        applied = true;
        metrics.applyTime.observe(r.ms / 1000);
        if (r.nft.ops) metrics.nftCommit.observe(r.nft.commitMs / 1000);
        metrics.nftRulesWritten.inc(r.nft.rulesWritten);
        metrics.nftElements.inc(r.nft.elemsAdded + r.nft.elemsRemoved);
        if (r.nft.elemsAdded + r.nft.elemsRemoved) metrics.ipsetCalls.inc();
        metrics.routeChanges.inc(r.routes.added + r.routes.removed);
        metrics.activeLocalEndpoints.set(driver.state.weps.size + driver.state.heps.size);
        metrics.activeLocalPolicies.set(driver.state.policies.size);
        metrics.activeLocalSelectors.set(driver.state.ipsets.size);
        health.report('int_dataplane', { live: true, ready: true });
      },
      onApplyError: () => metrics.applyFailures.inc(),
      onEndpointStatus: (iface, up) => (up === undefined ? metrics.endpointUp.remove(iface) : metrics.endpointUp.set({ interface: iface }, up ? 1 : 0)),
    });
    const plane = new ControlPlane({
      syncer: createSyncer(cfg, log),
      config,
      log,
      onMessages: (msgs) => driver.onMessages(msgs),
      onRestartNeeded: () => finish(RESTART_EXIT_CODE),
      onStatus: (status) => {
        log.info({ status }, 'datastore sync status');
        metrics.resyncState.set(RESYNC_STATE[status]);
        inSync ||= status === 'in-sync';
        if (inSync) health.report('calc_graph', { live: true, ready: true });
      },
      onFlushTime: (s) => metrics.calcGraphUpdateTime.observe(s),
    });
    // Heartbeats: a stalled event loop stops them (liveness goes stale); a dataplane apply
    // stuck beyond its timeout stops the dataplane's.
    const heartbeat = setInterval(() => {
      health.report('calc_graph', { live: true, ready: inSync });
      if (!driver.stuckFor(90_000)) health.report('int_dataplane', { live: true, ready: applied });
    }, 5_000);
    health.report('calc_graph', { live: true, ready: false });
    health.report('int_dataplane', { live: true, ready: false });
    const finish = (code: number) => {
      if (done) return;
      done = true;
      clearInterval(heartbeat);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      log.info({ code }, 'stopping; the dataplane stays as programmed');
      for (const s of servers) s.close();
      void Promise.allSettled([plane.stop(), driver.stop()]).then(() => resolve(code));
    };
    const onSignal = () => finish(0);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    log.info({ hostname: cfg.FelixHostname, datastore: cfg.DatastoreType }, 'palisade agent starting');
    driver.start();
    plane.start();
  });
}
