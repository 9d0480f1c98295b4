// The agent on the Kubernetes datastore, with real packets: a real kube-apiserver (and its
// etcd) runs in the lab's host namespace with Calico 3.31.7's CRDs and 3.32.1's
// ClusterNetworkPolicy; the agent reads it with deploy/daemonset.yaml's ServiceAccount;
// pods, a namespace and a Kubernetes NetworkPolicy written to it are enforced - the
// namespace profile allows by default, the policy narrows the database to one client and
// one port, an edit moves the port, a deletion opens it again.
// ClusterNetworkPolicies: an Admin deny overrides everything below it, a Baseline deny
// applies only where no Kubernetes NetworkPolicy decided, and Pass hands over to the next tier.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { dbFromApiPolicy, putShop, putTiers, shopWorkloads } from '../helpers/kube-api-process.js';
import { KubeApiServer, labKddAgent } from '../helpers/kube-cluster.js';
import { nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import type { LabAgent } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kdd');

const cnp = (name: string, tier: 'Admin' | 'Baseline', priority: number, ingress: unknown[]) => ({
  metadata: { name },
  spec: {
    tier,
    priority,
    subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } },
    ingress,
  },
});
const fromApp = (app: string) => ({ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app } } } });
const policy = dbFromApiPolicy;

