// An edit a real API server would refuse (its CRD's schema admits only Admin and Baseline
// tiers), served by the tests' fake API server on purpose: a fault a real server will not
// produce on demand. It stands for an object that reaches the agent in a shape palisade
// cannot convert (a CRD schema older than the release, a server without validation): the
// last good version stays in force; a first bad one is never applied (issue 52).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { KddSyncer } from '../../src/datastore/kdd/kdd-syncer.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { CLUSTER_NETWORK_POLICY_TYPE, FakeKubeApiServer } from '../helpers/kube-apiserver.js';
import { SyncerRecorder } from '../helpers/syncer-recorder.js';
import { until } from '../helpers/until.js';

describe('Kubernetes datastore: an object its server should have refused', { timeout: 30_000 }, () => {
  let api: FakeKubeApiServer;
  let url: string;
  before(async () => {
    api = new FakeKubeApiServer();
    url = await api.start();
    api.install(CLUSTER_NETWORK_POLICY_TYPE);
  });
  after(async () => {
    await api?.stop();
  });

  it('an edit that makes a policy unconvertible keeps its last good version in force (reported, counted); a first bad one is not applied (issue 52)', async () => {
    const good = {
      metadata: { name: 'admin-deny' },
      spec: {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      },
    };
    api.put('clusternetworkpolicies', good);
    const counted: string[] = [];
    const lines: string[] = [];
    const rec = new SyncerRecorder();
    const syncer = new KddSyncer({
      transport: new HttpKubeTransport({ server: url }),
      log: createLogger({ severity: 'Warning', destination: { write: (l: string) => void lines.push(l) } }),
      backoffMs: { min: 20, max: 200 },
    });
    syncer.onInvalid = (kind, outcome) => counted.push(`${kind} ${outcome}`);
    syncer.start(rec);
    const key = '/calico/resources/v3/projectcalico.org/kubernetesclusternetworkpolicies/admin-deny';
    try {
      await until(() => rec.state.has(key), 10_000, 'the policy');
      const before = JSON.stringify(rec.state.get(key));
      api.put('clusternetworkpolicies', { ...good, spec: { ...good.spec, tier: 'Nope' } });
      await until(() => counted.length === 1, 10_000, 'the bad edit counted');
      assert.deepEqual(counted, ['KubernetesClusterNetworkPolicy kept']);
      assert.equal(JSON.stringify(rec.state.get(key)), before, 'the last good version stays');
      assert.ok(lines.some((l) => /its last good version \(KubernetesClusterNetworkPolicy\) stays in force/.test(l)));
      api.put('clusternetworkpolicies', { metadata: { name: 'bad-from-start' }, spec: { tier: 'Nope' } });
      await until(() => counted.length === 2, 10_000, 'the first bad one counted');
      assert.equal(counted[1], 'ClusterNetworkPolicy dropped');
      api.delete('clusternetworkpolicies', undefined, 'admin-deny');
      await until(() => !rec.state.has(key), 10_000, 'the deletion');
    } finally {
      await syncer.stop();
    }
  });
});
