// Felix's health semantics: live/ready only while every reporter reported in time.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { describe, it } from 'node:test';

import { HealthAggregator, serveHealth } from '../../src/health/health.js';
import { createLogger } from '../../src/log.js';
import { AgentMetrics, serveMetrics } from '../../src/metrics/metrics.js';

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

describe('health and metrics servers against hostile requests', () => {
  /** Sends raw bytes, returns the status line of the answer ('' if none). */
  const raw = (port: number, text: string) =>
    new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1', () => s.end(text));
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
      s.on('error', () => resolve(got.split('\r\n')[0] ?? ''));
    });

  it('answers 4xx to malformed requests and keeps serving (a bad target once killed the agent)', async () => {
    const log = createLogger({ severity: 'Fatal' });
    const h = new HealthAggregator();
    h.register('x', { live: true, ready: true, timeoutMs: 60_000 });
    h.report('x', { live: true, ready: true });
    const health = await serveHealth(h, '127.0.0.1', 0, log);
    const metrics = await serveMetrics(new AgentMetrics(), '127.0.0.1', 0, log);
    try {
      for (const server of [health, metrics]) {
        const port = (server.address() as AddressInfo).port;
        assert.match(await raw(port, 'GET http://[/ HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400/);
        assert.match(await raw(port, 'GET //[::1 HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 (400|404)/);
        assert.match(await raw(port, 'NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400/);
        assert.match(await raw(port, `GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 (404|414|431|400)/);
      }
      const hp = (health.address() as AddressInfo).port;
      assert.match(await raw(hp, 'GET /liveness HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 204/, 'still serving');
    } finally {
      health.close();
      metrics.close();
    }
  });
});
