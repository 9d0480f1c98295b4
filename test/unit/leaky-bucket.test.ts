// The graph's flush throttle, as Felix's AsyncCalcGraph: ten flushes at once, then one
// per 10 ms tick, ticks counted from the start whether or not a flush used them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { LeakyBucket } from '../../src/agent/leaky-bucket.js';

describe('flush throttle (leaky bucket)', () => {
  it('lets a burst of ten flushes go at once, then one a tick', () => {
    const b = new LeakyBucket(10, 10, 0);
    for (let i = 0; i < 10; i++) {
      assert.equal(b.wait(1), 0, `flush ${i}`);
      b.take(1);
    }
    assert.equal(b.wait(1), 9, 'the eleventh waits for the tick at 10 ms');
    assert.equal(b.wait(10), 0);
    b.take(10);
    assert.equal(b.wait(14), 6);
    assert.equal(b.wait(20), 0);
  });

  it('refills while idle, never above its size', () => {
    const b = new LeakyBucket(10, 10, 0);
    for (let i = 0; i < 10; i++) b.take(0);
    assert.equal(b.wait(35), 0, 'three ticks passed');
    for (let i = 0; i < 3; i++) b.take(35);
    assert.equal(b.wait(35), 5, 'the next tick is at 40 ms');
    // An hour idle: ten in hand, not hundreds of thousands.
    for (let i = 0; i < 10; i++) b.take(3_600_000);
    assert.ok(b.wait(3_600_000) > 0);
  });

  it('a flush taken with none in hand does not go into debt', () => {
    const b = new LeakyBucket(1, 10, 0);
    b.take(0);
    b.take(0);
    assert.equal(b.wait(10), 0);
  });
});
