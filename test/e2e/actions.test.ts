// Felix's configured verdicts with real packets: NftablesFilterDenyAction Reject answers a
// denied connection at once (the client sees it refused instead of waiting), and
// NftablesFilterAllowAction Return still lets allowed traffic through (the kernel's own
// chain accepts it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('actions');
const V3 = 'projectcalico.org/v3';

describe("e2e: Reject and Return as the filter table's deny and allow actions", { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let a: Workload, b: Workload;
  let agent: LabAgent | undefined;

  /** How a TCP connect from `w` ends: "connected", an error code, or "timeout" after 2 s. */
  const connect = (w: Workload, ip: string, port: number) => {
    const script = `const s = require('net').connect(${port}, '${ip}'); const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, 2000); s.on('connect', () => { console.log('connected'); process.exit(0); }); s.on('error', (e) => { console.log(e.code); process.exit(0); });`;
    const t0 = Date.now();
    const out = spawnSync('ip', ['netns', 'exec', w.ns, process.execPath, '-e', script], {
      encoding: 'utf8',
    }).stdout.trim();
    return { out, ms: Date.now() - t0 };
  };

  before(async () => {
    lab = new Lab('palisade-actions');
    a = lab.addWorkload('a', '10.66.0.10', 1);
    b = lab.addWorkload('b', '10.66.0.11', 2);
    await lab.listen(b, [8080, 9090]);
    const dir = tempDir();
    const wep = (w: Workload) => labWorkloadEndpoint(w, { app: w.name });
    const resources = [
      {
        apiVersion: V3,
        kind: 'FelixConfiguration',
        metadata: { name: 'default' },
        spec: { nftablesFilterDenyAction: 'Reject', nftablesFilterAllowAction: 'Return' },
      },
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'b', namespace: 'e2e' },
        spec: {
          selector: "app == 'b'",
          ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [9090] } }],
        },
      },
      wep(a),
      wep(b),
    ];
    writeResources(dir, resources);
    agent = new LabAgent(lab, dir);
    await agent.applied();
  });
  after(() => {
    agent?.proc.kill('SIGTERM');
    lab?.destroy();
  });

  it('lets allowed traffic through with Return', () => {
    assert.equal(connect(a, b.ip, 9090).out, 'connected');
  });

  it('refuses denied traffic at once with Reject', () => {
    const r = connect(a, b.ip, 8080);
    assert.equal(r.out, 'ECONNREFUSED', `got ${r.out}`);
    assert.ok(r.ms < 1500, `took ${r.ms} ms`);
  });
});
