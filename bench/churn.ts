// bench/churn (issue 21, target 3): a node agent's steady state. The agent's whole path -
// syncer callbacks, validation, update processors, calc graph, dataplane driver, rules
// backend, kernel - runs in a throwaway network namespace on Felix's 250,000-endpoint,
// 10,000-policy workload (200 endpoints local). After the first apply, a datastore stream
// of 5,000 updates per second for 30 s: remote endpoints created, relabelled and deleted
// in equal parts, and 1% policy edits. Reported: from each update's delivery by the syncer
// to the commit that programmed its effect (p50/p99; an endpoint change's is the IP-set
// members' commit, which goes ahead of the rules' when an apply has both, a policy edit's
// is the apply's end), the CPU the process used, and RSS at the start and end of the
// stream.
//
// The datastore is a stand-in syncer in this process: it hands over decoded updates
// (JSON.parse of the stored value, as the etcd syncer decodes) in batches of 50 every
// 10 ms. A real etcd on this 2-core machine would take a core of its own and measure its
// contention with the agent, not the agent. Needs root. `churn-iptables` runs the same in
// iptables mode (iptables-nft).
import { join, resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

import { ControlPlane } from '../src/agent/control-plane.js';
import { ConfigResolver } from '../src/config/config.js';
import { DataplaneDriver, type MessagesTaken } from '../src/dataplane/driver.js';
import { keyOf } from '../src/datastore/keys.js';
import type { Syncer, SyncerCallbacks, Update } from '../src/datastore/types.js';
import { silentLogger } from '../src/log.js';
import { native } from '../src/native/load.js';
import type { Resource } from '../src/model/schemas.js';
import { ArenaFreeAfterCollections } from './lib/arena-free.js';
import { blocksAt, describeBlocks, type LoopBlock, LoopBlockTracer } from './lib/loop-blocks.js';
import { isMajorGc, type MemoryReducer, type TrimResult } from '../src/agent/memory-reducer.js';
import { afterFirstApply, runInNetns } from './lib/netns.js';
import { calibrationMs, log, percentile, report, type Target } from './lib/report.js';
import { Samples } from './lib/samples.js';
import { setLayoutProbe } from './lib/set-layout-probe.js';
import { endpoint, MARKERS, profiles, tagPolicies } from './workloads/felix-calc.js';

const REMOTE = 250_000;
const LOCAL = 200;
const POLICIES = 10_000;
const RATE = 5_000;
// `--seconds N`: a longer run (bench churn-soak) shows whether RSS levels off.
const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg >= 0 ? Number(process.argv[secondsArg + 1]) : 30;
if (!(SECONDS >= 10)) throw new Error('churn: --seconds wants a number of seconds >= 10');
// `--heap-snapshots DIR`: V8 heap snapshots of the agent after a full GC at the stream's
// start and end (DIR/churn-start.heapsnapshot, churn-end), for `scripts/heap-diff.mjs`:
// what the live heap gained over the run, by constructor.
const snapArg = process.argv.indexOf('--heap-snapshots');
const SNAPSHOT_DIR = snapArg >= 0 ? resolve(process.argv[snapArg + 1] ?? '') : undefined;
/** RSS is sampled this often, for the soak's shape. */
const SAMPLE_S = 30;
const TICK_MS = 10;
/** Stream changes built ahead and not yet delivered, at most (26 s at RATE). */
const RING = 1 << 17;
const PER_TICK = (RATE * TICK_MS) / 1000;
/**
 * The stream is built this far ahead of the ticks: two ticks' worth. A real syncer decodes
 * what it reads within the tick; changes built a second ahead (as this bench did) outlived
 * two scavenges and were promoted, ~2.5 MB of stored JSON a second in the agent's old
 * generation, which a real datastore does not put there (twice the major collections).
 */
const AHEAD = 2 * PER_TICK;
const RSS_EXPLAINED =
  'docs/dataplane.md, "Memory under churn" (the live heap holds; RSS follows the old generation up to its GOGC bound and down at a reduction) and "The memory reducer" (at most one each 2 min)';
/**
 * RSS is compared from this far into the stream at the earliest, and not before the end of
 * the stream's first full collection (or half the run, if none came by then): the stream
 * starts on a heap just collected, and until its first full collection V8 grows the old
 * generation to the bound the agent sets (GOGC, src/agent/runtime-setup.ts) whatever the
 * agent keeps. Growth after that is what the agent keeps.
 */
const WARMUP_S = 5;

interface Inside {
  mode: string;
  snapshotToFirstApplyS: number;
  updates: number;
  measured: number;
  noDataplaneEffect: number;
  /** Percentiles (50, 90, 99, 100) of update -> kernel, of the applies and of the graph flushes, ms. */
  latencyMs: number[];
  /** The same, of the policy edits alone. */
  editLatencyMs: number[];
  /** The same, of the endpoint changes alone (each changes IP-set members). */
  endpointLatencyMs: number[];
  applyMs: number[];
  commitMs: number[];
  /** The same, of the commits that wrote rules (the kernel validates the table) and of the others. */
  commitWithRulesMs: number[];
  commitElementsOnlyMs: number[];
  commitsWithRules: number;
  /** iptables mode: the restores' share of the commits with rules (parse and kernel commit). */
  restoreMs: number[];
  /** Of which the transport's reading of the kernel and the kernel's commit. */
  restoreReadMs: number[];
  restoreCommitMs: number[];
  /** iptables mode: batches of member changes programmed beside a restore in flight, and their commits. */
  besideBatches: number;
  besideCommitMs: number[];
  /** How the driver took the graph's flushes while measuring (MessagesTaken). */
  taken: Record<string, number>;
  flushMs: number[];
  applies: number;
  cpuCores: number;
  cpuUserS: number;
  cpuSystemS: number;
  rssStartMb: number;
  rssWarmMb: number;
  /** When RSS was sampled for the comparison (WARMUP_S), seconds into the stream. */
  warmupS: number;
  mallocWarmMb: number;
  heapCommittedStartMb: number;
  heapCommittedWarmMb: number;
  heapCommittedEndMb: number;
  mallocEndMb: number;
  rssEndMb: number;
  /** After a full collection, as rssStartMb is: what the agent holds, not where its collector was. */
  rssEndCollectedMb: number;
  heapCommittedEndCollectedMb: number;
  /** V8's heap spaces, committed/used MB, after a full collection at the stream's start and end. */
  heapSpaces: string;
  maxTickGapMs: number;
  /** The stream's longest blocks of the event loop, with the collector's share of each. */
  loopBlocks: LoopBlock[];
  /** RSS (MB) every SAMPLE_S seconds of the stream. */
  rssSamplesMb: number[];
  /** The highest RSS seen at a tick of the stream. */
  rssPeakMb: number;
  heapStartMb: number;
  heapEndMb: number;
  /** Memory-reducing collections the agent's reducer asked for during the stream. */
  memoryReductions: number;
  /** The reducer's trims of the C allocator during the stream. */
  mallocTrims: number;
  /** Each trim's time and the RSS around it, the one after the first apply included. */
  mallocTrimRss: string;
  /** The arenas' free bytes a moment after each full collection of the stream. */
  mallocFreeAfterCollections: string;
  achievedRate: number;
  intervalSetsCommitMs: number;
  hashSetsCommitMs: number;
}

const MB = 1024 * 1024;

function keyOfResource(r: Resource): string {
  const key = keyOf({
    kind: r.kind,
    name: r.metadata.name,
    ...('namespace' in r.metadata && r.metadata.namespace ? { namespace: r.metadata.namespace as string } : {}),
  });
  if (!key) throw new Error(`no key for ${r.kind}`);
  return key;
}

/** A snapshot update: the generated object is the decoded value. */
function updateOf(r: Resource): Update {
  return { key: keyOfResource(r), value: r, revision: '0' };
}

/** A change as the datastore stores it: its key and its JSON (null: a delete). */
interface Stored {
  key: string;
  json: string | null;
}

const stored = (r: Resource, deleted = false): Stored => ({
  key: keyOfResource(r),
  json: deleted ? null : JSON.stringify(r),
});

/** The datastore: a snapshot, in-sync, then whatever the stream sends. */
class StreamSyncer implements Syncer {
  cb: SyncerCallbacks | undefined;
  start(callbacks: SyncerCallbacks): void {
    this.cb = callbacks;
    void this.#snapshot();
  }
  async stop(): Promise<void> {
    this.cb = undefined;
  }
  async #snapshot(): Promise<void> {
    const cb = this.cb!;
    cb.onStatusUpdated('resync-in-progress');
    const batch: Update[] = [];
    const send = async () => {
      cb.onUpdates(batch.splice(0));
      await new Promise((r) => setImmediate(r));
    };
    for (const r of [...tagPolicies(POLICIES), ...profiles()]) {
      batch.push(updateOf(r));
      if (batch.length === 1000) await send();
    }
    for (let n = 0; n < REMOTE + LOCAL; n++) {
      batch.push(updateOf(n < REMOTE ? endpoint(n, 'remotehost') : endpoint(n - REMOTE, 'localhost')));
      if (batch.length === 1000) await send();
    }
    await send();
    cb.onStatusUpdated('in-sync');
  }
}

