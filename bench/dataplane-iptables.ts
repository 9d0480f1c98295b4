// bench/dataplane-iptables (issue 15): the node of bench/dataplane (500 endpoints, 2,000
// policies, 1,000 IP sets, 100,000 members) programmed in iptables mode, through
// iptables-nft and iptables-legacy, each in its own throwaway network namespace: cold
// apply, an endpoint added with its policy, 1,000 IP-set members changed; and the native
// IP-set bulk add rate. Each backend runs twice: its native transport (libiptc for
// iptables-legacy, netlink for iptables-nft) and Felix's (iptables-restore), compared; and
// the kernel's floor (a one-rule transaction on the loaded tables), which bounds what any
// transport can gain over exec (`*_speedup_bound`). The event loop's longest block during
// the cold apply and during a refresh (read back, compare, apply), both sliced as the
// agent runs them. Needs root.

import { defaultConfig } from '../src/config/params.js';
import { IptablesRulesBackend } from '../src/dataplane/backends/iptables/rules-backend.js';
import type { IptablesFlavour } from '../src/dataplane/backends/iptables/transport.js';
import { DesiredState } from '../src/dataplane/desired-state.js';
import { Slicer } from '../src/dataplane/slicer.js';
import { createLogger } from '../src/log.js';
import { restoreOps } from '../src/dataplane/backends/iptables/restore-ops.js';
import { iptcApply, iptNftApply } from '../src/native/iptc.js';
import { initialHashsize, ipsetApply } from '../src/native/ipset.js';
import type { ToDataplane } from '../src/proto/messages.js';
import { blocksAt, describeBlocks, loopDuring } from './lib/loop-blocks.js';
import { runInNetns } from './lib/netns.js';
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
  /** The kernel's own cost of a one-rule transaction on the loaded tables (native runs). */
  floorMs: number[];
  coldMs: number;
  coldRules: number;
  /** The event loop's longest block during the cold apply, and its longest blocks. */
  coldLoopMaxMs: number;
  coldBlocks: string;
  /** For a profile of the same run (PALISADE_BENCH_CPU_PROF): scripts/cpuprofile-blocks.mjs --at <this>. */
  coldBlocksAt: string;
  /** A refresh (read back, compare, apply: nothing to write), and the loop's longest blocks. */
  refreshMs: number;
  refreshLoopMaxMs: number;
  refreshBlocks: string;
  refreshBlocksAt: string;
  incrementalMs: number[];
  membersMs: number[];
  ipsetMembersPerS: number;
}

async function inside(flavour: IptablesFlavour, transport: 'native' | 'exec'): Promise<InsideResult> {
  // No xtables lock: the namespace is ours alone (the lock file is the host's).
  const config = {
    ...defaultConfig(),
    Ipv6Support: false,
    NFTablesMode: 'Disabled' as const,
    IptablesTransport: transport,
    IptablesLockFilePath: '',
  };
  const state = new DesiredState();
  const backend = new IptablesRulesBackend(config, [4], { flavour, log: createLogger({ severity: 'Fatal' }) });
  state.apply(snapshot());
  state.takeDirty();
  await backend.resync();
  // The loop during the cold apply and a refresh, sliced as the agent runs them (the
  // restore itself runs on a native thread, or in the tool).
  const cold = await loopDuring(async () => {
    const slicer = new Slicer(3);
    await backend.rebuild(state, slicer);
    return backend.apply(slicer);
  });
  const coldMs = cold.ms;
  const refresh = await loopDuring(async () => {
    const slicer = new Slicer(3);
    await backend.resync(slicer);
    backend.update(state, state.takeDirty());
    await backend.drift(slicer);
    return backend.apply(slicer);
  });
  const step = async (msgs: ToDataplane[]) => {
    const s = performance.now();
    state.apply(msgs);
    backend.update(state, state.takeDirty());
    await backend.apply();
    return performance.now() - s;
  };
  const incrementalMs: number[] = [];
  for (let k = 0; k < INCREMENTAL_RUNS; k++) incrementalMs.push(await step(incrementalChange(k)));
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
  // The floor: one rule written natively into the loaded tables, timed inside the native
  // code (nftables: the batch to its ACK, whose validation walks the whole table's jump
  // graph; x_tables: reading the whole table and replacing it, the only way it changes).
  const floorMs: number[] = [];
  if (transport === 'native') {
    const one = restoreOps('*filter\n:cali-bench-floor - [0:0]\n-A cali-bench-floor -j ACCEPT\nCOMMIT\n', 4).ops;
    for (let k = 0; k < 7; k++) {
      const r =
        flavour === 'nft'
          ? await iptNftApply(one)
          : await iptcApply(one, { lockPath: '', lockTimeoutMs: 1000, lockIntervalMs: 50 });
      floorMs.push(r.commitMs + ('readMs' in r && flavour === 'legacy' ? r.readMs : 0));
    }
  }
  // Native bulk add: 1,000,000 members into one set (created first, outside the timing,
  // sized for them as the agent's IPSets creates a set).
  const members = Array.from(
    { length: 1_000_000 },
    (_, i) => `172.${16 + ((i >> 16) & 15)}.${(i >> 8) & 255}.${i & 255}`,
  );
  const maxelem = 2_000_000;
  const hashsize = initialHashsize(members.length, maxelem);
  await ipsetApply([{ op: 'create', name: 'cali40s:bench-bulk', type: 'hash:ip', family: 4, maxelem, hashsize }]);
  const b0 = performance.now();
  const bulk = await ipsetApply([{ op: 'add', name: 'cali40s:bench-bulk', type: 'hash:ip', family: 4, members }]);
  const bulkMs = performance.now() - b0;
  if (bulk.failures.length) throw new Error(`bulk add failed: ${JSON.stringify(bulk.failures.slice(0, 3))}`);
  return {
    floorMs,
    coldMs,
    coldRules: cold.result.rulesWritten,
    coldLoopMaxMs: cold.loopMaxMs,
    coldBlocks: describeBlocks(cold.blocks),
    coldBlocksAt: blocksAt(cold.blocks),
    refreshMs: refresh.ms,
    refreshLoopMaxMs: refresh.loopMaxMs,
    refreshBlocks: describeBlocks(refresh.blocks),
    refreshBlocksAt: blocksAt(refresh.blocks),
    incrementalMs,
    membersMs,
    ipsetMembersPerS: members.length / (bulkMs / 1000),
  };
}

