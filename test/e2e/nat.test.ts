// NAT as Felix programs it, with real packets: a workload's floating IP (ipNATs, with
// FloatingIPs Enabled) reached from outside the node, and outgoing NAT from a natOutgoing
// pool to NATOutgoingAddress instead of the masquerade address.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('nat');
const V3 = 'projectcalico.org/v3';
const FIP = '203.0.113.77';
const SNAT_TO = '192.168.200.9';

describe('e2e: floating IPs and NATOutgoingAddress', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let w: Workload;
  let agent: LabAgent | undefined;
  let who: ChildProcess | undefined;
  let seen = '';

  before(async () => {
    lab = new Lab('palisade-nat');
    w = lab.addWorkload('fip', '10.66.0.10', 1);
    await lab.listen(w, [8080]);
    // The host owns the SNAT address; the outside routes the floating IP to the host.
    lab.sh(lab.host, 'ip', ['addr', 'add', `${SNAT_TO}/24`, 'dev', 'eth0']);
    lab.sh(lab.outside, 'ip', ['route', 'add', `${FIP}/32`, 'via', '192.168.200.2']);
    // Outside: a server that prints who connected.
    who = spawn('ip', [
      'netns',
      'exec',
      lab.outside,
      process.execPath,
      '-e',
      "require('net').createServer((s) => { console.log('from ' + s.remoteAddress); s.end(); }).listen(7070, () => console.log('ready'));",
    ]);
    who.stdout?.on('data', (d: Buffer) => (seen += d.toString()));
    assert.ok((await lab.until(() => seen.includes('ready'), 5000)) >= 0);
    const dir = tempDir();
    const resources = [
      {
        apiVersion: V3,
        kind: 'FelixConfiguration',
        metadata: { name: 'default' },
        spec: { floatingIPs: 'Enabled', natOutgoingAddress: SNAT_TO },
      },
      { apiVersion: V3, kind: 'IPPool', metadata: { name: 'pods' }, spec: { cidr: '10.66.0.0/16', natOutgoing: true } },
      {
        apiVersion: V3,
        kind: 'Profile',
        metadata: { name: 'kns.e2e' },
        spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
      },
      {
        apiVersion: V3,
        kind: 'WorkloadEndpoint',
        metadata: { name: 'node1-k8s-fip-eth0', namespace: 'e2e', labels: { app: 'fip' } },
        spec: {
          node: 'node1',
          orchestrator: 'k8s',
          pod: 'fip',
          endpoint: 'eth0',
          interfaceName: w.iface,
          mac: w.mac,
          ipNetworks: [`${w.ip}/32`],
          ipNATs: [{ internalIP: w.ip, externalIP: FIP }],
          profiles: ['kns.e2e'],
        },
      },
    ];
    writeResources(dir, resources);
    agent = new LabAgent(lab, dir);
    await agent.applied();
  });
  after(() => {
    agent?.proc.kill('SIGTERM');
    who?.kill('SIGKILL');
    lab?.destroy();
  });

  it("routes the floating IP to the workload's interface, as Felix (docs/compatibility.md D25)", () => {
    const routes = lab.sh(lab.host, 'ip', ['route', 'show', `${FIP}/32`]);
    assert.match(routes, new RegExp(`^${FIP.replaceAll('.', '\\.')} dev ${w.iface} `, 'm'));
  });

  it('reaches the workload on its floating IP from outside the node', async () => {
    assert.ok((await lab.until(() => lab.tcp('outside', FIP, 8080, 500), 5000)) >= 0, 'floating IP not reachable');
  });

  it('source-NATs pool traffic leaving the node to NATOutgoingAddress', async () => {
    lab.tcp(w, '192.168.200.1', 7070); // the server closes at once: only who it saw matters
    // (The server listens on both families: it prints IPv4 peers as ::ffff:a.b.c.d.)
    assert.ok(
      (await lab.until(() => new RegExp(`from (::ffff:)?${SNAT_TO.replaceAll('.', '\\.')}$`, 'm').test(seen), 3000)) >=
        0,
      `the outside saw: ${seen}`,
    );
  });
});