describe('e2e: palisade agent on the Kubernetes datastore', { skip: ROOT_SKIP, timeout: 120_000 }, () => {
  let lab: Lab;
  let api: KubeApiServer;
  let agent: LabAgent;
  let apiW: Workload, db: Workload, other: Workload;

  before(async () => {
    lab = new Lab();
    ({ apiW, db, other } = shopWorkloads(lab, '10.68.0'));
    await lab.listen(db, [5432, 6543]);
    api = await KubeApiServer.start(lab.host);
    // A cluster with the ClusterNetworkPolicy CRD, and the tiers calico-node creates at start.
    await api.installCrds(
      sharedCalico('v3.31.7', 'crds', 'libcalico-go'),
      sharedCalico('v3.32.1', 'crds', 'libcalico-go', 'policy.networking.k8s.io_clusternetworkpolicies.yaml'),
    );
    await putTiers(api, [
      ['default', 1_000_000, 'Deny'],
      ['kube-admin', 1000, 'Pass'],
      ['kube-baseline', 10_000_000, 'Pass'],
    ]);
    await putShop(api, [apiW, db, other]);
    agent = await labKddAgent(lab, api, tempDir());
  });
  after(async () => {
    await agent?.stop();
    await api?.stop();
    lab?.destroy();
  });

  it('the namespace profile allows by default', () => {
    assert.equal(lab.tcp(apiW, db.ip, 6543), true);
    assert.equal(lab.tcp(other, db.ip, 5432), true);
    assert.match(agent.log, /"msg":"Kubernetes datastore"/);
  });

  it('a Kubernetes NetworkPolicy narrows the database to one client and one port; an edit moves it; a deletion opens it again', async () => {
    await api.put('networkpolicies', policy(5432));
    assert.ok((await lab.until(() => !lab.tcp(other, db.ip, 5432, 200), 10_000)) >= 0, 'the policy was never enforced');
    assert.equal(lab.tcp(apiW, db.ip, 5432), true);
    assert.equal(lab.tcp(apiW, db.ip, 6543), false);
    await api.put('networkpolicies', policy(6543));
    assert.ok(
      (await lab.until(() => lab.tcp(apiW, db.ip, 6543, 300) && !lab.tcp(apiW, db.ip, 5432, 100), 10_000)) >= 0,
      'the edit was never enforced',
    );
    await api.del('networkpolicies', 'shop', 'db-from-api');
    assert.ok(
      (await lab.until(() => lab.tcp(other, db.ip, 5432, 300), 10_000)) >= 0,
      'the deletion never reached the kernel',
    );
  });
  it('ClusterNetworkPolicies: Admin denies over everything, Baseline only where no NetworkPolicy decided, Pass hands over', async () => {
    await api.put(
      'clusternetworkpolicies',
      cnp('no-other-to-db', 'Admin', 10, [{ name: 'other', action: 'Deny', from: [fromApp('other')] }]),
    );
    assert.ok(
      (await lab.until(() => !lab.tcp(other, db.ip, 5432, 200), 10_000)) >= 0,
      'the Admin deny was never enforced',
    );
    assert.equal(lab.tcp(apiW, db.ip, 5432), true, 'the Admin tier passes what it does not deny');
    await api.put(
      'clusternetworkpolicies',
      cnp('baseline-deny-db', 'Baseline', 10, [{ action: 'Deny', from: [{ namespaces: {} }] }]),
    );
    assert.ok(
      (await lab.until(() => !lab.tcp(apiW, db.ip, 5432, 200), 10_000)) >= 0,
      'the Baseline deny was never enforced',
    );
    // A NetworkPolicy selecting the database decides in the default tier: Baseline is not reached.
    await api.put('networkpolicies', policy(5432));
    assert.ok(
      (await lab.until(() => lab.tcp(apiW, db.ip, 5432, 300), 10_000)) >= 0,
      'the NetworkPolicy did not override Baseline',
    );
    assert.equal(lab.tcp(other, db.ip, 5432, 300), false, 'the Admin deny still holds');
    // An Admin Pass for the other client skips the rest of the Admin tier (its deny).
    await api.put(
      'clusternetworkpolicies',
      cnp('no-other-to-db', 'Admin', 10, [
        { name: 'pass', action: 'Pass', from: [fromApp('other')] },
        { action: 'Deny', from: [fromApp('other')] },
      ]),
    );
    await api.del('networkpolicies', 'shop', 'db-from-api');
    assert.ok(
      (await lab.until(() => !lab.tcp(apiW, db.ip, 5432, 200) && !lab.tcp(other, db.ip, 5432, 200), 10_000)) >= 0,
      'both fall through to the Baseline deny',
    );
    await api.del('clusternetworkpolicies', '', 'baseline-deny-db');
    assert.ok(
      (await lab.until(() => lab.tcp(other, db.ip, 5432, 300), 10_000)) >= 0,
      'the Pass never let the other client through to the profile',
    );
    await api.del('clusternetworkpolicies', '', 'no-other-to-db');
    assert.equal(lab.tcp(apiW, db.ip, 6543, 300), true);
  });

  it("kube-controllers' automatic host endpoint (interfaceName *, projectcalico-default-allow) leaves the host as open as under Felix; a policy selecting it narrows it (issue 52)", async () => {
    const host = '192.168.200.2';
    await lab.listen('host', [8081, 8082]);
    assert.equal(lab.tcp('outside', host, 8081), true);
    // Pod to host is DefaultEndpointToHostAction's (Drop by default), host endpoint or not.
    const podToHost = lab.tcp(apiW, host, 8081);
    const nft = () => nftTableState((c, a) => lab.sh(lab.host, c, a), 'ip', 'calico');
    // As calico-kube-controllers writes it (AutoCreate: Enabled).
    await api.put('hostendpoints.crd.projectcalico.org', {
      metadata: {
        name: 'node1-auto-hep',
        labels: { 'projectcalico.org/created-by': 'calico-kube-controllers', 'kubernetes.io/hostname': 'node1' },
      },
      spec: {
        node: 'node1',
        interfaceName: '*',
        expectedIPs: [host],
        profiles: ['projectcalico-default-allow'],
      },
    });
    assert.ok(
      (await lab.until(() => nft().includes('cali-pri-projectcalico-default-allow'), 10_000)) >= 0,
      'the host endpoint and its profile were never programmed',
    );
    assert.equal(lab.tcp('outside', host, 8081), true, 'the host cut off: the default-allow profile allows all');
    assert.equal(lab.tcp('outside', host, 8082), true);
    assert.equal(lab.tcp('host', db.ip, 5432), true, 'host to pod');
    assert.equal(lab.tcp(apiW, db.ip, 5432), true, 'pod to pod');
    assert.equal(lab.tcp(apiW, host, 8081), podToHost, 'pod to host, as before');
    await api.put('globalnetworkpolicies.crd.projectcalico.org', {
      metadata: { name: 'default.host-no-8082' },
      spec: {
        tier: 'default',
        selector: "projectcalico.org/created-by == 'calico-kube-controllers'",
        types: ['Ingress'],
        ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [8082] } }, { action: 'Allow' }],
      },
    });
    assert.ok(
      (await lab.until(() => !lab.tcp('outside', host, 8082, 200), 10_000)) >= 0,
      'the policy on the automatic host endpoint never landed',
    );
    assert.equal(lab.tcp('outside', host, 8081), true, 'the rest of the host stays open');
    await api.del('globalnetworkpolicies.crd.projectcalico.org', '', 'default.host-no-8082');
    await api.del('hostendpoints.crd.projectcalico.org', '', 'node1-auto-hep');
    assert.ok((await lab.until(() => lab.tcp('outside', host, 8082, 300), 10_000)) >= 0, 'the deletions never landed');
  });
});