/**
 * The k-th change of the stream: create, relabel, delete in turn; every 100th a policy
 * edit. Built two ticks ahead of its delivery, after a tick's batch is handed over, so
 * the stream's own cost on the delivery path is only decoding.
 */
let lastCreated: ReturnType<typeof endpoint> | undefined;

const isPolicyEdit = (k: number) => k % 100 === 99;

function change(k: number): Stored {
  if (isPolicyEdit(k)) {
    // An edit of an existing policy's rules (its selector stays): tag-pol-<j>, each rule's
    // source marker shifted by the edit's number.
    const j = (k * 7919) % POLICIES;
    const [p] = tagPolicies(1);
    p!.metadata.name = `tag-pol-${j}`;
    p!.spec.selector = `has(${MARKERS[j % MARKERS.length]})`;
    p!.spec.ingress = Array.from({ length: 5 }, (_, r) => ({
      action: 'Allow' as const,
      source: { selector: `has(${MARKERS[(j + r + k) % MARKERS.length]})` },
    }));
    return stored(p!);
  }
  // The endpoint changes count apart from the policy edits: an edit standing in for a
  // create, a relabel or a delete would unbalance them (a skipped delete left an endpoint
  // for good, and the cluster grew by 1 in 300 updates once the stream deleted its own).
  const j = k - Math.floor((k + 1) / 100);
  const n = Math.floor(j / 3);
  switch (j % 3) {
    case 0:
      lastCreated = endpoint(REMOTE + LOCAL + n, 'remotehost');
      return stored(lastCreated);
    case 1: {
      // The endpoint just created, moved to another marker (so to other IP sets): the
      // cluster keeps its size and its memberships, and RSS has a steady state to reach.
      const r = structuredClone(lastCreated!);
      const labels = r.metadata.labels!;
      for (const m of MARKERS) delete labels[m];
      labels[MARKERS[(n + 7) % MARKERS.length] as string] = 'true';
      return stored(r);
    }
    default:
      // The oldest endpoint: the snapshot's first, then those the stream created (a long
      // run must not delete the same endpoint twice while creating ever more).
      return stored(endpoint(n < REMOTE ? n : REMOTE + LOCAL + n - REMOTE, 'remotehost'), true);
  }
}

