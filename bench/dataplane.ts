// bench/dataplane (issue #5): programming a node with 500 local endpoints, 2,000 active
// policies and 1,000 IP sets holding 100,000 members: cold apply, then incremental
// changes (one endpoint added with its own policy; 1,000 IP-set members changed), by our
// native netlink backend and by `nft -f` of the same transaction (the way Calico's
// nftables mode programs: exec nft). Each side runs in its own throwaway network
// namespace, one after the other, so neither sees the other's tables. Also issue 21's node
// of 100,000 rules: its cold apply and an agent restarting over it (each with the event
// loop's longest blocks), and its read-back. Needs root.

import { defaultConfig } from '../src/config/params.js';
import { NftBackend, type Transport } from '../src/dataplane/backends/nft/backend.js';
import { chainOf } from '../src/dataplane/backends/nft/desired.js';
import { NftDesiredBuilder } from '../src/dataplane/backends/nft/desired-builder.js';
import { NativeSink } from '../src/dataplane/backends/nft/sinks.js';
import { DesiredState } from '../src/dataplane/desired-state.js';
import { nftCommit } from '../src/native/nft.js';
import { Slicer } from '../src/dataplane/slicer.js';
import type { ToDataplane } from '../src/proto/messages.js';
import { blocksAt, describeBlocks, type LoopBlock, loopDuring } from './lib/loop-blocks.js';
import { afterFirstApply, runInNetns } from './lib/netns.js';
import { percentile, report } from './lib/report.js';
import {
  ENDPOINTS,
  incrementalChange,
  INCREMENTAL_RUNS,
  ip,
  memberChange,
  MEMBER_RUNS,
  MEMBERS_PER_SET,
  POLICIES,
  SETS,
  snapshot,
} from './workloads/node-dataplane.js';

interface InsideResult {
  transport: Transport;
  coldMs: number;
  /** Rules in the cold ruleset, and how long the event loop was blocked while it was applied (ms). */
  coldRules: number;
  coldLoopMaxMs: number;
  coldLoopP99Ms: number;
  /** The cold apply's longest blocks of the loop, with the collector pauses inside them. */
  coldLoopBlocks: LoopBlock[];
  coldRenderMs: number;
  coldOps: number;
  coldBytes: number;
  coldCommitMs: number;
  /** The 100,000-rule node's read-back (a refresh: the kernel dump and its parse), ms. */
  readBackMs?: number;
  /** An agent restarting over the programmed node: render, read-back, an apply with nothing to write. */
  restart?: { ms: number; writtenOps: number; loopMaxMs: number; blocks: LoopBlock[] };
  incrementalMs: number[];
  incrementalRenderMs: number[];
  incrementalCommitMs: number[];
  membersMs: number[];
  membersCommitMs: number[];
  floorMs: number[];
}

// Where a missed target is explained, with its profile.
const KERNEL_COSTS = 'docs/dataplane.md, "What the kernel costs" (the validation floor, perf record)';
const COLD_PROFILE = 'docs/dataplane.md, "A profile of the cold apply" (perf record: the kernel\'s share)';
const LOOP_BLOCKS =
  'docs/dataplane.md, "The blocks with no collection in them" (sched_switch traces, cpuprofile-blocks.mjs)';

// Issue 21's node: the same shapes scaled to 100,000 rules (99,949 at 1,700 endpoints).
const BIG_ENDPOINTS = 1720;
const BIG_POLICIES = 7000;

/**
 * Runs in a fresh netns: cold apply, then the incremental changes, with one transport.
 * The cold apply is sliced as the agent's driver runs it (slicer.ts). `big`: issue 21's
 * 100,000-rule node, cold apply only.
 */
