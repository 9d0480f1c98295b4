// Felix's health semantics: live/ready only while every reporter reported in time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { HealthAggregator } from '../../src/health/health.js';

describe('health aggregator', () => {
  it('is ready only when every ready-reporter is, and not live once a reporter goes stale', () => {
    let now = 0;
    const h = new HealthAggregator(() => now);
    h.register('calc_graph', { live: true, ready: true, timeoutMs: 60_000 });
    h.register('int_dataplane', { live: true, ready: true, timeoutMs: 90_000 });
    h.register('other', { live: false, ready: false, timeoutMs: 1 });
    assert.equal(h.live(), false, 'nobody reported yet');
    h.report('calc_graph', { live: true, ready: false });
    h.report('int_dataplane', { live: true, ready: false });
    assert.equal(h.live(), true);
    assert.equal(h.ready(), false);
    h.report('calc_graph', { ready: true });
    h.report('int_dataplane', { ready: true });
    assert.equal(h.ready(), true);
    now = 70_000;
    h.report('int_dataplane', { live: true });
    assert.equal(h.live(), false, 'calc_graph is stale');
    assert.deepEqual(h.detail().find((d) => d.name === 'calc_graph'), { name: 'calc_graph', live: true, ready: true, stale: true });
    h.report('calc_graph', { live: true });
    assert.equal(h.live(), true);
    assert.throws(() => h.report('nope', {}), /unknown reporter/);
  });
});
