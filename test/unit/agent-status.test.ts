// palisade status's reading of the agent: the Prometheus text parser (labels with escapes,
// summaries' _count lines), the endpoints the local configuration names (wildcard hosts
// reached on loopback, TLS when the agent serves metrics over it), and a clear report of
// what cannot be reached (exit code 1 from the command).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { AddressInfo } from 'node:net';

import { Gauge, Registry } from 'prom-client';

import { defaultConfig } from '../../src/config/params.js';
import { silentLogger } from '../../src/log.js';
import { serveMetrics } from '../../src/metrics/metrics.js';
import { type WireguardDeviceReading, WireguardMetrics } from '../../src/metrics/wireguard-metrics.js';
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

  it("serves Felix's WireGuard metrics from the devices read at scrape time (at most once a second), and shows them", async (t) => {
    const registry = new Registry();
    const key = 'Jp6x1mUUmWdTTAwzXS1dvZX1dMXDXiP4pY+iVuc7dxs=';
    const peer = (n: number, handshake: number) => ({
      publicKey: `${String(n).repeat(43).slice(0, 43)}=`,
      endpoint: `192.0.2.${n}:51820`,
      allowedIps: [],
      persistentKeepalive: 0,
      lastHandshakeSec: handshake,
      rxBytes: 1000 * n,
      txBytes: 10 * n,
    });
    let reads = 0;
    let clock = 1_000_000_000_000;
    const device: WireguardDeviceReading = {
      iface: 'wireguard.cali',
      device: {
        privateKey: '',
        publicKey: key,
        listenPort: 51820,
        fwmark: 0x200000,
        peers: [peer(1, 999_999_990), peer(2, 0)],
      },
    };
    new WireguardMetrics(
      registry,
      async () => {
        reads++;
        return [device];
      },
      silentLogger,
      'node1',
      () => clock,
    );
    new Gauge({
      name: 'palisade_wireguard_required_blocked_peers',
      help: 'x',
      labelNames: ['ip_version'],
      registers: [registry],
    }).set({ ip_version: '4' }, 1);
    const text = await registry.metrics();
    assert.match(text, /# TYPE wireguard_meta gauge/);
    assert.match(text, /# TYPE wireguard_bytes_rcvd counter/);
    assert.match(text, /# TYPE wireguard_latest_handshake_seconds gauge/);
    assert.match(
      text,
      /wireguard_meta\{hostname="node1",public_key="Jp6x[^"]+",iface="wireguard.cali",listen_port="51820"\} 1/,
    );
    assert.match(
      text,
      /wireguard_bytes_sent\{hostname="node1",public_key="Jp6x[^"]+",peer_key="2{43}=",peer_endpoint="192.0.2.2:51820"\} 20/,
    );
    await registry.metrics();
    assert.equal(reads, 1, 'one read within a second, however many scrapes');
    clock += 1500;
    const server = await serveMetrics({ registry }, '127.0.0.1', 0, silentLogger);
    t.after(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const s = await readAgentStatus({ health: { url: 'http://127.0.0.1:1' }, metrics: { url } }, 2000, clock);
    assert.equal(reads, 2);
    assert.deepEqual(s.wireguard, {
      devices: [
        {
          iface: 'wireguard.cali',
          publicKey: key,
          listenPort: 51820,
          peers: 2,
          handshaken: 1,
          latestHandshakeAgeS: 12,
          rxBytes: 3000,
          txBytes: 30,
        },
      ],
      blocked: { 4: 1 },
    });
    const screen = formatStatus(s);
    assert.match(screen, /wireguard {3}wireguard\.cali port 51820, key Jp6x/);
    assert.match(screen, /peers 2 \(1 with a handshake, newest 12 s ago\)/);
    assert.match(screen, /WireguardRequired: 1 node\(s\) unreachable over IPv4/);
  });
});