async function inside(transport: Transport, big: boolean): Promise<InsideResult> {
  const config = { ...defaultConfig(), Ipv6Support: false };
  const state = new DesiredState();
  const builder = new NftDesiredBuilder(config, 4);
  const backend = new NftBackend({ transport });
  state.apply(big ? snapshot(BIG_ENDPOINTS, BIG_POLICIES) : snapshot());
  state.takeDirty();
  await backend.resync([4]);
  // Issue 21's event-loop target: how long the loop is blocked during the cold apply
  // (rendering and encoding run on it; the kernel transaction runs on a native thread).
  let coldRenderMs = 0;
  const measured = await loopDuring(async () => {
    const t0 = performance.now();
    const slicer = new Slicer(3);
    // The render, with the staged transactions it commits as it goes (NftBackend.rebuild).
    await backend.rebuild(builder.desired, builder.rebuildSteps(state), slicer);
    coldRenderMs = performance.now() - t0;
    return backend.apply([builder.desired], slicer);
  });
  const cold = measured.result;
  let coldRules = 0;
  for (const c of builder.desired.chains.values()) coldRules += c.rules.length;
  const coldResult = {
    transport,
    coldMs: measured.ms,
    coldRules,
    coldLoopMaxMs: measured.loopMaxMs,
    coldLoopP99Ms: measured.loopP99Ms,
    coldLoopBlocks: measured.blocks,
    coldRenderMs,
    coldOps: cold.ops,
    coldBytes: cold.bytes,
    coldCommitMs: cold.commitMs,
  };
  if (big) {
    // A refresh's read-back of the node (every IpsetsRefreshInterval): once the kernel
    // resumed one table-wide rule dump by counting from its first rule, O(n^2).
    const r0 = performance.now();
    if (transport === 'native') await backend.resync([4], new Slicer(3));
    const readBackMs = performance.now() - r0;
    const restart = transport === 'native' ? await restartOver(config, state) : undefined;
    return {
      ...coldResult,
      readBackMs,
      ...(restart ? { restart } : {}),
      incrementalMs: [],
      incrementalRenderMs: [],
      incrementalCommitMs: [],
      membersMs: [],
      membersCommitMs: [],
      floorMs: [],
    };
  }

  // The changes below come after the agent's first apply.
  afterFirstApply();

  // The kernel's floor: a transaction adding one unreferenced chain with one accept rule.
  // Any verdict makes nf_tables re-validate the table's whole jump graph at commit, a
  // cost that grows with the ruleset and that every client (nft included) pays. Measured
  // just before each incremental change, so each change has its own floor: the kernel's
  // speed drifts within a run by more than target 5's margin (ten floors measured first
  // once put the floor 1.4 ms above the changes' own commits).
  const floorMs: number[] = [];
  const floor = async (k: number) => {
    const sink = new NativeSink();
    const name = `filter-bench-floor-${k}`;
    sink.chainAdd(4, 'calico', name);
    sink.rule(4, 'calico', chainOf(name, name, 'filter', [{ match: [], action: { k: 'accept' } }], 4), 0);
    const s = performance.now();
    await nftCommit(sink.bytes());
    floorMs.push(performance.now() - s);
  };
  const renderMs: number[] = [];
  const commitMs: number[] = [];
  const step = async (msgs: ToDataplane[]) => {
    const s = performance.now();
    state.apply(msgs);
    builder.update(state, state.takeDirty());
    renderMs.push(performance.now() - s);
    commitMs.push((await backend.apply([builder.desired])).commitMs);
    return performance.now() - s;
  };
  const incrementalMs: number[] = [];
  for (let k = 0; k < INCREMENTAL_RUNS; k++) {
    if (transport === 'native') await floor(k);
    incrementalMs.push(await step(incrementalChange(k)));
  }
  const incrementalRenderMs = renderMs.splice(0);
  const incrementalCommitMs = commitMs.splice(0);
  const membersMs: number[] = [];
  let next = 0x30000;
  for (let k = 0; k < MEMBER_RUNS; k++)
    membersMs.push(
      await step(
        memberChange(
          k,
          (id) => state.ipsets.get(id)?.members ?? [],
          () => ip(next++),
        ),
      ),
    );
  return {
    ...coldResult,
    incrementalMs,
    incrementalRenderMs,
    incrementalCommitMs,
    membersMs,
    membersCommitMs: commitMs,
    floorMs,
  };
}

/**
 * A restarted agent over the node the cold apply programmed, as after a DaemonSet
 * upgrade: a fresh backend and builder render the same state, read the table back and
 * apply, writing nothing, with every chain and set compared whole. Sliced as the agent
 * runs it; the loop's longest blocks are measured over all of it.
 */
async function restartOver(config: ReturnType<typeof defaultConfig>, state: DesiredState) {
  const builder = new NftDesiredBuilder(config, 4);
  const backend = new NftBackend({ transport: 'native' });
  const run = await loopDuring(async () => {
    await backend.resync([4], new Slicer(3));
    const slicer = new Slicer(3);
    await backend.rebuild(builder.desired, builder.rebuildSteps(state), slicer);
    return backend.apply([builder.desired], slicer);
  });
  return { ms: run.ms, writtenOps: run.result.ops, loopMaxMs: run.loopMaxMs, blocks: run.blocks };
}

function runInside(transport: Transport, big = false): InsideResult {
  return runInNetns<InsideResult>({
    script: import.meta.url,
    args: ['--inside', transport, ...(big ? ['--big'] : [])],
    what: transport,
    announce: (ns) => `${transport}${big ? ' (100,000 rules, cold)' : ''}: programming in netns ${ns}`,
  });
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const p90 = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    90,
  );

