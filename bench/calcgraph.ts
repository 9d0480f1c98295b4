// bench/calcgraph: Felix's own calc-graph benchmark (felix/calc/calc_graph_bench_test.go),
// at its scale (`calcgraph`: 250,000 endpoints, 200 local, 10,000 policies of 5 rules with
// has(marker) selectors, 100 namespaces) and scaled four times (`calcgraph-1m`: 1,000,000
// endpoints, 800 local, 40,000 policies); snapshot -> InSync -> flush, then the local
// endpoints deleted and flushed (Felix times both). Felix reports 3.39 s and 375 MB heap
// for the first.
//
// As in Felix's bench, the decoded input is built outside the timed region, but in
// batches of BATCH resources rather than all at once: the graph must not rely on its input
// being kept, and peak RSS is then the graph's own plus one batch.
import { getHeapSpaceStatistics } from 'node:v8';
import { CalcGraph } from '../src/calc/calc-graph.js';
import { IdAllocator } from '../src/calc/id-allocator.js';
import { UpdateProcessors } from '../src/datastore/processors/index.js';
import { silentLogger } from '../src/log.js';
import type { Resource } from '../src/model/schemas.js';
import { type ResourceRef, validateResource } from '../src/model/validate.js';
import { native } from '../src/native/load.js';
import { calibrationMs, log, nowNs, peakRssMb, report, type Target } from './lib/report.js';
import { endpoint, NAMESPACES, profiles, tagPolicies } from './workloads/felix-calc.js';

const WHERE_THE_TIME_GOES = 'docs/calc-graph.md, "Where the time goes" (phases, --cpu-prof)';
const WHERE_THE_MEMORY_GOES = 'docs/calc-graph.md, "Where the memory goes" (per endpoint)';

const SCALES: Record<string, { remote: number; local: number; policies: number; targets: Target[] }> = {
  '250k': {
    remote: 250_000,
    local: 200,
    policies: 10_000,
    targets: [
      ['total_s', '<=', 1.0, WHERE_THE_TIME_GOES],
      ['rss_mb', '<=', 300, WHERE_THE_MEMORY_GOES],
    ],
  },
  '1m': {
    remote: 1_000_000,
    local: 800,
    policies: 40_000,
    targets: [
      ['total_s', '<=', 5.0, WHERE_THE_TIME_GOES],
      ['rss_mb', '<=', 1000, WHERE_THE_MEMORY_GOES],
    ],
  },
};
const BATCH = 256;
const MB = 1024 * 1024;

function ref(r: Resource) {
  return {
    kind: r.kind,
    name: r.metadata.name,
    ...('namespace' in r.metadata && r.metadata.namespace ? { namespace: r.metadata.namespace as string } : {}),
  };
}

// What a syncer builds from an endpoint's key: a plain literal.
function endpointRef(r: ReturnType<typeof endpoint>) {
  return { kind: r.kind, namespace: r.metadata.namespace, name: r.metadata.name };
}

type Feed = (r: ResourceRef, v: Resource | undefined) => void;

/** Feeds `count` endpoints on `host`, built a batch at a time untimed; returns the fed time in ns. */
function feedEndpoints(feed: Feed, count: number, host: string): bigint {
  let spent = 0n;
  const batch: Array<ReturnType<typeof endpoint>> = [];
  const refs: Array<ReturnType<typeof endpointRef>> = [];
  for (let start = 0; start < count; start += BATCH) {
    batch.length = 0;
    refs.length = 0;
    for (let n = start; n < Math.min(count, start + BATCH); n++) {
      const r = endpoint(n, host);
      batch.push(r);
      refs.push(endpointRef(r));
    }
    const t = nowNs();
    for (let i = 0; i < batch.length; i++) feed(refs[i]!, batch[i]!);
    spent += nowNs() - t;
  }
  return spent;
}

// The JS heap a map of `count` endpoint keys to IDs takes (the member calculator's source
// interner), measured by building one like it: V8 cannot attribute a private field's heap.
function keyInternerBytes(count: number): number {
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  const ids = new IdAllocator();
  for (let n = 0; n < count; n++)
    ids.id(['wep:', 'remotehost', '/k8s/namespace-', n % NAMESPACES, '/wep-', n, '/eth0'].join(''));
  global.gc?.();
  const bytes = process.memoryUsage().heapUsed - before;
  if (ids.size !== count) throw new Error('interner lost keys');
  return bytes;
}

function counts(msgs: Array<{ type: string }>): Record<string, number> {
  const c: Record<string, number> = {};
  for (const m of msgs) c[m.type] = (c[m.type] ?? 0) + 1;
  return c;
}