async function inside(mode: string): Promise<Inside> {
  // FELIX_* variables reach the agent as they would Felix (FELIX_IPSETSREFRESHINTERVAL=15
  // brings the refresh into a 30 s run).
  const resolver = new ConfigResolver({
    env: process.env,
    flags: {
      FelixHostname: 'localhost',
      Ipv6Support: 'false',
      NFTablesMode: mode === 'iptables' ? 'Disabled' : 'Enabled',
      IptablesBackend: 'NFT',
    },
  });
  const syncer = new StreamSyncer();
  let driver: DataplaneDriver | undefined;
  // Delivery batches: when each was handed over, and its first update's sequence number.
  // The bench's own records of the stream are allocated whole before RSS is first read
  // (arrays grown by pushing, three million entries each, were a growth of the bench's;
  // the timings of applies and flushes are Samples, lib/samples.ts, for the same reason).
  let deliveredAt = new Float64Array(0);
  let delivered = 0;
  // Flushes of the graph not yet known to be programmed: updates [from, to), handed to the driver when.
  let flushed = 0;
  const waiting: Array<{ from: number; to: number; at: number; editsOnly?: boolean }> = [];
  // Flushes whose members went beside an apply in flight, in the order they land.
  const besideWaiting: Array<{ from: number; to: number; how: MessagesTaken }> = [];
  // At most one apply, one flush and one commit beside an apply a tick.
  const perTick = () => new Samples((SECONDS * 1000) / TICK_MS);
  const besideCommitMs = perTick();
  const taken: Record<MessagesTaken, number> = { now: 0, held: 0, beside: 0, split: 0, partly: 0 };
  let noEffect = 0;
  let latency = new Float64Array(0);
  let measured = 0;
  // The policy edits' share of it: they wait for the rules' commit.
  let editLatency = new Float64Array(0);
  // Which of the measured latencies are policy edits'.
  let editAt = new Uint8Array(0);
  let edits = 0;
  let measuring = false;
  let firstApply: () => void = () => {};
  const firstApplied = new Promise<void>((r) => (firstApply = r));
  let applies = 0;
  let reducer: MemoryReducer | undefined;
  // The reducer's trims of the C allocator: when (s into the stream) and RSS around each.
  const trims: string[] = [];
  let streamAt = Number.POSITIVE_INFINITY;
  const onTrim = (t: TrimResult) => {
    const at = performance.now() - streamAt;
    const rss = `${(t.rssBefore / MB).toFixed(0)} -> ${(t.rssAfter / MB).toFixed(0)} MB (${(t.mallocFree / MB).toFixed(0)} MB free in the arenas)`;
    trims.push(`${at >= 0 ? `${Math.round(at / 1000)} s` : 'before the stream'}: ${rss}`);
  };
  const applyMs = perTick();
  const flushMs = perTick();
  const commitMs = perTick();
  const commitWithRulesMs = perTick();
  const commitElementsOnlyMs = perTick();
  const restoreMs = perTick();
  const restoreReadMs = perTick();
  const restoreCommitMs = perTick();
  let pendingFlush: { from: number; to: number } | undefined;
  const settleFlush = () => {
    if (pendingFlush && measuring) noEffect += pendingFlush.to - pendingFlush.from;
    pendingFlush = undefined;
  };
  const plane = new ControlPlane({
    syncer,
    config: resolver,
    log: silentLogger,
    onConfigResolved: () => {
      driver = new DataplaneDriver({
        config: resolver.config,
        log: silentLogger,
        takeOverFromFelix: false,
        onApplyError: (e) => log(`apply failed: ${(e.stack ?? e.message).slice(0, 900)}`),
        // Only endpoint changes go beside (a policy edit's flush is held): in the kernel when they land.
        onMembersBeside: (r) => {
          const f = besideWaiting.shift();
          if (!f || !measuring) return;
          besideCommitMs.push(r.commitMs);
          if (f.how === 'partly') return;
          for (let b = f.from; b < f.to; b++)
            if (!isPolicyEdit(b)) latency[measured++] = r.at - (deliveredAt[b] as number);
        },
        onApplied: (rep) => {
          applies++;
          if (measuring) {
            applyMs.push(rep.ms);
            commitMs.push(rep.rules.commitMs);
            // Members committed ahead of the rules count as a commit of elements only.
            const ahead = rep.rules.rulesWritten > 0 ? rep.rules.membersLanded : undefined;
            if (ahead) commitElementsOnlyMs.push(ahead.commitMs);
            const rest = rep.rules.commitMs - (ahead?.commitMs ?? 0);
            (rep.rules.rulesWritten > 0 ? commitWithRulesMs : commitElementsOnlyMs).push(rest);
            if (rep.rules.restoreMs !== undefined) restoreMs.push(rep.rules.restoreMs);
            if (rep.rules.restoreReadMs !== undefined) restoreReadMs.push(rep.rules.restoreReadMs);
            if (rep.rules.restoreCommitMs !== undefined) restoreCommitMs.push(rep.rules.restoreCommitMs);
            if (rep.ms > 200) log(`slow apply: ${JSON.stringify(rep)}`);
          }
          const now = performance.now();
          const started = now - rep.ms;
          // An endpoint change of the stream (all remote) changes IP-set members only: it
          // is in the kernel when they are, which may be a commit ahead of the rules.
          const membersAt = rep.rules.membersLanded?.at ?? now;
          if (applies === 1) reducer = afterFirstApply(onTrim);
          firstApply();
          while (waiting.length && (waiting[0] as { at: number }).at <= started) {
            const f = waiting.shift()!;
            if (!measuring) continue;
            for (let b = f.from; b < f.to; b++) {
              const edit = isPolicyEdit(b);
              if (f.editsOnly && !edit) continue;
              const ms = (edit ? now : membersAt) - (deliveredAt[b] as number);
              if (edit) editLatency[edits++] = ms;
              if (edit) editAt[measured] = 1;
              latency[measured++] = ms;
            }
          }
        },
      });
      driver.start();
    },
    onFlushTime: (seconds) => {
      if (measuring) flushMs.push(seconds * 1000);
      settleFlush();
      pendingFlush = { from: flushed, to: delivered };
      flushed = delivered;
    },
    onMessages: (msgs) => {
      const flush = pendingFlush;
      pendingFlush = undefined;
      const at = performance.now();
      const how = driver?.onMessages(msgs) ?? 'now';
      if (measuring) taken[how]++;
      if (!flush) return;
      // An endpoint change lands with its members (beside the apply in flight, or split
      // from a policy edit held for the next apply); measured at the apply when any member
      // change of its flush was held ("partly").
      if (how === 'beside' || how === 'split' || how === 'partly') besideWaiting.push({ ...flush, how });
      if (how !== 'beside') waiting.push({ ...flush, at, ...(how === 'split' ? { editsOnly: true } : {}) });
    },
    onRestartNeeded: () => {
      throw new Error('restart needed');
    },
  });
  const t0 = performance.now();
  plane.start();
  const firstTimeout = setTimeout(() => {
    log('no first apply after 240 s');
    process.exit(1);
  }, 240_000);
  await firstApplied;
  clearTimeout(firstTimeout);
  log(`first apply after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const snapshotToFirstApplyS = (performance.now() - t0) / 1000;
  const total = RATE * SECONDS;
  // The next change to deliver.
  let k = 0;
  // Written through now, so their pages are resident before the first RSS reading.
  deliveredAt = new Float64Array(total).fill(-1);
  latency = new Float64Array(total).fill(-1);
  editLatency = new Float64Array(Math.ceil(total / 100)).fill(-1);
  editAt = new Uint8Array(total).fill(0);
  // The stream's changes not yet delivered, in a ring (a stall longer than RING / RATE
  // seconds would overrun it: the bench then fails rather than measure a wrapped stream).
  const stream: Array<Stored | undefined> = new Array(RING);
  let built = 0;
  const buildTo = (end: number) => {
    for (end = Math.min(total, end); built < end; built++) {
      if (built - k >= RING) throw new Error('churn: the stream ring overran (a stall of more than 26 s)');
      stream[built % RING] = change(built);
    }
  };
  buildTo(AHEAD);
  // Let the first apply's follow-ups (and its garbage) settle before the stream starts.
  await new Promise((r) => setTimeout(r, 2000));
  await collectReducing();
  if (SNAPSHOT_DIR) writeHeapSnapshot(join(SNAPSHOT_DIR, 'churn-start.heapsnapshot'));
  const { rss: rssStart, heapTotal: heapTotalStart } = process.memoryUsage();
  const spacesStart = heapSpaces();
  let rssWarm = 0;
  let warmAt = 0;
  let majorSeen = false;
  const majors = new PerformanceObserver((list) => {
    if (list.getEntries().some(isMajorGc)) majorSeen = true;
  });
  majors.observe({ entryTypes: ['gc'] });
  const arenaFree = new ArenaFreeAfterCollections();
  arenaFree.start();
  let mallocWarm = 0;
  let heapTotalWarm = 0;
  const rssSamples: number[] = [];
  let rssPeak = 0;
  // The longest time between two stream ticks (due every TICK_MS): how long the agent
  // held the event loop at worst.
  let maxTickGap = 0;
  const heapStart = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const blocks = new LoopBlockTracer(10);
  blocks.start();
  const s0 = performance.now();
  streamAt = s0;
  const reductionsBefore = reducer?.reductions ?? 0;
  const trimsBefore = reducer?.trims ?? 0;
  measuring = true;
  await new Promise<void>((done) => {
    let lastTick = performance.now();
    const tick = () => {
      const elapsed = performance.now() - s0;
      maxTickGap = Math.max(maxTickGap, performance.now() - lastTick);
      lastTick = performance.now();
      if (elapsed >= SECONDS * 1000) return done();
      // Catch up to the rate if a tick came late (the stream does not slow for the agent).
      const due = Math.min(Math.floor((elapsed / 1000) * RATE) + PER_TICK, total);
      // After a stall longer than AHEAD the stream is built on the delivery path.
      buildTo(due);
      const batch: Update[] = [];
      const now = performance.now();
      while (k < due) {
        const c = stream[k % RING] as Stored;
        // The syncer's share of the path: decoding the stored value.
        batch.push({
          key: c.key,
          value: c.json === null ? null : (JSON.parse(c.json) as unknown),
          revision: String(k),
        });
        stream[k++ % RING] = undefined;
        deliveredAt[delivered++] = now;
      }
      if (!rssWarm && elapsed >= WARMUP_S * 1000 && (majorSeen || elapsed >= SECONDS * 500)) {
        warmAt = elapsed;
        const m = process.memoryUsage();
        rssWarm = m.rss;
        heapTotalWarm = m.heapTotal;
        mallocWarm = native.mallocInUse();
      }
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      if (elapsed >= (rssSamples.length + 1) * SAMPLE_S * 1000) rssSamples.push(process.memoryUsage().rss / MB);
      if (batch.length) syncer.cb?.onUpdates(batch);
      buildTo(k + AHEAD);
      setTimeout(tick, TICK_MS);
    };
    tick();
  });
  const wall = (performance.now() - s0) / 1000;
  majors.disconnect();
  arenaFree.stop();
  const loopBlocks = blocks.stop(3);
  // The last updates' applies.
  const deadline = performance.now() + 5000;
  while ((waiting.length || besideWaiting.length || pendingFlush) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    if (pendingFlush && !waiting.length) settleFlush();
  }
  const cpu = process.cpuUsage(cpu0);
  const { rss: rssEnd, heapTotal: heapTotalEnd } = process.memoryUsage();
  const mallocEnd = native.mallocInUse();
  await collectReducing();
  const { heapUsed: heapEnd, rss: rssEndCollected, heapTotal: heapTotalEndCollected } = process.memoryUsage();
  const spacesEnd = heapSpaces();
  if (SNAPSHOT_DIR) writeHeapSnapshot(join(SNAPSHOT_DIR, 'churn-end.heapsnapshot'));
  await plane.stop();
  await driver?.stop();
  // The kernel's share, by set layout: this workload's 29 selector sets hold the cluster's
  // 250,000 addresses, and a batch of the stream changes a few members of most of them.
  const layout = await setLayoutProbe(29, Math.round(REMOTE / 29), 6);
  return {
    mode,
    snapshotToFirstApplyS,
    updates: k,
    measured,
    noDataplaneEffect: noEffect,
    latencyMs: pcts(latency.subarray(0, measured)),
    editLatencyMs: pcts(editLatency.subarray(0, edits)),
    endpointLatencyMs: pcts(latency.subarray(0, measured).filter((_, i) => !editAt[i])),
    applyMs: pcts(applyMs.values),
    commitMs: pcts(commitMs.values),
    commitWithRulesMs: pcts(commitWithRulesMs.values),
    commitElementsOnlyMs: pcts(commitElementsOnlyMs.values),
    commitsWithRules: commitWithRulesMs.length,
    restoreMs: pcts(restoreMs.values),
    restoreReadMs: pcts(restoreReadMs.values),
    restoreCommitMs: pcts(restoreCommitMs.values),
    besideBatches: besideCommitMs.length,
    besideCommitMs: pcts(besideCommitMs.values),
    taken,
    flushMs: pcts(flushMs.values),
    applies,
    cpuCores: (cpu.user + cpu.system) / 1e6 / wall,
    cpuUserS: cpu.user / 1e6,
    cpuSystemS: cpu.system / 1e6,
    rssStartMb: rssStart / MB,
    rssWarmMb: rssWarm / MB,
    warmupS: warmAt / 1000,
    mallocWarmMb: mallocWarm / MB,
    heapCommittedStartMb: heapTotalStart / MB,
    heapCommittedWarmMb: heapTotalWarm / MB,
    heapCommittedEndMb: heapTotalEnd / MB,
    mallocEndMb: mallocEnd / MB,
    rssEndMb: rssEnd / MB,
    rssEndCollectedMb: rssEndCollected / MB,
    heapSpaces: `${spacesStart} -> ${spacesEnd}`,
    heapCommittedEndCollectedMb: heapTotalEndCollected / MB,
    rssSamplesMb: rssSamples,
    rssPeakMb: rssPeak / MB,
    maxTickGapMs: maxTickGap,
    loopBlocks,
    heapStartMb: heapStart / MB,
    heapEndMb: heapEnd / MB,
    memoryReductions: (reducer?.reductions ?? 0) - reductionsBefore,
    mallocTrims: (reducer?.trims ?? 0) - trimsBefore,
    mallocTrimRss: trims.join('; ') || 'none',
    mallocFreeAfterCollections: arenaFree.summary(),
    achievedRate: k / wall,
    intervalSetsCommitMs: layout.intervalMs,
    hashSetsCommitMs: layout.hashMs,
  };
}

/**
 * What the agent keeps: a memory-reducing full collection (what the agent's memory
 * reducer asks V8 for, src/agent/memory-reducer.ts), done at once, then time for V8's
 * background task to hand the emptied pages back, and the C allocator trimmed as the
 * reducer does. The same at the stream's start and end, so the two compare.
 */
async function collectReducing(): Promise<void> {
  native.memoryPressure('critical');
  await new Promise((r) => setTimeout(r, 500));
  await native.mallocTrim();
}

const median3 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[1] as number;

/** Each V8 heap space that holds a MB or more: "old 230/180", committed and used. */
function heapSpaces(): string {
  return getHeapSpaceStatistics()
    .filter((s) => s.space_size >= MB)
    .map(
      (s) =>
        `${s.space_name.replace(/_space$/, '')} ${Math.round(s.space_size / MB)}/${Math.round(s.space_used_size / MB)}`,
    )
    .join(', ');
}

function pcts(xs: ArrayLike<number>): number[] {
  const sorted = Float64Array.from(xs).sort();
  return [50, 90, 99, 100].map((p) => percentile(sorted, p));
}

function runInside(mode: string): Inside {
  return runInNetns<Inside>({
    script: import.meta.url,
    args: ['--inside', mode, '--seconds', String(SECONDS), ...(SNAPSHOT_DIR ? ['--heap-snapshots', SNAPSHOT_DIR] : [])],
    what: 'churn',
    announce: (ns) =>
      `${mode}: agent in netns ${ns}, ${REMOTE + LOCAL} endpoints, ${POLICIES} policies, then ${RATE}/s for ${SECONDS} s`,
    prefix: 'palisade-churn',
    maxBuffer: 256 << 20,
  });
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--inside');
  if (i >= 0) {
    const out = JSON.stringify(await inside(process.argv[i + 1] as string));
    // Exit once stdout is flushed (the stream's timers and the driver's would keep the process up).
    process.stdout.write(out, () => process.exit(0));
    return;
  }
  const mode = process.argv[2] === 'iptables' ? 'iptables' : 'nftables';
  if (process.getuid?.() !== 0) {
    console.error('bench churn: SKIPPED: needs root (the agent programs a throwaway network namespace)');
    return;
  }
  const calibration = calibrationMs();
  const r = runInside(mode);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const soak = secondsArg >= 0;
  // The soak's shape: RSS every SAMPLE_S seconds, and its growth over the second half
  // (a heap still sizing itself grows in the first): the median of its last three samples
  // less that of its first three. Single readings compared the phases of the reducer's
  // cycle (a reduction's dip is one sample in four), not the memory held.
  const secondHalf = r.rssSamplesMb.slice(Math.floor(r.rssSamplesMb.length / 2));
  const soakFigures: Record<string, number> = {};
  if (soak) {
    r.rssSamplesMb.forEach((mb, n) => (soakFigures[`rss_at_${(n + 1) * SAMPLE_S}s_mb`] = r3(mb)));
    if (secondHalf.length >= 6)
      soakFigures.rss_growth_second_half_mb = r3(median3(secondHalf.slice(-3)) - median3(secondHalf.slice(0, 3)));
  }
  report(
    `${mode === 'nftables' ? 'churn' : 'churn-iptables'}${soak ? '-soak' : ''}`,
    {
      mode: r.mode,
      endpoints: REMOTE + LOCAL,
      policies: POLICIES,
      rate_per_s: RATE,
      seconds: SECONDS,
      updates_sent: r.updates,
      achieved_rate_per_s: Math.round(r.achievedRate),
      updates_measured: r.measured,
      updates_without_dataplane_effect: r.noDataplaneEffect,
      applies: r.applies,
      snapshot_to_first_apply_s: r3(r.snapshotToFirstApplyS),
      update_to_kernel_p50_ms: r3(r.latencyMs[0]!),
      update_to_kernel_p90_ms: r3(r.latencyMs[1]!),
      update_to_kernel_p99_ms: r3(r.latencyMs[2]!),
      update_to_kernel_max_ms: r3(r.latencyMs[3]!),
      endpoint_change_to_kernel_p50_ms: r3(r.endpointLatencyMs[0]!),
      endpoint_change_to_kernel_p99_ms: r3(r.endpointLatencyMs[2]!),
      endpoint_change_to_kernel_max_ms: r3(r.endpointLatencyMs[3]!),
      policy_edit_to_kernel_p50_ms: r3(r.editLatencyMs[0]!),
      policy_edit_to_kernel_p99_ms: r3(r.editLatencyMs[2]!),
      apply_p50_ms: r3(r.applyMs[0]!),
      apply_p99_ms: r3(r.applyMs[2]!),
      apply_max_ms: r3(r.applyMs[3]!),
      kernel_commit_p50_ms: r3(r.commitMs[0]!),
      kernel_commit_p99_ms: r3(r.commitMs[2]!),
      // A commit that writes rules pays the kernel's validation of the whole table (docs/dataplane.md).
      commits_with_rules: r.commitsWithRules,
      kernel_commit_with_rules_p50_ms: r3(r.commitWithRulesMs[0]!),
      kernel_commit_elements_only_p50_ms: r3(r.commitElementsOnlyMs[0]!),
      ...(r.mode === 'iptables'
        ? {
            iptables_restore_p50_ms: r3(r.restoreMs[0]!),
            iptables_restore_read_p50_ms: r3(r.restoreReadMs[0] ?? 0),
            iptables_restore_kernel_commit_p50_ms: r3(r.restoreCommitMs[0] ?? 0),
            members_beside_batches: r.besideBatches,
            members_beside_commit_p50_ms: r.besideBatches ? r3(r.besideCommitMs[0]!) : 0,
            flushes_taken: Object.entries(r.taken)
              .map(([how, n]) => `${how} ${n}`)
              .join(', '),
          }
        : {}),
      kernel_29_interval_sets_plus_6_ms: r3(r.intervalSetsCommitMs),
      kernel_29_hash_sets_plus_6_ms: r3(r.hashSetsCommitMs),
      graph_flush_p50_ms: r3(r.flushMs[0]!),
      graph_flush_p99_ms: r3(r.flushMs[2]!),
      event_loop_max_tick_gap_ms: r3(r.maxTickGapMs),
      longest_blocks: describeBlocks(r.loopBlocks),
      longest_blocks_at: blocksAt(r.loopBlocks),
      cpu_cores: r3(r.cpuCores),
      cpu_user_s: r3(r.cpuUserS),
      cpu_system_s: r3(r.cpuSystemS),
      rss_start_mb: r3(r.rssStartMb),
      warmup_s: r3(r.warmupS),
      rss_after_warmup_mb: r3(r.rssWarmMb),
      rss_end_mb: r3(r.rssEndMb),
      rss_peak_mb: r3(r.rssPeakMb),
      rss_growth_after_warmup_mb: r3(r.rssEndMb - r.rssWarmMb),
      rss_end_collected_mb: r3(r.rssEndCollectedMb),
      rss_growth_collected_mb: r3(r.rssEndCollectedMb - r.rssStartMb),
      heap_committed_start_mb: r3(r.heapCommittedStartMb),
      heap_committed_after_warmup_mb: r3(r.heapCommittedWarmMb),
      heap_committed_end_mb: r3(r.heapCommittedEndMb),
      heap_committed_end_collected_mb: r3(r.heapCommittedEndCollectedMb),
      heap_spaces_committed_used_mb: r.heapSpaces,
      native_malloc_after_warmup_mb: r3(r.mallocWarmMb),
      native_malloc_end_mb: r3(r.mallocEndMb),
      heap_live_start_mb: r3(r.heapStartMb),
      heap_live_end_mb: r3(r.heapEndMb),
      memory_reductions: r.memoryReductions,
      malloc_trims: r.mallocTrims,
      malloc_trim_rss: r.mallocTrimRss,
      malloc_free_after_collections: r.mallocFreeAfterCollections,
      ...soakFigures,
      machine_calibration_ms: calibration,
    },
    [
      [
        'update_to_kernel_p99_ms',
        '<=',
        50,
        r.mode === 'iptables'
          ? 'docs/dataplane.md, "Members beside a restore" (policy edits wait for restores of ~100 ms)'
          : 'docs/dataplane.md, "What the kernel costs" (each commit with rules validates the table) and "Memory under churn" (the loop\'s longest blocks)',
      ],
      ['rss_growth_after_warmup_mb', '<=', 0, RSS_EXPLAINED],
      ...(soak ? [['rss_growth_second_half_mb', '<=', 0, RSS_EXPLAINED] as Target] : []),
    ],
  );
}

await main();