function runInside(flavour: IptablesFlavour, transport: 'native' | 'exec'): InsideResult {
  return runInNetns<InsideResult>({
    script: import.meta.url,
    args: ['--inside', flavour, transport],
    what: `iptables-${flavour}`,
    announce: (ns) => `iptables-${flavour} (${transport}): programming in netns ${ns}`,
  });
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

async function main(): Promise<void> {
  const i = process.argv.indexOf('--inside');
  if (i >= 0) {
    process.stdout.write(
      JSON.stringify(await inside(process.argv[i + 1] as IptablesFlavour, process.argv[i + 2] as 'native' | 'exec')),
    );
    return;
  }
  if (process.getuid?.() !== 0) {
    console.error(
      'bench dataplane-iptables: SKIPPED: needs root (it programs iptables inside throwaway network namespaces)',
    );
    return;
  }
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const out: Record<string, number | string> = {
    endpoints: ENDPOINTS,
    policies: POLICIES,
    ip_sets: SETS,
    ip_set_members: SETS * MEMBERS_PER_SET,
  };
  const runs: Array<[IptablesFlavour, 'native' | 'exec']> = [
    ['nft', 'native'],
    ['nft', 'exec'],
    ['legacy', 'native'],
    ['legacy', 'exec'],
  ];
  for (const [flavour, transport] of runs) {
    const r = runInside(flavour, transport);
    const x = transport === 'exec' ? '_exec' : '_native';
    out[`${flavour}_cold${x}_ms`] = r3(r.coldMs);
    out[`${flavour}_cold_rules`] = r.coldRules;
    out[`${flavour}_cold${x}_event_loop_max_ms`] = r3(r.coldLoopMaxMs);
    out[`${flavour}_cold${x}_longest_blocks`] = r.coldBlocks;
    out[`${flavour}_cold${x}_longest_blocks_at`] = r.coldBlocksAt;
    out[`${flavour}_refresh${x}_ms`] = r3(r.refreshMs);
    out[`${flavour}_refresh${x}_event_loop_max_ms`] = r3(r.refreshLoopMaxMs);
    out[`${flavour}_refresh${x}_longest_blocks`] = r.refreshBlocks;
    out[`${flavour}_refresh${x}_longest_blocks_at`] = r.refreshBlocksAt;
    out[`${flavour}_incremental${transport === 'exec' ? '_exec' : ''}_ms_median`] = r3(median(r.incrementalMs));
    out[`${flavour}_members_1000${transport === 'exec' ? '_exec' : ''}_ms_median`] = r3(median(r.membersMs));
    if (transport !== 'exec') {
      out[`${flavour}_ipset_members_per_s`] = Math.round(r.ipsetMembersPerS);
      out[`${flavour}_kernel_floor_ms_median`] = r3(median(r.floorMs));
    }
  }
  // The most any transport can gain: exec's time over the kernel's floor.
  out.nft_incremental_speedup_bound = r3(
    (out.nft_incremental_exec_ms_median as number) / (out.nft_kernel_floor_ms_median as number),
  );
  out.legacy_incremental_speedup_bound = r3(
    (out.legacy_incremental_exec_ms_median as number) / (out.legacy_kernel_floor_ms_median as number),
  );
  out.nft_incremental_speedup = r3(
    (out.nft_incremental_exec_ms_median as number) / (out.nft_incremental_ms_median as number),
  );
  out.nft_cold_speedup = r3((out.nft_cold_exec_ms as number) / (out.nft_cold_native_ms as number));
  out.legacy_incremental_speedup = r3(
    (out.legacy_incremental_exec_ms_median as number) / (out.legacy_incremental_ms_median as number),
  );
  out.legacy_cold_speedup = r3((out.legacy_cold_exec_ms as number) / (out.legacy_cold_native_ms as number));
  // Both flavours measure the same netlink path (ipsets are not iptables'): the kernel's inserts.
  const IPSET_INSERT =
    'docs/dataplane.md, iptables mode, "A set created with its members" (the kernel\'s hash inserts)';
  const BOUND_BY_KERNEL =
    'docs/dataplane.md, iptables mode, "What it costs" (the kernel\'s validation, x_tables\' whole-table replace)';
  report('dataplane-iptables', out, [
    ['nft_ipset_members_per_s', '>=', 1_000_000, IPSET_INSERT],
    ['legacy_ipset_members_per_s', '>=', 1_000_000, IPSET_INSERT],
    ['nft_incremental_speedup', '>=', 20, BOUND_BY_KERNEL],
    ['nft_cold_speedup', '>=', 2, BOUND_BY_KERNEL],
    ['legacy_incremental_speedup', '>=', 20, BOUND_BY_KERNEL],
    ['legacy_cold_speedup', '>=', 2, BOUND_BY_KERNEL],
  ]);
}

await main();
