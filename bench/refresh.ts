// bench/refresh (issue 21): a refresh on a node whose IP set is big. One set of 250,000
// hosts (a selector matching every pod of a large cluster) is programmed; then three
// refreshes run (RulesBackend.check, as the driver runs it every IpsetsRefreshInterval)
// while applies go on, each replacing 20 of the set's members, one after the other as
// fast as they commit. Figures: how long each apply took while a check ran (an update's
// wait for the kernel), the check's own time, and the elements it asked for one by one.
// Run twice: with plain sets dumped beside commits (the agent's way, screenSet in
// backends/nft/check.ts), and holding commits back as every other part of a check does.
// Needs root: it programs nftables inside a throwaway network namespace.
import { defaultConfig } from '../src/config/params.js';
import { NftRulesBackend } from '../src/dataplane/backends/nft/rules-backend.js';
import { DesiredState } from '../src/dataplane/desired-state.js';
import { Slicer } from '../src/dataplane/slicer.js';
import type { ToDataplane } from '../src/proto/messages.js';
import { runInNetns } from './lib/netns.js';
import { report } from './lib/report.js';

const ELEMENTS = 250_000;
const PER_APPLY = 20;
const CHECKS = 3;
/** The driver's slice of loop time for sliced work (driver.ts APPLY_SLICE_MS). */
const SLICE_MS = 3;

const host = (n: number) => `10.${64 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}/32`;

interface Inside {
  /** Each apply's time while a check ran, ms. */
  applyMs: number[];
  checkMs: number[];
  asked: number;
  drift: number;
}

async function inside(beside: boolean): Promise<Inside> {
  const config = { ...defaultConfig(), Ipv6Support: false };
  const state = new DesiredState();
  const rules = new NftRulesBackend(config, [4], { setsBeside: beside });
  state.apply([
    {
      type: 'IPSetUpdate',
      id: 's:all',
      members: Array.from({ length: ELEMENTS }, (_, i) => host(i)),
      ipsetType: 'NET',
    },
    { type: 'InSync' },
  ] as ToDataplane[]);
  await rules.resync();
  state.takeDirty();
  await rules.rebuild(state, new Slicer(SLICE_MS));
  await rules.apply(new Slicer(SLICE_MS));
  let next = ELEMENTS;
  const out: Inside = { applyMs: [], checkMs: [], asked: 0, drift: 0 };
  for (let k = 0; k < CHECKS; k++) {
    let done = false;
    const t0 = performance.now();
    const check = rules.check(new Slicer(SLICE_MS)).finally(() => {
      done = true;
      out.checkMs.push(performance.now() - t0);
    });
    while (!done) {
      const removed: string[] = [];
      for (const m of state.ipsets.get('s:all')?.members ?? []) if (removed.push(m) >= PER_APPLY) break;
      const added = Array.from({ length: PER_APPLY }, () => host(next++));
      const a0 = performance.now();
      state.apply([{ type: 'IPSetDeltaUpdate', id: 's:all', addedMembers: added, removedMembers: removed }]);
      rules.update(state, state.takeDirty());
      await rules.apply(new Slicer(SLICE_MS));
      out.applyMs.push(performance.now() - a0);
    }
    const r = await check;
    out.asked += (r as { asked?: number }).asked ?? 0;
    out.drift += r.drift.reduce((n, d) => n + d.chains.length + d.sets.length, 0);
  }
  return out;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};

async function main(): Promise<void> {
  if (process.argv.includes('--inside')) {
    process.stdout.write(JSON.stringify(await inside(process.argv.includes('--beside'))));
    return;
  }
  if (process.getuid?.() !== 0) {
    console.error('bench refresh: SKIPPED: needs root (it programs nftables inside a throwaway network namespace)');
    return;
  }
  const run = (beside: boolean) =>
    runInNetns<Inside>({
      script: import.meta.url,
      args: ['--inside', ...(beside ? ['--beside'] : [])],
      what: 'refresh',
      announce: (ns) => `refresh: ${beside ? 'sets dumped beside commits' : 'commits held back'} in netns ${ns}`,
    });
  const beside = run(true);
  const held = run(false);
  const figures = (name: string, x: Inside) => ({
    [`${name}_applies`]: x.applyMs.length,
    [`${name}_apply_p50_ms`]: r3(quantile(x.applyMs, 0.5)),
    [`${name}_apply_p99_ms`]: r3(quantile(x.applyMs, 0.99)),
    [`${name}_apply_max_ms`]: r3(Math.max(...x.applyMs)),
    [`${name}_check_ms`]: r3(quantile(x.checkMs, 0.5)),
    [`${name}_asked`]: x.asked,
    [`${name}_drift`]: x.drift,
  });
  report('refresh', {
    set_elements: ELEMENTS,
    members_replaced_per_apply: PER_APPLY,
    checks: CHECKS,
    ...figures('beside', beside),
    ...figures('held', held),
  });
}

await main();
