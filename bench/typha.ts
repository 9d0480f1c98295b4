// `npm run bench -- typha`: palisade typha serving Felix's calc-graph workload (250,000
// endpoints, 10,000 policies, 100 profiles, as the update processors make them) to 200
// concurrent clients in 4 worker processes. The clients connect together, as nodes do
// after a Typha restart, and are served one shared compressed snapshot. Measured:
// connect -> every client in sync, server RSS, per-client server memory, and the time
// for one update to reach all 200 (p50/p99 over many updates).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { UpdateProcessors } from '../src/datastore/processors/index.js';
import { silentLogger } from '../src/log.js';
import type { Resource } from '../src/model/schemas.js';
import type { ResourceRef } from '../src/model/validate.js';
import { DEFAULT_TIMERS } from '../src/typha/server/connection.js';
import { serializedUpdate } from '../src/typha/server/feeder.js';
import { TyphaMetrics } from '../src/typha/server/metrics.js';
import { TyphaServer } from '../src/typha/server/server.js';
import { SnapshotCache } from '../src/typha/server/snapshot-cache.js';
import type { SerializedUpdate } from '../src/typha/syncproto.js';
import { calibrationMs, log, percentile, report } from './lib/report.js';
import { endpoint, profiles, tagPolicies } from './workloads/felix-calc.js';

const ENDPOINTS = 250_000;
const POLICIES = 10_000;
const CLIENTS = 200;
const WORKERS = 4;
const UPDATES = 60;

const rssMb = () => process.memoryUsage().rss / 1048576;
/** What the process holds: the JS heap and the memory outside it (buffers). */
const heldMb = () => {
  const m = process.memoryUsage();
  return (m.heapUsed + m.external) / 1048576;
};
/** heldMb() once garbage is collected and freed buffers are swept (that is concurrent). */
const settledHeldMb = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 300));
  }
  return heldMb();
};
const memLog = (stage: string) => {
  const m = process.memoryUsage();
  log(
    `memory ${stage}: rss ${rssMb().toFixed(0)} MB, heap ${(m.heapUsed / 1048576).toFixed(0)} MB, external ${(m.external / 1048576).toFixed(0)} MB`,
  );
};
const now = () => performance.timeOrigin + performance.now();
const gc = () => (globalThis as { gc?: () => void }).gc?.();

function feed(cache: SnapshotCache): { kvs: number; buildS: number } {
  const t0 = now();
  const processors = new UpdateProcessors(silentLogger);
  let revision = 0;
  let batch: SerializedUpdate[] = [];
  let kvs = 0;
  const add = (ref: ResourceRef, r: Resource) => {
    for (const u of processors.process(ref, r)) {
      if (u.value !== undefined) batch.push(serializedUpdate(u, String(++revision)));
    }
    if (batch.length >= 10_000) {
      kvs += batch.length;
      cache.onUpdates(batch);
      batch = [];
    }
  };
  for (const p of profiles()) add({ kind: 'Profile', name: p.metadata.name }, p);
  for (const p of tagPolicies(POLICIES)) add({ kind: 'GlobalNetworkPolicy', name: p.metadata.name }, p);
  for (let n = 0; n < ENDPOINTS; n++) {
    const w = endpoint(n, `node${n % 5000}`);
    add({ kind: 'WorkloadEndpoint', namespace: w.metadata.namespace, name: w.metadata.name }, w);
  }
  kvs += batch.length;
  cache.onUpdates(batch);
  cache.onStatus('in-sync');
  return { kvs, buildS: (now() - t0) / 1000 };
}

