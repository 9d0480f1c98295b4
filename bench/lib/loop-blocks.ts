// The event loop's longest blocks during a piece of work, each with the garbage
// collection that fell inside it. monitorEventLoopDelay gives the worst delay but not
// what caused it; a missed event-loop target needs its cause (issue 21: "a missed target
// is reported with the profile that explains it"). A 1 ms timer stamps each turn it gets;
// a gap between stamps is a block. The 'gc' performance entries say how much of a block
// was a collector pause (and which kind), the rest was our code.
import { PerformanceObserver, constants, monitorEventLoopDelay, performance } from 'node:perf_hooks';

import { gcKind } from '../../src/agent/memory-reducer.js';

export interface LoopBlock {
  /** When the block started, ms after the tracer started. */
  atMs: number;
  /**
   * When it started on the monotonic clock in µs (process.hrtime), the clock of a V8 CPU
   * profile's sample times: `scripts/cpuprofile-blocks.mjs --at` finds the block there.
   */
  hrUs: number;
  ms: number;
  /** Collector pauses inside the block: total ms, and the kinds seen ("major", "minor"...). */
  gcMs: number;
  gcKinds: string[];
}

const GC_KIND: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

export class LoopBlockTracer {
  readonly #gaps: Array<{ start: number; end: number }> = [];
  readonly #gcs: Array<{ start: number; end: number; kind: string }> = [];
  #timer: NodeJS.Timeout | undefined;
  #observer: PerformanceObserver | undefined;
  #t0 = 0;
  #last = 0;
  /** performance.now() -> hrtime µs. */
  #hrOffsetUs = 0;

  /** Gaps shorter than this are turns of the loop, not blocks. */
  constructor(readonly minMs = 5) {}

  start(): void {
    this.#t0 = this.#last = performance.now();
    this.#hrOffsetUs = Number(process.hrtime.bigint() / 1000n) - this.#t0 * 1000;
    this.#timer = setInterval(() => {
      const now = performance.now();
      if (now - this.#last >= this.minMs) this.#gaps.push({ start: this.#last, end: now });
      this.#last = now;
    }, 1);
    this.#observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = GC_KIND[gcKind(e) ?? -1] ?? 'other';
        this.#gcs.push({ start: e.startTime, end: e.startTime + e.duration, kind });
      }
    });
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  /** Stops, and returns the `top` longest blocks, longest first. */
  stop(top = 5): LoopBlock[] {
    clearInterval(this.#timer);
    this.#observer?.disconnect();
    return this.#gaps
      .sort((a, b) => b.end - b.start - (a.end - a.start))
      .slice(0, top)
      .map((g) => {
        const inside = this.#gcs.filter((c) => c.end > g.start && c.start < g.end);
        const gcMs = inside.reduce((s, c) => s + Math.min(c.end, g.end) - Math.max(c.start, g.start), 0);
        return {
          atMs: round(g.start - this.#t0),
          hrUs: Math.round(this.#hrOffsetUs + g.start * 1000),
          ms: round(g.end - g.start),
          gcMs: round(gcMs),
          gcKinds: [...new Set(inside.map((c) => c.kind))],
        };
      });
  }
}

/**
 * Runs `work`, timing it, with the event loop watched throughout: its worst delay and p99
 * (monitorEventLoopDelay) and its longest blocks (LoopBlockTracer).
 */
export async function loopDuring<T>(
  work: () => Promise<T>,
): Promise<{ result: T; ms: number; loopMaxMs: number; loopP99Ms: number; blocks: LoopBlock[] }> {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  // The monitor's timer must be running first: a block in the very tick it is enabled in
  // is not seen.
  await new Promise((r) => setTimeout(r, 20));
  const blocks = new LoopBlockTracer();
  blocks.start();
  const t0 = performance.now();
  const result = await work();
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 5));
  loop.disable();
  return { result, ms, loopMaxMs: loop.max / 1e6, loopP99Ms: loop.percentile(99) / 1e6, blocks: blocks.stop(3) };
}

/** "21.3 ms at 812 ms (gc 15.0: minor); ..." for a report. */
export const describeBlocks = (bs: LoopBlock[]) =>
  bs
    .map((b) => `${b.ms} ms at ${b.atMs} ms (gc ${b.gcMs}${b.gcKinds.length ? `: ${b.gcKinds.join('+')}` : ''})`)
    .join('; ');

/** "hrUs:ms,..." of the blocks: what `scripts/cpuprofile-blocks.mjs --at` takes. */
export const blocksAt = (bs: LoopBlock[]) => bs.map((b) => `${b.hrUs}:${b.ms}`).join(',');

/**
 * Node's flags for a bench's inner process: with PALISADE_BENCH_CPU_PROF=DIR, a CPU
 * profile of the run in DIR, for `scripts/cpuprofile-blocks.mjs`.
 */
export const cpuProfFlags = (): string[] =>
  process.env.PALISADE_BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PALISADE_BENCH_CPU_PROF}`, '--cpu-prof-interval=200']
    : [];

const round = (x: number) => Math.round(x * 10) / 10;
