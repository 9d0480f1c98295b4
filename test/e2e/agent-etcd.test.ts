// The same agent against a real etcd (run inside the lab's host namespace, on its own
// loopback), written to with etcdctl as an operator would: enforcement follows the
// datastore, and an etcd restart with changes made meanwhile converges.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { cleanEnv, labWorkloadEndpoint } from '../helpers/lab-agent.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const PREFIX = '/calico/resources/v3/projectcalico.org';
const skip = ROOT_SKIP || (etcdAvailable() ? false : 'etcd-server/etcd-client not installed (npm test installs them)');

const wep = (w: Workload, labels: Record<string, string>) => labWorkloadEndpoint(w, labels);
const policy = (port: number) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'db', namespace: 'e2e' },
  spec: {
    selector: "app == 'db'",
    ingress: [
      { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [port] } },
    ],
  },
});

describe('e2e: palisade agent on etcd v3', { skip }, () => {
  let lab: Lab;
  let etcd: TestEtcd;
  let agent: ChildProcess;
  let log = '';
  let api: Workload, db: Workload;

  before(async () => {
    lab = new Lab();
    etcd = new TestEtcd(undefined, lab.host);
    await etcd.start();
    api = lab.addWorkload('api', '10.66.0.10', 1);
    db = lab.addWorkload('db', '10.66.0.11', 2);
    await lab.listen(db, [5432, 6543]);
    etcd.put(
      `${PREFIX}/profiles/kns.e2e`,
      JSON.stringify({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'kns.e2e' },
        spec: { egress: [{ action: 'Allow' }] },
      }),
    );
    etcd.put(`${PREFIX}/workloadendpoints/e2e/node1-k8s-api-eth0`, JSON.stringify(wep(api, { app: 'api' })));
    etcd.put(`${PREFIX}/workloadendpoints/e2e/node1-k8s-db-eth0`, JSON.stringify(wep(db, { app: 'db' })));
    agent = lab.spawnInHost([process.execPath, BIN, 'agent', '--hostname', 'node1'], {
      ...cleanEnv,
      FELIX_DATASTORETYPE: 'etcdv3',
      FELIX_ETCDENDPOINTS: etcd.endpoint,
      FELIX_LOGSEVERITYSCREEN: 'Debug',
      FELIX_HEALTHENABLED: 'true',
      FELIX_HEALTHHOST: '127.0.0.1',
      PALISADE_DATASTORE_GRACE_MS: '1000',
    });
    agent.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    assert.ok(
      (await lab.until(() => /"status":"up"/.test(log), 15000)) >= 0,
      `agent never programmed: ${log.slice(-3000)}`,
    );
  });
  after(async () => {
    agent?.kill('SIGTERM');
    await etcd?.destroy();
    lab?.destroy();
  });

  it('follows the datastore: deny by default, a policy written with etcdctl allows, an edit moves the port', async () => {
    assert.equal(lab.tcp(api, db.ip, 5432), false);
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(5432)));
    assert.ok((await lab.until(() => lab.tcp(api, db.ip, 5432, 300))) >= 0, 'policy from etcd never enforced');
    const t0 = Date.now();
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(6543)));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 6543, 300) && !lab.tcp(api, db.ip, 5432, 100), 3000, 10)) >= 0,
    );
    console.log(`# etcd policy edit enforced in ${Date.now() - t0} ms`);
  });

  it('keeps traffic through an etcd outage, reports not ready during it, and follows changes once etcd is back', async () => {
    assert.equal(lab.http('http://127.0.0.1:9099/readiness').status, 204);
    await etcd.stop();
    // Traffic keeps flowing on what is programmed.
    assert.equal(lab.tcp(api, db.ip, 6543), true);
    // Past the grace period, readiness says the datastore is gone, and why.
    assert.ok(
      (await lab.until(() => lab.http('http://127.0.0.1:9099/readiness').status === 503, 20000, 200)) >= 0,
      'readiness never turned 503',
    );
    const detail = JSON.parse(lab.http('http://127.0.0.1:9099/readiness?detail=true').body) as {
      reporters: Array<{ name: string; reason?: string }>;
    };
    assert.match(detail.reporters.find((r) => r.name === 'calc_graph')?.reason ?? '', /datastore has not been in sync/);
    await etcd.start();
    assert.ok(
      (await lab.until(() => lab.http('http://127.0.0.1:9099/readiness').status === 204, 20000, 200)) >= 0,
      'readiness never came back',
    );
    etcd.del(`${PREFIX}/networkpolicies/e2e/db`);
    assert.ok(
      (await lab.until(() => !lab.tcp(api, db.ip, 6543, 300), 15000)) >= 0,
      'the delete made after the restart was never enforced',
    );
  });
});