async function main(): Promise<void> {
  const i = process.argv.indexOf('--inside');
  if (i >= 0) {
    process.stdout.write(
      JSON.stringify(await inside(process.argv[i + 1] as Transport, process.argv.includes('--big'))),
    );
    return;
  }
  if (process.getuid?.() !== 0) {
    console.error('bench dataplane: SKIPPED: needs root (it programs nftables inside throwaway network namespaces)');
    return;
  }
  const native = runInside('native');
  const exec = runInside('exec');
  const big = runInside('native', true);
  const bigExec = runInside('exec', true);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  report(
    'dataplane',
    {
      endpoints: ENDPOINTS,
      policies: POLICIES,
      ip_sets: SETS,
      ip_set_members: SETS * MEMBERS_PER_SET,
      cold_native_ms: r3(native.coldMs),
      cold_native_render_ms: r3(native.coldRenderMs),
      cold_native_commit_ms: r3(native.coldCommitMs),
      cold_nft_exec_ms: r3(exec.coldMs),
      cold_ratio_vs_nft_exec: r3(exec.coldMs / native.coldMs),
      cold_netlink_messages: native.coldOps,
      cold_netlink_mb: r3(native.coldBytes / 1e6),
      cold_rules: native.coldRules,
      cold_event_loop_max_ms: r3(native.coldLoopMaxMs),
      cold_event_loop_p99_ms: r3(native.coldLoopP99Ms),
      cold_100k_rules: big.coldRules,
      cold_100k_native_ms: r3(big.coldMs),
      cold_100k_native_render_ms: r3(big.coldRenderMs),
      cold_100k_native_commit_ms: r3(big.coldCommitMs),
      cold_100k_nft_exec_ms: r3(bigExec.coldMs),
      cold_100k_ratio_vs_nft_exec: r3(bigExec.coldMs / big.coldMs),
      cold_100k_event_loop_max_ms: r3(big.coldLoopMaxMs),
      cold_100k_event_loop_p99_ms: r3(big.coldLoopP99Ms),
      cold_100k_longest_blocks: describeBlocks(big.coldLoopBlocks),
      // For a profile of the same run (--cpu-prof): scripts/cpuprofile-blocks.mjs --at <this>.
      cold_100k_longest_blocks_at: blocksAt(big.coldLoopBlocks),
      read_back_100k_ms: r3(big.readBackMs ?? 0),
      restart_100k_ms: r3(big.restart?.ms ?? 0),
      restart_100k_ops_written: big.restart?.writtenOps ?? -1,
      restart_100k_event_loop_max_ms: r3(big.restart?.loopMaxMs ?? 0),
      restart_100k_longest_blocks: describeBlocks(big.restart?.blocks ?? []),
      incremental_ms_median: r3(median(native.incrementalMs)),
      incremental_ms_p90: r3(p90(native.incrementalMs)),
      incremental_render_ms_median: r3(median(native.incrementalRenderMs)),
      incremental_kernel_commit_ms_median: r3(median(native.incrementalCommitMs)),
      kernel_validation_floor_ms_median: r3(median(native.floorMs)),
      // Each change against the floor measured just before it.
      incremental_overhead_above_floor_ms: r3(median(native.incrementalMs.map((v, k) => v - native.floorMs[k]!))),
      // The same as a fraction of that floor: the kernel's speed varies by machine and by
      // run, so a kernel-bound target is stated against the kernel's own work (issue 53).
      incremental_overhead_vs_floor: r3(
        median(native.incrementalMs.map((v, k) => (v - native.floorMs[k]!) / native.floorMs[k]!)),
      ),
      // The overhead split: ours (render, plan, encode, record: everything but the commit)
      // and the kernel's (this transaction's commit above the floor's; both are timed
      // around the same nftCommit call, worker round trip included).
      incremental_userspace_ms_median: r3(
        median(native.incrementalMs.map((v, k) => v - native.incrementalCommitMs[k]!)),
      ),
      incremental_commit_above_floor_ms: r3(median(native.incrementalCommitMs.map((v, k) => v - native.floorMs[k]!))),
      incremental_nft_exec_ms_median: r3(median(exec.incrementalMs)),
      incremental_ratio_vs_nft_exec: r3(median(exec.incrementalMs) / median(native.incrementalMs)),
      members_1000_ms_median: r3(median(native.membersMs)),
      members_1000_kernel_commit_ms_median: r3(median(native.membersCommitMs)),
      members_1000_nft_exec_ms_median: r3(median(exec.membersMs)),
      members_ratio_vs_nft_exec: r3(median(exec.membersMs) / median(native.membersMs)),
    },
    [
      ['incremental_ratio_vs_nft_exec', '>=', 10, KERNEL_COSTS],
      // Issue 21, target 5, restated by issue 53 against the kernel's own work: what we add
      // above the kernel's floor is at most a tenth of it (an absolute "<= 2 ms per change"
      // held on one kernel and not on the next); and cold >= 2x nft -f.
      ['incremental_overhead_vs_floor', '<=', 0.1, KERNEL_COSTS],
      ['cold_ratio_vs_nft_exec', '>=', 2, COLD_PROFILE],
      ['cold_100k_ratio_vs_nft_exec', '>=', 2, COLD_PROFILE],
      // Issue 21, target 6.
      ['cold_100k_event_loop_max_ms', '<=', 20, LOOP_BLOCKS],
      // The same bound for the most common cold start in production: a restart.
      ['restart_100k_event_loop_max_ms', '<=', 20, LOOP_BLOCKS],
    ],
  );
}

await main();
