// What `palisade status` shows, read from a running agent's own endpoints: /liveness and
// /readiness?detail=true on HealthHost:HealthPort, /metrics on
// PrometheusMetricsHost:PrometheusMetricsPort (over TLS when the agent serves it so). A
// part that cannot be read is reported as such, with the reason, never guessed.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';

import type { Config } from '../config/params.js';

export interface Endpoint {
  url: string;
  /** Client TLS for the metrics server (PrometheusMetrics{Cert,Key,CA}File). */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
}

export interface Reporter {
  name: string;
  live: boolean;
  ready: boolean;
  stale: boolean;
  reason?: string;
  note?: string;
}

export interface AgentStatus {
  health: { url: string; live?: boolean; ready?: boolean; reporters?: Reporter[]; error?: string };
  metrics: { url: string; error?: string };
  info?: { version: string; hostname: string; datastoreType: string; rulesBackend: string; calicoVersion: string };
  syncState?: string;
  counts?: { endpoints: number; policies: number; ipSets: number; rules: number };
  lastApply?: {
    at: string;
    ageS: number;
    durationMs: number;
    applies: number;
    failures: number;
    lastFailureAt?: string;
  };
  calcGraphFlushes?: number;
  driftRepairs?: number;
  /** palisade's WireGuard devices (Felix's wireguard_* metrics); WireguardRequired's blocked nodes by IP version. */
  wireguard?: { devices: WireguardStatus[]; blocked: Record<string, number> };
}

export interface WireguardStatus {
  iface: string;
  publicKey: string;
  listenPort: number;
  peers: number;
  /** Peers that have completed a handshake, and the newest handshake's age. */
  handshaken: number;
  latestHandshakeAgeS?: number;
  rxBytes: number;
  txBytes: number;
}

const SYNC_STATES: Record<number, string> = { 1: 'wait-for-datastore', 2: 'resync-in-progress', 3: 'in-sync' };

/** Where a client reaches a server bound to `host` ("" or a wildcard: this host's loopback). */
function reach(host: string): string {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

export function endpointsFor(cfg: Config): { health: Endpoint; metrics: Endpoint } {
  const tls = !!(cfg.PrometheusMetricsCertFile && cfg.PrometheusMetricsKeyFile);
  const read = (f: string) => (f ? readFileSync(f) : undefined);
  return {
    health: { url: `http://${reach(cfg.HealthHost)}:${cfg.HealthPort}` },
    metrics: {
      url: `${tls ? 'https' : 'http'}://${reach(cfg.PrometheusMetricsHost)}:${cfg.PrometheusMetricsPort}`,
      ...(tls
        ? {
            tls: {
              ...(cfg.PrometheusMetricsCAFile ? { ca: read(cfg.PrometheusMetricsCAFile) as Buffer } : {}),
              cert: read(cfg.PrometheusMetricsCertFile) as Buffer,
              key: read(cfg.PrometheusMetricsKeyFile) as Buffer,
            },
          }
        : {}),
    },
  };
}

/** GET `path` from `ep`: the status code and body, or a readable error. */
export function get(ep: Endpoint, path: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, ep.url);
    const opts = { timeout: timeoutMs, ...(ep.tls ?? {}) };
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
        if (body.length > 16 << 20) req.destroy(new Error('response larger than 16 MB'));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'ECONNREFUSED' ? `nothing listens on ${ep.url}` : e.message)),
    );
    req.end();
  });
}

/** Prometheus text exposition: metric name -> [labels, value] samples. */
export function parseMetrics(text: string): Map<string, Array<{ labels: Record<string, string>; value: number }>> {
  const out = new Map<string, Array<{ labels: Record<string, string>; value: number }>>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const list = out.get(m[1] as string) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1] as string, list);
  }
  return out;
}

async function readHealth(ep: Endpoint, timeoutMs: number): Promise<AgentStatus['health']> {
  try {
    const ready = await get(ep, '/readiness?detail=true', timeoutMs);
    const live = await get(ep, '/liveness', timeoutMs);
    const detail = JSON.parse(ready.body) as { ready: boolean; reporters: Reporter[] };
    return {
      url: ep.url,
      live: live.status === 204 || live.status === 200,
      ready: detail.ready,
      reporters: detail.reporters,
    };
  } catch (e) {
    return { url: ep.url, error: (e as Error).message };
  }
}

/** Reads what the agent serves; the parts it does not serve carry their error. */
export async function readAgentStatus(
  eps: { health: Endpoint; metrics: Endpoint },
  timeoutMs = 2000,
  now = Date.now(),
): Promise<AgentStatus> {
  const out: AgentStatus = { health: await readHealth(eps.health, timeoutMs), metrics: { url: eps.metrics.url } };
  let text: string;
  try {
    const r = await get(eps.metrics, '/metrics', timeoutMs);
    if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
    text = r.body;
  } catch (e) {
    out.metrics.error = (e as Error).message;
    return out;
  }
  const m = parseMetrics(text);
  const one = (name: string) => m.get(name)?.[0]?.value;
  const info = m.get('palisade_info')?.[0]?.labels;
  if (info)
    out.info = {
      version: info.version ?? '',
      hostname: info.hostname ?? '',
      datastoreType: info.datastore_type ?? '',
      rulesBackend: info.rules_backend ?? '',
      calicoVersion: info.calico_version ?? '',
    };
  const sync = one('felix_resync_state');
  if (sync !== undefined) out.syncState = SYNC_STATES[sync] ?? `unknown (${sync})`;
  out.counts = {
    endpoints: one('felix_active_local_endpoints') ?? 0,
    policies: one('felix_active_local_policies') ?? 0,
    ipSets: one('felix_active_local_selectors') ?? 0,
    rules: one('palisade_rules_programmed') ?? 0,
  };
  const at = one('palisade_last_apply_timestamp_seconds');
  const failedAt = one('palisade_last_apply_failure_timestamp_seconds');
  if (at)
    out.lastApply = {
      at: new Date(at * 1000).toISOString(),
      ageS: Math.max(0, Math.round(now / 1000 - at)),
      durationMs: Math.round((one('palisade_last_apply_duration_seconds') ?? 0) * 1e6) / 1000,
      applies: one('felix_int_dataplane_apply_time_seconds_count') ?? 0,
      failures: one('felix_int_dataplane_failures') ?? 0,
      ...(failedAt ? { lastFailureAt: new Date(failedAt * 1000).toISOString() } : {}),
    };
  out.calcGraphFlushes = one('felix_calc_graph_update_time_seconds_count') ?? 0;
  out.driftRepairs = one('palisade_drift_repairs_total') ?? 0;
  const wg = wireguardOf(m, now);
  if (wg) out.wireguard = wg;
  return out;
}

