// Prometheus metrics with Felix's names where Felix has them (felix_*), and ours for the
// native backends (palisade_*). Served on PrometheusMetricsPort at /metrics.
import type { Server } from 'node:http';

import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';

import { guardedServer, type ServerTls } from '../health/http.js';
import type { Logger } from '../log.js';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly calcGraphUpdateTime = new Summary({
    name: 'felix_calc_graph_update_time_seconds',
    help: 'Seconds to process a batch of datastore updates in the calculation graph.',
    registers: [this.registry],
  });
  readonly applyTime = new Summary({
    name: 'felix_int_dataplane_apply_time_seconds',
    help: 'Seconds to apply the pending dataplane changes.',
    registers: [this.registry],
  });
  readonly applyFailures = new Counter({
    name: 'felix_int_dataplane_failures',
    help: 'Dataplane applies that failed (retried after a fresh read-back).',
    registers: [this.registry],
  });
  readonly activeLocalEndpoints = new Gauge({
    name: 'felix_active_local_endpoints',
    help: 'Local workload and host endpoints.',
    registers: [this.registry],
  });
  readonly activeLocalPolicies = new Gauge({
    name: 'felix_active_local_policies',
    help: 'Policies active on this host.',
    registers: [this.registry],
  });
  readonly activeLocalSelectors = new Gauge({
    name: 'felix_active_local_selectors',
    help: 'IP sets (selectors, named ports) in use on this host.',
    registers: [this.registry],
  });
  readonly resyncState = new Gauge({
    name: 'felix_resync_state',
    help: 'Datastore sync status: 1 wait-for-datastore, 2 resync-in-progress, 3 in-sync.',
    registers: [this.registry],
  });
  readonly info = new Gauge({
    name: 'palisade_info',
    help: "Always 1; the labels say what runs: version, node, datastore, rules backend and the cluster's Calico release.",
    labelNames: ['version', 'hostname', 'datastore_type', 'rules_backend', 'calico_version'],
    registers: [this.registry],
  });
  readonly lastApplyTime = new Gauge({
    name: 'palisade_last_apply_timestamp_seconds',
    help: 'When the last successful dataplane apply finished (Unix time).',
    registers: [this.registry],
  });
  readonly lastApplyDuration = new Gauge({
    name: 'palisade_last_apply_duration_seconds',
    help: 'How long the last successful dataplane apply took.',
    registers: [this.registry],
  });
  readonly lastApplyFailureTime = new Gauge({
    name: 'palisade_last_apply_failure_timestamp_seconds',
    help: 'When the last dataplane apply failed (Unix time; 0: none since start).',
    registers: [this.registry],
  });
  readonly rulesProgrammed = new Gauge({
    name: 'palisade_rules_programmed',
    help: 'Rules in our chains as last committed.',
    registers: [this.registry],
  });
  readonly invalidUpdates = new Counter({
    name: 'palisade_invalid_updates_total',
    help: 'Datastore updates refused by validation or parsing, by kind; outcome kept (the last good value stays in force: a policy, network set, host endpoint or tier) or dropped (the resource removed, as Felix does).',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  readonly driftRepairs = new Counter({
    name: 'palisade_drift_repairs_total',
    help: 'Chains and sets of ours found changed behind our back by a refresh, and repaired.',
    registers: [this.registry],
  });
  readonly memoryReductions = new Counter({
    name: 'palisade_memory_reductions_total',
    help: 'Memory-reducing collections asked of V8: one after the first apply, then when the old generation is fragmented.',
    registers: [this.registry],
  });
  readonly mallocTrims = new Counter({
    name: 'palisade_malloc_trims_total',
    help: 'Trims of the C allocator (malloc_trim) because its arenas held free memory.',
    registers: [this.registry],
  });
  readonly endpointUp = new Gauge({
    name: 'palisade_workload_endpoint_up',
    help: 'Workload endpoint status: 1 up, 0 down.',
    labelNames: ['interface'],
    registers: [this.registry],
  });
  readonly nftCommit = new Histogram({
    name: 'palisade_nft_commit_seconds',
    help: 'Seconds per native nftables transaction (netlink batch to ACK).',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly iptablesCommit = new Histogram({
    name: 'palisade_iptables_commit_seconds',
    help: 'Seconds per iptables-mode apply that changed rules (the restore transactions, native or exec, and the IP sets).',
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly iptablesLockAcquire = new Summary({
    name: 'felix_iptables_lock_acquire_secs',
    help: 'Time in seconds that it took to acquire the iptables lock(s).',
    registers: [this.registry],
  });
  readonly iptablesRestoreCalls = new Counter({
    name: 'felix_iptables_restore_calls',
    help: 'iptables-mode restore transactions (one per IP family that changed), as Felix counts iptables-restore runs.',
    registers: [this.registry],
  });
  readonly iptablesRestoreErrors = new Counter({
    name: 'felix_iptables_restore_errors',
    help: 'iptables-mode applies that failed (and were retried after a read-back).',
    registers: [this.registry],
  });
  /** Felix counts `ipset restore` calls; here: transactions or ipset batches that changed IP-set members. */
  readonly ipsetCalls = new Counter({
    name: 'felix_ipset_calls',
    help: 'Dataplane updates that changed IP-set members (one nftables transaction or ipset netlink batch each).',
    registers: [this.registry],
  });
  readonly nftRulesWritten = new Counter({
    name: 'palisade_nft_rules_written_total',
    help: 'Rules written by the nftables backend.',
    registers: [this.registry],
  });
  readonly nftElements = new Counter({
    name: 'palisade_nft_set_elements_changed_total',
    help: 'Set and map elements (in iptables mode, ipset members) added or removed.',
    registers: [this.registry],
  });
  readonly routeChanges = new Counter({
    name: 'palisade_routes_changed_total',
    help: 'Workload routes added or removed.',
    registers: [this.registry],
  });
  readonly wireguardBlocked = new Gauge({
    name: 'palisade_wireguard_required_blocked_peers',
    help: 'WireguardRequired: nodes whose pods this node cannot reach encrypted, and so does not reach (by IP version).',
    labelNames: ['ip_version'],
    registers: [this.registry],
  });
}

export const RESYNC_STATE = { 'wait-for-datastore': 1, 'resync-in-progress': 2, 'in-sync': 3 } as const;

/** `host` "" listens on every address, as Felix's PrometheusMetricsHost default. */
export function serveMetrics(
  m: { registry: AgentMetrics['registry'] },
  host: string,
  port: number,
  log: Logger,
  tls?: ServerTls,
): Promise<Server> {
  const server = guardedServer(
    'metrics',
    log,
    (req, res) => {
      if (req.path !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      m.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': m.registry.contentType }).end(text),
        (e: Error) => res.writeHead(500).end(e.message),
      );
    },
    tls,
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const listening = () => {
      log.info({ host, port }, 'metrics server listening');
      resolve(server);
    };
    if (host) server.listen(port, host, listening);
    else server.listen(port, listening);
  });
}
