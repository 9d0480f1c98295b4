// `npm run bench -- kdd`: the Kubernetes datastore's start-up on a big cluster. The tests'
// API server (a child process) holds 50,000 pods in 2,000 namespaces, 5,000 Kubernetes
// NetworkPolicies, a node; this process runs the agent's control plane on the Kubernetes
// datastore (list everything, convert, process, calc graph) until its first flush after
// in-sync. Reported: list_to_insync_s and the process's peak RSS.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import { ControlPlane } from '../src/agent/control-plane.js';
import { ConfigResolver } from '../src/config/config.js';
import { KddSyncer } from '../src/datastore/kdd/kdd-syncer.js';
import { HttpKubeTransport } from '../src/datastore/kdd/transport.js';
import { silentLogger } from '../src/log.js';
import type { ToDataplane } from '../src/proto/messages.js';
import { calibrationMs, log, peakRssMb, report } from './lib/report.js';

const PODS = 50_000;
const NAMESPACES = 2_000;
const POLICIES = 5_000;
const NODES = 1_000;
const API_MAIN = fileURLToPath(new URL('../test/helpers/kube-apiserver-main.js', import.meta.url));

async function main(): Promise<void> {
  const calibration = calibrationMs();
  const api = spawn(process.execPath, [API_MAIN], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  api.stdout.on('data', (d: Buffer) => (out += d.toString()));
  while (!out.includes('"url"')) await new Promise((r) => setTimeout(r, 20));
  const url = (JSON.parse(out.split('\n')[0] as string) as { url: string }).url;
  let sent = 0;
  const putMany = async (resource: string, objects: unknown[]) => {
    for (let i = 0; i < objects.length; i += 2000) {
      const n = ++sent;
      api.stdin.write(`${JSON.stringify({ op: 'putMany', resource, objects: objects.slice(i, i + 2000) })}\n`);
      while (!out.includes(`{"done":${n}}`)) await new Promise((r) => setTimeout(r, 5));
    }
  };
  log(`filling the API server: ${PODS} pods, ${NAMESPACES} namespaces, ${POLICIES} NetworkPolicies`);
  await putMany(
    'namespaces',
    Array.from({ length: NAMESPACES }, (_, i) => ({ metadata: { name: `ns-${i}`, labels: { team: `t${i % 50}` } } })),
  );
  await putMany(
    'serviceaccounts',
    Array.from({ length: NAMESPACES }, (_, i) => ({ metadata: { name: 'default', namespace: `ns-${i}` } })),
  );
  await putMany(
    'nodes',
    Array.from({ length: NODES }, (_, i) => ({ metadata: { name: `node${i}` } })),
  );
  await putMany(
    'pods',
    Array.from({ length: PODS }, (_, i) => {
      const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      return {
        metadata: {
          name: `pod-${i}`,
          namespace: `ns-${i % NAMESPACES}`,
          labels: { app: `a${i % 20}`, version: `v${i % 3}` },
        },
        spec: {
          nodeName: `node${i % NODES}`,
          serviceAccountName: 'default',
          containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }],
        },
        status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
      };
    }),
  );
  await putMany(
    'networkpolicies',
    Array.from({ length: POLICIES }, (_, i) => ({
      metadata: { name: `np-${i}`, namespace: `ns-${i % NAMESPACES}` },
      spec: {
        podSelector: { matchLabels: { app: `a${i % 20}` } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: `a${(i + 1) % 20}` } } }], ports: [{ port: 8000 + (i % 10) }] },
        ],
      },
    })),
  );

  log('agent control plane on the Kubernetes datastore: list -> in-sync -> first flush');
  let messages = 0;
  let done: () => void = () => {};
  const flushed = new Promise<void>((r) => (done = r));
  const t0 = performance.now();
  const cp = new ControlPlane({
    syncer: new KddSyncer({ transport: new HttpKubeTransport({ server: url }), log: silentLogger, pageSize: 500 }),
    config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
    log: silentLogger,
    onMessages: (m: ToDataplane[]) => {
      messages += m.length;
      if (m.some((x) => x.type === 'InSync')) done();
    },
    onRestartNeeded: () => {},
  });
  cp.start();
  await flushed;
  const listToInSyncS = (performance.now() - t0) / 1000;
  const rss = peakRssMb();
  await cp.stop();
  api.stdin.end();
  api.kill();
  await once(api, 'exit');
  report(
    'kdd',
    {
      pods: PODS,
      namespaces: NAMESPACES,
      policies: POLICIES,
      local_pods: PODS / NODES,
      messages,
      list_to_insync_s: listToInSyncS,
      rss_mb: rss,
      machine_calibration_ms: calibration,
    },
    [
      ['list_to_insync_s', '<=', 5],
      ['rss_mb', '<=', 400],
    ],
  );
  process.exit(0);
}

await main();