type Samples = ReturnType<typeof parseMetrics>;

/** The WireGuard devices from wireguard_meta and their peers' samples (by the device's public key). */
function wireguardOf(m: Samples, now: number): AgentStatus['wireguard'] {
  const blocked: Record<string, number> = {};
  for (const s of m.get('palisade_wireguard_required_blocked_peers') ?? [])
    blocked[s.labels.ip_version ?? '?'] = s.value;
  const meta = m.get('wireguard_meta') ?? [];
  if (!meta.length && !Object.keys(blocked).length) return undefined;
  const ofKey = (name: string, key: string) => (m.get(name) ?? []).filter((s) => s.labels.public_key === key);
  const devices = meta.map((d): WireguardStatus => {
    const key = d.labels.public_key ?? '';
    const handshakes = ofKey('wireguard_latest_handshake_seconds', key).filter((s) => s.value > 0);
    const newest = Math.max(0, ...handshakes.map((s) => s.value));
    const sum = (name: string) => ofKey(name, key).reduce((a, s) => a + s.value, 0);
    return {
      iface: d.labels.iface ?? '',
      publicKey: key,
      listenPort: Number(d.labels.listen_port ?? 0),
      peers: ofKey('wireguard_bytes_rcvd', key).length,
      handshaken: handshakes.length,
      ...(newest ? { latestHandshakeAgeS: Math.max(0, Math.round(now / 1000 - newest)) } : {}),
      rxBytes: sum('wireguard_bytes_rcvd'),
      txBytes: sum('wireguard_bytes_sent'),
    };
  });
  return { devices, blocked };
}

function formatWireguard(w: NonNullable<AgentStatus['wireguard']>): string[] {
  const lines: string[] = [];
  for (const d of w.devices) {
    const hs = d.latestHandshakeAgeS === undefined ? 'no handshake yet' : `newest ${d.latestHandshakeAgeS} s ago`;
    lines.push(`  wireguard   ${d.iface} port ${d.listenPort}, key ${d.publicKey}`);
    lines.push(
      `              peers ${d.peers} (${d.handshaken} with a handshake, ${hs}), received ${d.rxBytes} B, sent ${d.txBytes} B`,
    );
  }
  if (!w.devices.length) lines.push('  wireguard   no device running');
  for (const [v, n] of Object.entries(w.blocked))
    if (n)
      lines.push(`  wireguard   WireguardRequired: ${n} node(s) unreachable over IPv${v} (no usable key or device)`);
  return lines;
}

/** One screen, for people. */
export function formatStatus(s: AgentStatus): string {
  const lines: string[] = [];
  const i = s.info;
  lines.push(
    i
      ? `palisade ${i.version} on ${i.hostname}: datastore ${i.datastoreType}, rules backend ${i.rulesBackend}, Calico ${i.calicoVersion || 'release unknown'}`
      : 'palisade agent',
  );
  const h = s.health;
  if (h.error) lines.push(`  health      unreachable (${h.url}): ${h.error}`);
  else {
    lines.push(`  health      ${h.live ? 'live' : 'NOT LIVE'}, ${h.ready ? 'ready' : 'NOT READY'}  (${h.url})`);
    for (const r of h.reporters ?? []) {
      const state = `${r.live ? 'live' : 'not live'}, ${r.ready ? 'ready' : 'not ready'}${r.stale ? ', stale' : ''}`;
      lines.push(`    ${r.name.padEnd(14)}${state}${r.reason ? `: ${r.reason}` : ''}`);
      if (r.note) lines.push(`    ${''.padEnd(14)}${r.note}`);
    }
  }
  if (s.metrics.error) {
    lines.push(`  metrics     unreachable (${s.metrics.url}): ${s.metrics.error}`);
    lines.push('              (counts and the last apply come from the metrics: PrometheusMetricsEnabled)');
    return lines.join('\n');
  }
  lines.push(`  datastore   ${s.syncState ?? 'unknown'}; calc graph flushes: ${s.calcGraphFlushes ?? 0}`);
  const c = s.counts;
  if (c)
    lines.push(`  counts      endpoints ${c.endpoints}, policies ${c.policies}, IP sets ${c.ipSets}, rules ${c.rules}`);
  const a = s.lastApply;
  if (a) {
    lines.push(`  last apply  ${a.at} (${a.ageS} s ago), took ${a.durationMs} ms`);
    lines.push(
      `  applies     ${a.applies}, failed ${a.failures}${a.lastFailureAt ? ` (last at ${a.lastFailureAt})` : ''}`,
    );
  } else lines.push('  last apply  none yet');
  lines.push(`  drift       ${s.driftRepairs ?? 0} chains or sets repaired since start`);
  if (s.wireguard) lines.push(...formatWireguard(s.wireguard));
  return lines.join('\n');
}
