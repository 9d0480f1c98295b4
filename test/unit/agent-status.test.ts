// palisade status's reading of the agent: the Prometheus text parser (labels with escapes,
// summaries' _count lines), the endpoints the local configuration names (wildcard hosts
// reached on loopback, TLS when the agent serves metrics over it), and a clear report of
// what cannot be reached (exit code 1 from the command).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { defaultConfig } from '../../src/config/params.js';
import { endpointsFor, formatStatus, parseMetrics, readAgentStatus } from '../../src/status/agent-status.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));

describe('palisade status', () => {
  it('parses Prometheus text: labels with escapes, several samples of one name', () => {
    const m = parseMetrics(
      [
        '# HELP palisade_info x',
        'palisade_info{version="0.1.0",hostname="n\\"1",datastore_type="etcdv3",rules_backend="nftables"} 1',
        'felix_int_dataplane_apply_time_seconds_count 12',
        'palisade_workload_endpoint_up{interface="cali1"} 1',
        'palisade_workload_endpoint_up{interface="cali2"} 0',
      ].join('\n'),
    );
    assert.deepEqual(m.get('palisade_info')?.[0]?.labels.hostname, 'n"1');
    assert.equal(m.get('felix_int_dataplane_apply_time_seconds_count')?.[0]?.value, 12);
    assert.equal(m.get('palisade_workload_endpoint_up')?.length, 2);
  });

  it('reaches the agent where its configuration says (a wildcard host on loopback)', () => {
    const cfg = {
      ...defaultConfig(),
      HealthHost: '0.0.0.0',
      HealthPort: 9199,
      PrometheusMetricsHost: '',
      PrometheusMetricsPort: 9191,
    };
    const eps = endpointsFor(cfg);
    assert.equal(eps.health.url, 'http://127.0.0.1:9199');
    assert.equal(eps.metrics.url, 'http://127.0.0.1:9191');
    assert.equal(endpointsFor({ ...cfg, HealthHost: '::' }).health.url, 'http://[::1]:9199');
  });

  it('says what cannot be read, and exits 1', async () => {
    const s = await readAgentStatus(
      { health: { url: 'http://127.0.0.1:1' }, metrics: { url: 'http://127.0.0.1:1' } },
      500,
    );
    assert.match(s.health.error ?? '', /nothing listens on http:\/\/127\.0\.0\.1:1/);
    assert.match(formatStatus(s), /metrics {5}unreachable/);
    const r = spawnSync(
      process.execPath,
      [BIN, 'status', '--health', 'http://127.0.0.1:1', '--metrics', 'http://127.0.0.1:1'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 1);
    assert.match(r.stdout, /health {6}unreachable/);
    const bad = spawnSync(process.execPath, [BIN, 'status', '--health', 'localhost'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--health: expected http\(s\):\/\/host:port/);
  });
});
