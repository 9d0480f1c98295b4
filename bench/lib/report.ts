// Every bench ends with report(): a table on stdout and bench/results/<name>.json, an
// object of named figures (plus the targets and whether each was met).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Figures = Record<string, number | string>;

/**
 * A target: figure name, comparison and bound, e.g. ['build_s', '<=', 1.5], and where a
 * miss of it is explained with its profile (a doc and the words its passage starts with).
 */
export type Target = [name: string, op: '<=' | '>=', bound: number, explained?: string];

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function fmt(v: number | string): string {
  if (typeof v === 'string') return v;
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  return v >= 100 ? v.toFixed(1) : v >= 1 ? v.toFixed(3) : v.toPrecision(3);
}

export function report(name: string, figures: Figures, targets: Target[] = []): void {
  const verdicts: Record<string, string> = {};
  for (const [fig, op, bound] of targets) {
    const v = figures[fig];
    const ok = typeof v === 'number' && (op === '<=' ? v <= bound : v >= bound);
    verdicts[fig] = `${ok ? 'met' : 'MISSED'} (target ${op} ${bound})`;
  }
  const rows = Object.entries(figures).map(([k, v]) => [k, fmt(v), verdicts[k] ?? '']);
  const w0 = Math.max(...rows.map((r) => r[0]!.length), 6);
  const w1 = Math.max(...rows.map((r) => r[1]!.length), 5);
  console.log(`\n## bench: ${name}\n`);
  console.log(`| ${'figure'.padEnd(w0)} | ${'value'.padStart(w1)} | target |`);
  console.log(`|${'-'.repeat(w0 + 2)}|${'-'.repeat(w1 + 2)}|--------|`);
  for (const [k, v, t] of rows) console.log(`| ${k!.padEnd(w0)} | ${v!.padStart(w1)} | ${t} |`);
  reportMissed(name, targets, verdicts);
  const file = join(root, 'bench', 'results', `${name}.json`);
  mkdirSync(dirname(file), { recursive: true });
  const targetsJson = Object.fromEntries(
    targets.map(([f, op, b, explained]) => [
      f,
      { op, bound: b, verdict: verdicts[f], ...(explained ? { explained } : {}) },
    ]),
  );
  const result = { ...figures, targets: targetsJson, node: process.version, date: new Date().toISOString() };
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

// A missed target is not rounded into a pass, nor left bare: the table is followed by
// where each miss is explained, and how to profile this run.
function reportMissed(name: string, targets: Target[], verdicts: Record<string, string>): void {
  const missed = targets.filter(([f]) => verdicts[f]?.startsWith('MISSED'));
  if (!missed.length) return;
  console.log('\nMissed, and where the profile that explains it is:');
  for (const [f, , , explained] of missed) console.log(`- ${f}: ${explained ?? 'not explained yet'}`);
  console.log(`A CPU profile of this run: PALISADE_BENCH_CPU_PROF=DIR npm run bench -- ${name}`);
}

/** Percentile of an ascending-sorted array (nearest rank). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

export function log(msg: string): void {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

/**
 * A fixed CPU + memory workload (sort 1M doubles, 200k Map inserts and lookups), timed
 * in ms. This shared machine's speed drifts by tens of percent over an hour; reporting
 * this beside a bench's figures lets runs be compared.
 */
export function calibrationMs(): number {
  const t0 = performance.now();
  const a = new Float64Array(1_000_000);
  let x = 12345;
  for (let i = 0; i < a.length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    a[i] = x;
  }
  a.sort();
  const m = new Map<string, number>();
  for (let i = 0; i < 200_000; i++) m.set(`k${(i * 7919) % 200_000}`, i);
  let sum = 0;
  for (let i = 0; i < 200_000; i++) sum += m.get(`k${i}`) ?? 0;
  if (sum < 0) console.log(sum);
  return performance.now() - t0;
}
