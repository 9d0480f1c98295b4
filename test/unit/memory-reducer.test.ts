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

function fake(space: OldSpace) {
  let now = 0;
  let asked = 0;
  const freed: number[] = [];
  const reducer = new MemoryReducer({
    log: silentLogger,
    minFreeBytes: 16 * MB,
    minFreeRatio: 0.2,
    minIntervalMs: 10_000,
    oldSpace: () => space,
    pressure: () => asked++,
    now: () => now,
    onReduce: (free) => freed.push(free),
  });
  return {
    reducer,
    space,
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

  it("reports a failed signal instead of throwing from the collector's callback", () => {
    const warned: unknown[] = [];
    const reducer = new MemoryReducer({
      log: { ...silentLogger, warn: (o: unknown) => warned.push(o), debug() {} } as unknown as typeof silentLogger,
      oldSpace: () => ({ committed: 230 * MB, used: 160 * MB }),
      pressure: () => {
        throw new Error('no isolate');
      },
    });
    assert.equal(reducer.afterFullCollection(), false);
    assert.equal(reducer.reductions, 0);
    assert.equal(warned.length, 1);
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
    const reducerUrl = new URL('../../src/agent/memory-reducer.js', import.meta.url).href;
    const logUrl = new URL('../../src/log.js', import.meta.url).href;
    // 400,000 objects promoted to the old space, three in four dropped: a full collection
    // frees them in place, over every page, and V8's own heuristics compact none.
    const script = `
      const { startMemoryReducer, readOldSpace } = await import(${JSON.stringify(reducerUrl)});
      const { silentLogger } = await import(${JSON.stringify(logUrl)});
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
    const r = spawnSync(
      process.execPath,
      ['--expose-gc', '--no-allocation-site-pretenuring', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { fragmented: OldSpace; reduced: OldSpace; reductions: number };
    assert.equal(out.reductions, 1, r.stdout);
    const freeBefore = out.fragmented.committed - out.fragmented.used;
    assert.ok(freeBefore >= 16 * MB, `the child's old space was fragmented: ${r.stdout}`);
    assert.ok(
      out.reduced.committed < out.fragmented.committed - freeBefore / 2,
      `the reduction handed back at least half the free pages: ${r.stdout}`,
    );
  });
});
