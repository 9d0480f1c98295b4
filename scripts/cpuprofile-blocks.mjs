#!/usr/bin/env node
// What ran during the event loop's longest blocks, from a V8 CPU profile (node
// --cpu-prof). For each block, prints its start and length and the functions that were
// on the stack for most of it (by samples that include them, so a caller shows above
// its callees). The blocks are either
// - given: `--at US:MS,...`, each a start on the monotonic clock in µs (the profile's
//   clock) and a length, as bench dataplane's `cold_100k_longest_blocks_at` reports them
//   (work sliced with setImmediate never idles, so only a timer can tell its turns apart);
// - or found: the longest stretches of samples with no "(idle)" among them, i.e. the main
//   thread never got back to the loop (work that is not sliced).
//
//   node scripts/cpuprofile-blocks.mjs PROFILE.cpuprofile [--at US:MS,...] [BLOCKS=5] [FUNCTIONS=12]
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const atIndex = args.indexOf('--at');
const at = atIndex >= 0 ? args.splice(atIndex, 2)[1] : undefined;
const [file, blocksArg = '5', fnsArg = '12'] = args;
if (!file || (atIndex >= 0 && !/^\d+:[\d.]+(,\d+:[\d.]+)*$/.test(at ?? ''))) {
  console.error('usage: cpuprofile-blocks.mjs PROFILE.cpuprofile [--at US:MS,...] [BLOCKS] [FUNCTIONS]');
  process.exit(2);
}
let profile;
try {
  profile = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.error(`cpuprofile-blocks: cannot read ${file}: ${e.message}`);
  process.exit(1);
}
if (!Array.isArray(profile?.nodes) || !Array.isArray(profile?.samples) || !Array.isArray(profile?.timeDeltas)) {
  console.error(`cpuprofile-blocks: ${file} is not a V8 CPU profile (nodes, samples, timeDeltas)`);
  process.exit(1);
}

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
};
const isIdle = (id) => byId.get(id)?.callFrame.functionName === '(idle)';

// Sample times on the monotonic clock (µs).
const times = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push((t += d));

const blocks = at ? givenBlocks(at) : busyStretches();

// The samples inside each given window.
function givenBlocks(spec) {
  return spec.split(',').map((w) => {
    const [us, ms] = w.split(':').map(Number);
    const end = us + ms * 1000;
    let from = times.findIndex((x) => x >= us);
    if (from < 0) from = times.length;
    let to = from;
    while (to < times.length && times[to] <= end) to++;
    return { from, to, us: ms * 1000 };
  });
}

// Consecutive non-idle samples, longest first.
function busyStretches() {
  const found = [];
  let start = -1;
  for (let i = 0; i <= profile.samples.length; i++) {
    const busy = i < profile.samples.length && !isIdle(profile.samples[i]);
    if (busy && start < 0) start = i;
    if (!busy && start >= 0) {
      const end = i < times.length ? times[i] : times[times.length - 1];
      found.push({ from: start, to: i, us: end - times[start] });
      start = -1;
    }
  }
  return found.sort((a, b) => b.us - a.us);
}

for (const b of blocks.slice(0, Number(blocksArg))) {
  const onStack = new Map();
  const n = b.to - b.from;
  for (let i = b.from; i < b.to; i++) {
    const seen = new Set();
    for (let id = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const l = label(byId.get(id));
      if (seen.has(l)) continue;
      seen.add(l);
      onStack.set(l, (onStack.get(l) ?? 0) + 1);
    }
  }
  const when =
    b.from < times.length
      ? `${((times[b.from] - profile.startTime) / 1000).toFixed(0)} ms into the profile`
      : 'after the profile';
  console.log(`\nblock of ${(b.us / 1000).toFixed(1)} ms at ${when} (${n} samples)`);
  const top = [...onStack]
    .filter(([l]) => l !== '(root)')
    .sort((x, y) => y[1] - x[1])
    .slice(0, Number(fnsArg));
  for (const [l, c] of top) console.log(`  ${String(Math.round((100 * c) / n)).padStart(3)}%  ${l}`);
}
