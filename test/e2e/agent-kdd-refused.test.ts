// A Kubernetes NetworkPolicy a real API server refuses at admission (a label value that is
// not one, a protocol that does not exist), served by the tests' fake API server on purpose:
// a fault a real server will not produce on demand. It stands for an object that reaches the
// agent in a shape Kubernetes would not accept (an older server's validation, a proxy, a
// hand-written etcd entry): only the bad rules are dropped and the policy keeps isolating
// (issue 51 D9), with real packets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { ApiProcess, kddAgent, putShop, shopWorkloads } from '../helpers/kube-api-process.js';
import { Lab, type Workload } from '../helpers/lab.js';
import type { LabAgent } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kdd-refused');

describe("e2e: a NetworkPolicy Kubernetes would refuse, on the tests' API server", {
  skip: ROOT_SKIP,
  timeout: 120_000,
}, () => {
  let lab: Lab;
  let api: ApiProcess;
  let agent: LabAgent;
  let apiW: Workload, db: Workload, other: Workload;

  before(async () => {
    lab = new Lab();
    ({ apiW, db, other } = shopWorkloads(lab, '10.71.0'));
    await lab.listen(db, [5432, 6543]);
    api = new ApiProcess(lab.host);
    const url = await api.url();
    await putShop(api, [apiW, db, other]);
    agent = await kddAgent(lab, url, tempDir);
  });
  after(async () => {
    await agent?.stop();
    api?.proc.kill();
    lab?.destroy();
  });

  it('a NetworkPolicy Kubernetes would not accept drops only its bad rules and keeps isolating (issue 51 D9)', async () => {
    const bad = (podSelector: Record<string, unknown>) => ({
      metadata: { name: 'db-bad', namespace: 'shop' },
      spec: {
        podSelector,
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: "nobody' || app == 'other" } } }] },
          { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ protocol: 'TCP', port: 5432 }] },
          { ports: [{ protocol: 'FOO', port: 6543 }] },
        ],
      },
    });
    await api.put('networkpolicies', bad({ matchLabels: { app: 'db' } }));
    assert.ok(
      (await lab.until(() => !lab.tcp(other, db.ip, 5432, 200), 10_000)) >= 0,
      `the policy never isolated the database:\n${agent.log.slice(-2000)}`,
    );
    assert.equal(lab.tcp(apiW, db.ip, 5432, 300), true, 'the good rule was lost');
    assert.equal(lab.tcp(other, db.ip, 5432, 200), false, 'the injected peer widened the rule');
    assert.equal(lab.tcp(apiW, db.ip, 6543, 200), false, 'the rule with a bad protocol opened a port');
    assert.match(agent.log, /ingress rule 0: label value .* is not a Kubernetes label value; dropped/);
    // A pod selector that cannot be read: every pod of the namespace is isolated by it.
    await lab.listen(other, [5432]);
    assert.equal(lab.tcp(db, other.ip, 5432, 300), true, 'other is not isolated yet');
    await api.put('networkpolicies', bad({ matchLabels: { app: "db' || app == 'x" } }));
    assert.ok(
      (await lab.until(() => !lab.tcp(db, other.ip, 5432, 200) && lab.tcp(apiW, db.ip, 5432, 300), 10_000)) >= 0,
      'the policy did not fall back to isolating the whole namespace',
    );
    assert.equal(lab.tcp(apiW, other.ip, 5432, 300), true, "the policy's rules still allow what they allow");
    assert.equal(lab.tcp(other, db.ip, 5432, 200), false);
    await api.del('networkpolicies', 'shop', 'db-bad');
    assert.ok((await lab.until(() => lab.tcp(other, db.ip, 5432, 300), 10_000)) >= 0, 'the deletion never landed');
  });
});