function main(): void {
  const scaleName = process.argv[2] ?? '250k';
  const scale = SCALES[scaleName];
  if (!scale) throw new Error(`calcgraph: unknown scale ${scaleName}; known: ${Object.keys(SCALES).join(', ')}`);
  const { remote: REMOTE, local: LOCAL, policies: POLICIES } = scale;
  const calibration = calibrationMs();
  log(`${REMOTE} remote + ${LOCAL} local endpoints, ${POLICIES} policies (input built in batches of ${BATCH})`);
  let pols = tagPolicies(POLICIES);
  const profs = profiles();
  global.gc?.();
  const baseHeap = process.memoryUsage().heapUsed;
  const baseMalloc = native.mallocInUse();

  log('snapshot -> InSync -> flush');
  const graph = new CalcGraph('localhost');
  const processors = new UpdateProcessors(silentLogger);
  // The update processors are inside the measured time: Felix's syncer runs them too.
  const feed: Feed = (r, v) => {
    for (const u of processors.process(r, v)) graph.onUpdate(u);
  };
  let t = nowNs();
  for (const r of pols) feed(ref(r), r);
  pols = [];
  for (const r of profs) feed(ref(r), r);
  let fed = nowNs() - t;
  fed += feedEndpoints(feed, REMOTE, 'remotehost');
  fed += feedEndpoints(feed, LOCAL, 'localhost');
  t = nowNs();
  graph.onStatus('in-sync');
  const first = graph.flush();
  const snapshotS = Number(fed + nowNs() - t) / 1e9;
  const c1 = counts(first);
  log(`snapshot flushed in ${snapshotS.toFixed(3)} s: ${first.length} messages ${JSON.stringify(c1)}`);

  // Where the memory goes, with the graph live and the snapshot's messages dropped (both
  // garbage collections are outside the timed regions).
  const members = first.reduce((n, m) => n + (m.type === 'IPSetUpdate' ? m.members.length : 0), 0);
  const snapshotMessages = first.length;
  first.length = 0;
  global.gc?.();
  const heapBytes = process.memoryUsage().heapUsed - baseHeap;
  const nativeBytes = native.mallocInUse() - baseMalloc;
  const stats = graph.memberStats();
  const oldSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  log(`memory: heap ${(heapBytes / MB).toFixed(1)} MB, native ${(nativeBytes / MB).toFixed(1)} MB`);

  log('deleting the local endpoints');
  const t2 = nowNs();
  for (let n = 0; n < LOCAL; n++)
    feed(
      { kind: 'WorkloadEndpoint', namespace: `namespace-${n % NAMESPACES}`, name: `localhost-k8s-wep--${n}-eth0` },
      undefined,
    );
  const second = graph.flush();
  const deleteS = Number(nowNs() - t2) / 1e9;
  const rssMb = peakRssMb();
  const interner = keyInternerBytes(stats.sources);

  // Validation is timed apart (Felix's bench starts from decoded model objects too), after
  // the graph: validation is not on the graph's path. Endpoints and policies apart: an
  // endpoint's validation is most of a churning cluster's (syncer) CPU.
  // A second pass is timed: the agent validates all day, warm.
  const validateUs = (sample: Resource[]) => {
    let t0 = 0n;
    for (let pass = 0; pass < 2; pass++) {
      t0 = nowNs();
      for (const r of sample) if (!validateResource(r).ok) throw new Error(`invalid bench resource ${r.metadata.name}`);
    }
    return Number(nowNs() - t0) / 1000 / sample.length;
  };
  const endpointUs = validateUs(Array.from({ length: 20_000 }, (_, n) => endpoint(REMOTE + LOCAL + n, 'otherhost')));
  const policyUs = validateUs(tagPolicies(2_000));

  const endpoints = REMOTE + LOCAL;
  report(
    scaleName === '250k' ? 'calcgraph' : `calcgraph-${scaleName}`,
    {
      endpoints,
      local_endpoints: LOCAL,
      policies: POLICIES,
      snapshot_s: snapshotS,
      delete_local_s: deleteS,
      total_s: snapshotS + deleteS,
      messages: snapshotMessages + second.length,
      snapshot_messages: snapshotMessages,
      ipset_updates: c1.IPSetUpdate ?? 0,
      ipset_members: members,
      policy_updates: c1.ActivePolicyUpdate ?? 0,
      endpoint_updates: c1.WorkloadEndpointUpdate ?? 0,
      delete_messages: second.length,
      rss_mb: rssMb,
      js_heap_mb: heapBytes / MB,
      js_old_space_mb: (oldSpace?.space_used_size ?? 0) / MB,
      js_key_interner_mb: interner / MB,
      native_index_mb: nativeBytes / MB,
      native_index_matches: stats.index.matches,
      native_interned_strings: stats.index.strings,
      js_interned_label_strings: stats.labelStringsInterned,
      bytes_per_endpoint: Math.round((heapBytes + nativeBytes) / endpoints),
      validate_endpoint_us: endpointUs,
      validate_policy_us: policyUs,
      machine_calibration_ms: calibration,
    },
    scale.targets,
  );
}

main();
