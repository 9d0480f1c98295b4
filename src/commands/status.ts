// `palisade status`: one screen about the running agent on this host, from its health and
// metrics endpoints (src/status/agent-status.ts).
import { parseArgs } from 'node:util';

import { configFromFlags } from './datastore-flags.js';
import { createLogger } from '../log.js';
import { type AgentStatus, endpointsFor, formatStatus, readAgentStatus } from '../status/agent-status.js';

export const STATUS_USAGE = `Usage: palisade status [options]

Shows the running agent: health (each component, and the last apply failure), the
datastore's sync state, counts (local endpoints, active policies, IP sets, rules), the
last dataplane apply (when, how long, failures), the drift repairs since start and, where
WireGuard runs, its devices (key, port, peers, handshakes) and the nodes WireguardRequired
blocks. Read from the agent's health server (HealthHost:HealthPort) and its metrics
server (PrometheusMetricsHost:PrometheusMetricsPort, over TLS with PrometheusMetrics*File),
as the local configuration (env, config file) says unless the flags say otherwise.

Options:
  --config-file PATH     Felix-style INI file (default /etc/calico/felix.cfg if present)
  --health URL           the health server (default http://HealthHost:HealthPort)
  --metrics URL          the metrics server (default http(s)://PrometheusMetricsHost:PrometheusMetricsPort)
  --watch [SECONDS]      refresh every SECONDS (default 2) until interrupted
  --json                 print the status as JSON
  --timeout SECONDS      give up on an endpoint after this long (default 2)

Examples:
  palisade status
  palisade status --watch 1
  palisade status --health http://127.0.0.1:9099 --metrics http://10.0.0.5:9091 --json

Exit codes: 0 the agent is ready, 1 it is not (or cannot be reached), 2 bad usage.`;

const ok = (s: AgentStatus) => !s.health.error && s.health.ready === true;

export async function runStatus(argv: string[]): Promise<number> {
  let values: { 'config-file'?: string; health?: string; metrics?: string; json?: boolean; timeout?: string };
  let watchS: number | undefined;
  const args = [...argv];
  // --watch takes an optional number: parseArgs has no optional values, so it is read here.
  const w = args.indexOf('--watch');
  if (w >= 0) {
    const next = args[w + 1];
    watchS = next !== undefined && /^\d+(\.\d+)?$/.test(next) ? Number(next) : 2;
    args.splice(w, next !== undefined && /^\d+(\.\d+)?$/.test(next) ? 2 : 1);
    if (!(watchS > 0)) return usage('--watch: expected a positive number of seconds');
  }
  try {
    ({ values } = parseArgs({
      args,
      options: {
        'config-file': { type: 'string' },
        health: { type: 'string' },
        metrics: { type: 'string' },
        json: { type: 'boolean' },
        timeout: { type: 'string' },
      },
      strict: true,
    }));
  } catch (e) {
    return usage((e as Error).message);
  }
  const timeoutS = values.timeout === undefined ? 2 : Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    return usage(`--timeout: expected a positive number of seconds, got "${values.timeout}"`);
  for (const flag of ['health', 'metrics'] as const) {
    const v = values[flag];
    if (v !== undefined && !/^https?:\/\/[^/]+\/?$/.test(v))
      return usage(`--${flag}: expected http(s)://host:port, got "${v}"`);
  }
  const log = createLogger({ severity: 'Warning' });
  let eps: ReturnType<typeof endpointsFor>;
  try {
    eps = endpointsFor(configFromFlags({ 'config-file': values['config-file'] }, log).config);
  } catch (e) {
    console.error(`palisade status: ${(e as Error).message}`);
    return 2;
  }
  if (values.health) eps.health = { url: values.health.replace(/\/$/, '') };
  if (values.metrics) eps.metrics = { ...eps.metrics, url: values.metrics.replace(/\/$/, '') };

  const once = async () => {
    const s = await readAgentStatus(eps, timeoutS * 1000);
    return { s, text: values.json ? JSON.stringify(s) : formatStatus(s) };
  };
  if (watchS === undefined) {
    const { s, text } = await once();
    console.log(text);
    return ok(s) ? 0 : 1;
  }
  let stop = false;
  process.once('SIGINT', () => (stop = true));
  process.once('SIGTERM', () => (stop = true));
  let last: AgentStatus | undefined;
  while (!stop) {
    const { s, text } = await once();
    last = s;
    // A terminal gets the screen redrawn; a pipe gets one block per refresh.
    process.stdout.write(process.stdout.isTTY && !values.json ? `\x1b[H\x1b[2J${text}\n` : `${text}\n`);
    for (let t = 0; t < watchS * 1000 && !stop; t += 100) await new Promise((r) => setTimeout(r, 100));
  }
  return last && ok(last) ? 0 : 1;
}

function usage(message: string): number {
  console.error(`palisade status: ${message}\n\n${STATUS_USAGE}`);
  return 2;
}
