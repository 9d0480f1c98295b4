// The agent's memory reducer: after a full collection that shows the old generation
// fragmented, V8's memory pressure signal, at most once in an interval; and, with the real
// signal in a child, the old space's emptied pages handed back.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { constants, type PerformanceEntry } from 'node:perf_hooks';
import { describe, it } from 'node:test';

import { isMajorGc, MemoryReducer, type OldSpace } from '../../src/agent/memory-reducer.js';
import { silentLogger } from '../../src/log.js';
import { native } from '../../src/native/load.js';

const MB = 1024 * 1024;
const LOAD_URL = new URL('../../src/native/load.js', import.meta.url).href;
const REDUCER_URL = new URL('../../src/agent/memory-reducer.js', import.meta.url).href;
const LOG_URL = new URL('../../src/log.js', import.meta.url).href;

/** Runs `script` (an ES module) in a child node with `flags`; returns what it printed, parsed. */
function inChild<T>(flags: string[], script: string): T {
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as T;
}

function fake(space: OldSpace, malloc = { free: 0, trims: 0, result: Promise.resolve(true) as Promise<boolean> }) {
  let now = 0;
  let asked = 0;
  const freed: number[] = [];
  const reducer = new MemoryReducer({
    log: silentLogger,
    minFreeBytes: 16 * MB,
    minFreeRatio: 0.2,
    minIntervalMs: 10_000,
    minMallocFreeBytes: 16 * MB,
    oldSpace: () => space,
    pressure: () => asked++,
    mallocFree: () => malloc.free,
    trim: () => {
      malloc.trims++;
      return malloc.result;
    },
    now: () => now,
    onReduce: (free) => freed.push(free),
  });
  return {
    reducer,
    space,
    malloc,
    asked: () => asked,
    freed,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('MemoryReducer', () => {
  it('tells a full collection from the others by the entry it gets', () => {
    const entry = (kind?: number) =>
      ({ entryType: 'gc', detail: kind === undefined ? undefined : { kind } }) as unknown as PerformanceEntry;
    assert.equal(isMajorGc(entry(constants.NODE_PERFORMANCE_GC_MAJOR)), true);
    assert.equal(isMajorGc(entry(constants.NODE_PERFORMANCE_GC_MINOR)), false);
    assert.equal(isMajorGc(entry(constants.NODE_PERFORMANCE_GC_INCREMENTAL)), false);
    assert.equal(isMajorGc(entry()), false);
  });

  it('asks for a reduction when the free bytes pass both bounds', () => {
    const f = fake({ committed: 230 * MB, used: 160 * MB });
    assert.equal(f.reducer.afterFullCollection(), true);
    assert.equal(f.asked(), 1);
    assert.deepEqual(f.freed, [70 * MB]);
    assert.equal(f.reducer.reductions, 1);
  });

  it('leaves a heap alone below either bound', () => {
    // 30 MB free of 160 used: past 16 MB, short of 20%.
    const f = fake({ committed: 190 * MB, used: 160 * MB });
    assert.equal(f.reducer.afterFullCollection(), false);
    // 12 MB free of 20 used: past 20%, short of 16 MB.
    f.space.committed = 32 * MB;
    f.space.used = 20 * MB;
    assert.equal(f.reducer.afterFullCollection(), false);
    assert.equal(f.asked(), 0);
  });

  it('asks at most once in its interval', () => {
    const f = fake({ committed: 230 * MB, used: 160 * MB });
    f.reducer.afterFullCollection();
    // Its own collection, still fragmented (12 MB at a time), and the next natural one.
    f.advance(300);
    assert.equal(f.reducer.afterFullCollection(), false);
    f.advance(9_000);
    assert.equal(f.reducer.afterFullCollection(), false);
    f.advance(700);
    assert.equal(f.reducer.afterFullCollection(), true);
    assert.equal(f.asked(), 2);
  });

  it('asks for one reduction now, whatever the heap, and leaves the fragmentation rule its interval', () => {
    const f = fake({ committed: 120 * MB, used: 118 * MB });
    assert.equal(f.reducer.reduceNow('initial sync applied'), true);
    assert.equal(f.asked(), 1);
    assert.deepEqual(f.freed, [2 * MB]);
    // The stream's first fragmented collection, soon after.
    f.advance(20_000);
    f.space.committed = 230 * MB;
    assert.equal(f.reducer.afterFullCollection(), true);
    f.advance(5_000);
    assert.equal(f.reducer.afterFullCollection(), false, 'within its interval');
    assert.equal(f.reducer.reductions, 2);
  });

  it("reports a failed signal instead of throwing from the collector's callback", () => {
    const warned: unknown[] = [];
    const reducer = new MemoryReducer({
      log: { ...silentLogger, warn: (o: unknown) => warned.push(o), debug() {} } as unknown as typeof silentLogger,
      oldSpace: () => ({ committed: 230 * MB, used: 160 * MB }),
      pressure: () => {
        throw new Error('no isolate');
      },
      mallocFree: () => 0,
      trim: async () => false,
    });
    assert.equal(reducer.afterFullCollection(), false);
    assert.equal(reducer.reductions, 0);
    assert.equal(warned.length, 1);
  });

  it('trims the C allocator when its arenas hold 16 MB more free than at the last trim, one at a time, at most once in the interval', async () => {
    const f = fake({ committed: 100 * MB, used: 100 * MB });
    f.malloc.free = 10 * MB;
    assert.equal(f.reducer.maybeTrim(), false, 'below the bound');
    f.malloc.free = 40 * MB;
    let release: (v: boolean) => void = () => {};
    f.malloc.result = new Promise((r) => {
      release = r;
    });
    assert.equal(f.reducer.maybeTrim(), true);
    f.advance(20_000);
    assert.equal(f.reducer.maybeTrim(), false, 'one under way');
    release(true);
    await f.reducer.trimming;
    assert.equal(f.reducer.trims, 1);
    assert.equal(f.reducer.trimming, undefined);
    // Steady churn: the chunks a trim left free are reused and freed again; nothing new.
    f.malloc.free = 50 * MB;
    assert.equal(f.reducer.maybeTrim(), false, 'only 10 MB more than at the last trim');
    f.malloc.free = 56 * MB;
    assert.equal(f.reducer.maybeTrim(), true, '16 MB more, and the interval has passed');
    await f.reducer.trimming;
    f.malloc.free = 90 * MB;
    f.advance(9_000);
    assert.equal(f.reducer.maybeTrim(), false, 'within the interval');
    assert.equal(f.malloc.trims, 2);
    assert.equal(f.reducer.trims, 2);
  });

  it('measures the rise from the lowest free count since the last trim: a burst after reuse is trimmed', async () => {
    const f = fake({ committed: 100 * MB, used: 100 * MB });
    f.malloc.free = 60 * MB;
    assert.equal(f.reducer.maybeTrim(), true, 'after the initial sync');
    await f.reducer.trimming;
    // Steady churn reuses the free chunks, some of them within the interval.
    f.advance(5_000);
    f.malloc.free = 35 * MB;
    assert.equal(f.reducer.maybeTrim(), false);
    f.advance(10_000);
    f.malloc.free = 30 * MB;
    assert.equal(f.reducer.maybeTrim(), false);
    f.advance(10_000);
    f.malloc.free = 44 * MB;
    assert.equal(f.reducer.maybeTrim(), false, '14 MB above the lowest: steady');
    // A resync frees 20 MB: below the last trim's count, 20 MB above the lowest since.
    f.malloc.free = 50 * MB;
    assert.equal(f.reducer.maybeTrim(), true);
    await f.reducer.trimming;
    // A dip within the interval is where the next rise counts from.
    f.advance(1_000);
    f.malloc.free = 20 * MB;
    assert.equal(f.reducer.maybeTrim(), false, 'within the interval');
    f.advance(10_000);
    f.malloc.free = 36 * MB;
    assert.equal(f.reducer.maybeTrim(), true);
    await f.reducer.trimming;
    assert.equal(f.malloc.trims, 3);
  });

  it('trims a moment after a full collection, once the reducer is started, and not after it is stopped', async () => {
    let trims = 0;
    const reducer = new MemoryReducer({
      log: silentLogger,
      oldSpace: () => ({ committed: 100 * MB, used: 100 * MB }),
      pressure: () => {},
      mallocFree: () => 64 * MB,
      trim: async () => {
        trims++;
        return true;
      },
      minIntervalMs: 0,
      trimDelayMs: 20,
    });
    reducer.start();
    assert.equal(trims, 0, 'none at start: what is freed is freed by a collection');
    native.memoryPressure('critical'); // full collections, seen by the reducer's observer
    const deadline = Date.now() + 5000;
    while (reducer.trims === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.ok(trims >= 1);
    await reducer.trimming;
    reducer.stop();
    const atStop = trims;
    native.memoryPressure('critical');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(trims, atStop);
  });

  it('reports a failed trim, and does not count it', async () => {
    const warned: unknown[] = [];
    const reducer = new MemoryReducer({
      log: { ...silentLogger, warn: (o: unknown) => warned.push(o), debug() {} } as unknown as typeof silentLogger,
      oldSpace: () => ({ committed: 100 * MB, used: 100 * MB }),
      pressure: () => {},
      mallocFree: () => 64 * MB,
      trim: () => Promise.reject(new Error('EINTERNAL')),
    });
    assert.equal(reducer.maybeTrim(), true);
    await reducer.trimming;
    assert.equal(reducer.trims, 0);
    assert.equal(warned.length, 1);
    // A native throw, from the collector's callback: reported, not thrown.
    const throwing = new MemoryReducer({
      log: { ...silentLogger, warn: (o: unknown) => warned.push(o), debug() {} } as unknown as typeof silentLogger,
      oldSpace: () => ({ committed: 100 * MB, used: 100 * MB }),
      pressure: () => {},
      mallocFree: () => {
        throw new Error('EINTERNAL');
      },
      trim: async () => true,
    });
    assert.equal(throwing.maybeTrim(), false);
    assert.equal(warned.length, 2);
  });

  it("hands the C allocator's free pages back (malloc_trim, in a child)", () => {
    // 160 MB of array buffers (Node allocates them with malloc), one in 32 kept: the
    // arena's top stays in use, so glibc hands back nothing by itself.
    const script = `
      const { native } = await import(${JSON.stringify(LOAD_URL)});
      let keep = [];
      for (let i = 0; i < 40000; i++) keep.push(new ArrayBuffer(4096));
      keep = keep.filter((_, i) => i % 32 === 0);
      globalThis.gc(); globalThis.gc();
      await new Promise((r) => setTimeout(r, 100));
      const free = native.mallocStats().free;
      const rss = process.memoryUsage.rss();
      const released = await native.mallocTrim();
      console.log(JSON.stringify({ free, released, rss, rssAfter: process.memoryUsage.rss(), kept: keep.length }));
    `;
    const out = inChild<{ free: number; released: boolean; rss: number; rssAfter: number }>(['--expose-gc'], script);
    assert.ok(out.free > 100 * MB, `free in the arenas: ${out.free}`);
    assert.equal(out.released, true);
    assert.ok(out.rss - out.rssAfter > 80 * MB, `RSS ${out.rss} -> ${out.rssAfter}`);
    const stats = native.mallocStats();
    assert.ok(stats.inUse > 0 && stats.free >= 0 && stats.arenas > 0, JSON.stringify(stats));
  });

  it('gives a node gone quiet after its sync its memory back: a collection asked, then the trim (in a child)', () => {
    // A sync's garbage: 160 MB of array buffers (malloc'd) dropped, one in 32 kept, and
    // then no allocation at all. (V8 12 may collect such a heap by itself within a
    // second or two, V8 11 does not: the collection asked is counted on its own.)
    const script = `
      const { startMemoryReducer, isMajorGc } = await import(${JSON.stringify(REDUCER_URL)});
      const { silentLogger } = await import(${JSON.stringify(LOG_URL)});
      const { PerformanceObserver } = await import('node:perf_hooks');
      let bufs = [];
      for (let i = 0; i < 40000; i++) bufs.push(new ArrayBuffer(4096));
      const kept = bufs.filter((_, i) => i % 32 === 0);
      bufs = undefined;
      const rss = process.memoryUsage.rss();
      const reducer = startMemoryReducer(silentLogger);
      let majors = 0;
      new PerformanceObserver((l) => { majors += l.getEntries().filter(isMajorGc).length; }).observe({ entryTypes: ['gc'] });
      const asked = reducer.reduceNow('initial sync applied');
      const deadline = Date.now() + 8000;
      while ((reducer.trims === 0 || majors === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await reducer.trimming;
      reducer.stop();
      console.log(JSON.stringify({ asked, majors, trims: reducer.trims, rss, rssAfter: process.memoryUsage.rss(), kept: kept.length }));
    `;
    const out = inChild<{ asked: boolean; majors: number; trims: number; rss: number; rssAfter: number }>(
      ['--no-allocation-site-pretenuring'],
      script,
    );
    assert.equal(out.asked, true);
    assert.ok(out.majors >= 1, 'the full collection asked came');
    assert.equal(out.trims, 1);
    assert.ok(out.rss - out.rssAfter > 80 * MB, `RSS ${out.rss} -> ${out.rssAfter}`);
  });

  it('refuses a pressure level V8 does not have', () => {
    assert.throws(
      () => (native.memoryPressure as (l: string) => void)('none'),
      (e: Error & { code?: string }) => e.code === 'EINVAL',
    );
    assert.throws(
      () => (native.memoryPressure as () => void)(),
      (e: Error & { code?: string }) => e.code === 'EINVAL',
    );
  });

  it("hands a fragmented old space's pages back (V8's signal, in a child)", () => {
    // 400,000 objects promoted to the old space, three in four dropped: a full collection
    // frees them in place, over every page, and V8's own heuristics compact none.
    const script = `
      const { startMemoryReducer, readOldSpace } = await import(${JSON.stringify(REDUCER_URL)});
      const { silentLogger } = await import(${JSON.stringify(LOG_URL)});
      const { PerformanceObserver, constants } = await import('node:perf_hooks');
      const reducer = startMemoryReducer(silentLogger);
      let majors = 0;
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
      }).observe({ entryTypes: ['gc'] });
      const keep = [];
      for (let i = 0; i < 400000; i++) keep.push({ n: i, s: 'entry ' + i, a: [i, i + 1, i + 2] });
      globalThis.gc(); globalThis.gc();
      for (let i = 0; i < keep.length; i++) if (i % 4) keep[i] = undefined;
      globalThis.gc();
      const fragmented = readOldSpace();
      const deadline = Date.now() + 10000;
      while (majors < 2 || reducer.reductions === 0) {
        if (Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 200));
      console.log(JSON.stringify({ fragmented, reduced: readOldSpace(), reductions: reducer.reductions, kept: keep.length }));
    `;
    const out = inChild<{ fragmented: OldSpace; reduced: OldSpace; reductions: number }>(
      ['--expose-gc', '--no-allocation-site-pretenuring'],
      script,
    );
    assert.equal(out.reductions, 1, JSON.stringify(out));
    const freeBefore = out.fragmented.committed - out.fragmented.used;
    assert.ok(freeBefore >= 16 * MB, `the child's old space was fragmented: ${JSON.stringify(out)}`);
    assert.ok(
      out.reduced.committed < out.fragmented.committed - freeBefore / 2,
      `the reduction handed back at least half the free pages: ${JSON.stringify(out)}`,
    );
  });
});