async function main(): Promise<void> {
  const calibration = calibrationMs();
  const metrics = new TyphaMetrics();
  const cache = new SnapshotCache({ metrics });
  log(`building Felix's workload as Typha's KVs: ${ENDPOINTS} endpoints, ${POLICIES} policies`);
  const { kvs, buildS } = feed(cache);
  if (kvs < ENDPOINTS + POLICIES) throw new Error(`only ${kvs} KVs: the workload did not convert`);
  gc();
  memLog('cache filled');
  // The shared snapshot, compressed, before the clients come (its size tells them where it ends).
  const t0 = now();
  let snap = await cache.snapshot();
  const compressed = snap.compressed();
  for await (const _ of compressed.read());
  const blobBytes = compressed.items.reduce((n, b) => n + b.length, 0);
  const encodeS = (now() - t0) / 1000;
  const snapshotMb = snap.bytes / 1048576;
  // The bench lets go of the snapshot: the server keeps it only as long as it shares it.
  snap = undefined as never;
  memLog('snapshot encoded and compressed');
  log(
    `${kvs} KVs: snapshot ${snapshotMb.toFixed(1)} MB, compressed ${(blobBytes / 1048576).toFixed(1)} MB, encoded in ${encodeS.toFixed(2)} s`,
  );

  const server = new TyphaServer({
    cache,
    log: silentLogger,
    version: 'bench',
    host: '127.0.0.1',
    port: 0,
    timers: { ...DEFAULT_TIMERS, pingMs: 600_000 },
    maxMessageKvs: 100,
    maxInboundBytes: 1 << 20,
    maxConns: 10_000,
    dropIntervalMs: 1000,
    shutdownTimeoutMs: 1000,
    shutdownMaxDropIntervalMs: 1000,
    metrics,
  });
  const port = await server.listen();
  gc();

  const here = fileURLToPath(new URL('.', import.meta.url));
  const inSync = new Map<number, number>();
  const arrivals = new Map<string, number[]>();
  const errors: string[] = [];
  const workers = Array.from({ length: WORKERS }, () =>
    fork(`${here}typha-clients.js`, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  for (const w of workers) {
    w.on('message', (m: { inSync?: number; update?: number; at: number; key?: string; error?: string }) => {
      if (m.error) errors.push(m.error);
      else if (m.inSync !== undefined) inSync.set(m.inSync, m.at);
      else if (m.key) (arrivals.get(m.key) ?? arrivals.set(m.key, []).get(m.key))?.push(m.at);
    });
  }
  await new Promise((r) => setTimeout(r, 500)); // workers loaded
  log(`${CLIENTS} clients connect`);
  const start = now();
  let peakRss = rssMb();
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb())), 50);
  workers.forEach((w, i) => w.send({ port, count: CLIENTS / WORKERS, first: i * (CLIENTS / WORKERS) }));
  while (inSync.size < CLIENTS && errors.length === 0 && now() - start < 120_000)
    await new Promise((r) => setTimeout(r, 10));
  if (errors.length || inSync.size < CLIENTS)
    throw new Error(`clients failed: ${inSync.size} in sync; ${errors.slice(0, 5).join('; ')}`);
  const snapshotS = (Math.max(...inSync.values()) - start) / 1000;
  log(`all ${CLIENTS} in sync after ${snapshotS.toFixed(2)} s`);

  memLog('all in sync');

  log(`${UPDATES} updates, each to all ${CLIENTS} clients`);
  const fanout: number[] = [];
  for (let i = 0; i < UPDATES; i++) {
    const key = `/calico/v1/config/BenchParam${i}`;
    const sent = now();
    cache.onUpdates([
      { key, value: Buffer.from(`v${i}`), revision: String(i), v3ResourceVersion: '', ttlNanos: 0, updateType: 1 },
    ]);
    const t = now();
    while ((arrivals.get(key)?.length ?? 0) < CLIENTS && now() - t < 5000) await new Promise((r) => setTimeout(r, 1));
    const got = arrivals.get(key) ?? [];
    if (got.length < CLIENTS) throw new Error(`update ${i} reached ${got.length} clients`);
    fanout.push(Math.max(...got) - sent);
    await new Promise((r) => setTimeout(r, 20));
  }
  clearInterval(sampler);
  fanout.sort((a, b) => a - b);
  // Per client: what the server holds with the clients connected, less what it holds
  // without them (the shared snapshot has expired by now in both cases).
  const withClients = await settledHeldMb();
  for (const w of workers) w.kill();
  while (server.connections) await new Promise((r) => setTimeout(r, 20));
  const withoutClients = await settledHeldMb();
  memLog('clients gone');
  server.close();

  report(
    'typha',
    {
      endpoints: ENDPOINTS,
      policies: POLICIES,
      clients: CLIENTS,
      kvs,
      build_kvs_s: buildS,
      snapshot_encode_s: encodeS,
      snapshot_mb: snapshotMb,
      snapshot_compressed_mb: blobBytes / 1048576,
      snapshot_to_all_clients_s: snapshotS,
      server_rss_mb: peakRss,
      per_client_memory_kb: ((withClients - withoutClients) * 1024) / CLIENTS,
      update_fanout_p50_ms: percentile(fanout, 50),
      update_fanout_p99_ms: percentile(fanout, 99),
      machine_calibration_ms: calibration,
    },
    [
      ['snapshot_to_all_clients_s', '<=', 10],
      ['server_rss_mb', '<=', 1024],
      ['update_fanout_p99_ms', '<=', 50],
    ],
  );
  process.exit(0);
}

await main();
