// `palisade typha` on the Kubernetes datastore: a real kube-apiserver (Calico 3.32.1's CRDs),
// read as deploy/'s palisade-typha ServiceAccount -> KDD syncer ->
// the feeder's update processors -> the snapshot cache -> a Typha client as the agent runs
// it. What reaches the client is Felix's feed: the pod as a workload endpoint key, the
// namespace's profile, the Kubernetes and cluster network policies under their own kinds,
// the service's EndpointSlice, each parsing back to what the agent would have made itself.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { KddSyncer } from '../../src/datastore/kdd/kdd-syncer.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { TyphaSyncer } from '../../src/datastore/typha/typha-syncer.js';
import { createLogger } from '../../src/log.js';
import { keyToPath } from '../../src/model/v1/keys.js';
import type { V1Update } from '../../src/model/v1/values.js';
import { CacheFeeder } from '../../src/typha/server/feeder.js';
import { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import { installPalisade, KubeApiServer } from '../helpers/kube-cluster.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { loopbackTyphaServer } from '../helpers/typha-server.js';
import { until } from '../helpers/until.js';

const log = createLogger({ severity: 'Fatal' });

describe('palisade typha on the Kubernetes datastore', { timeout: 60_000 }, () => {
  let api: KubeApiServer;
  let token: string;

  before(async () => {
    api = await KubeApiServer.start();
    await api.installCrds(sharedCalico('v3.32.1', 'crds', 'libcalico-go'));
    token = await installPalisade(api, 'palisade-typha');
    await api.put('namespaces', { metadata: { name: 'prod', labels: { team: 'a' } } });
    await api.put('serviceaccounts', { metadata: { name: 'default', namespace: 'prod' } });
    await api.put('nodes', {
      metadata: { name: 'node1', annotations: { 'projectcalico.org/IPv4Address': '192.0.2.1/24' } },
    });
    await api.put('pods', {
      metadata: { name: 'web-0', namespace: 'prod', labels: { app: 'web' } },
      spec: {
        nodeName: 'node1',
        serviceAccountName: 'default',
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
      },
      status: { phase: 'Running', podIP: '10.65.0.10', podIPs: [{ ip: '10.65.0.10' }] },
    });
    await api.put('networkpolicies', {
      metadata: { name: 'web', namespace: 'prod' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port: 80 }] }] },
    });
    await api.put('clusternetworkpolicies', {
      metadata: { name: 'no-metadata' },
      spec: {
        tier: 'Admin',
        priority: 3,
        subject: { namespaces: {} },
        egress: [{ action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }],
      },
    });
    await api.put('endpointslices', {
      metadata: { name: 'web-x', namespace: 'prod', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.65.0.10'] }],
      ports: [{ port: 80 }],
    });
  });
  after(async () => {
    await api?.stop();
  });

  it("serves Felix's feed from the Kubernetes API to a Typha client", async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 100 });
    const feeder = new CacheFeeder(
      new KddSyncer({
        transport: new HttpKubeTransport(api.endpoint(token)),
        log,
        backoffMs: { min: 20, max: 200 },
      }),
      cache,
      log,
    );
    const server = loopbackTyphaServer(cache, log);
    const port = await server.listen();
    feeder.start();
    const held = new Map<string, V1Update>();
    const statuses: string[] = [];
    const client = new TyphaSyncer({
      address: `127.0.0.1:${port}`,
      hostname: 'node1',
      readTimeoutMs: 5000,
      writeTimeoutMs: 5000,
      tls: { caFile: '', certFile: '', keyFile: '', cn: '', uriSan: '' },
      log,
    });
    client.start({
      onModelUpdates: (us) => {
        for (const u of us) {
          if (u.value === undefined) held.delete(keyToPath(u.key));
          else held.set(keyToPath(u.key), u);
        }
      },
      onStatusUpdated: (s) => statuses.push(s),
    });
    try {
      await until(() => statuses.includes('in-sync'), 10_000, 'the client in sync');
      const paths = [...held.keys()];
      for (const p of [
        '/calico/v1/host/node1/workload/k8s/prod%2fweb-0/endpoint/eth0',
        '/calico/v1/policy/profile/kns.prod/rules',
        '/calico/v1/policy/profile/ksa.prod.default/rules',
        '/calico/v1/policy/KubernetesNetworkPolicy/prod/web',
        '/calico/v1/policy/KubernetesClusterNetworkPolicy//no-metadata',
        '/calico/resources/v3/projectcalico.org/kubernetesendpointslices/prod/web-x',
        '/calico/resources/v3/projectcalico.org/nodes/node1',
      ]) {
        assert.ok(paths.includes(p), `${p} in ${JSON.stringify(paths.sort())}`);
      }
      const kcnp = held.get('/calico/v1/policy/KubernetesClusterNetworkPolicy//no-metadata')?.value as {
        key: { tier: string; name: string };
        order: number;
        outboundRules: Array<{ action: string; dstNets: string[] }>;
      };
      assert.equal(kcnp.key.tier, 'kube-admin');
      assert.equal(kcnp.key.name, 'kcnp/no-metadata');
      assert.equal(kcnp.order, 3);
      assert.deepEqual(
        kcnp.outboundRules.map((r) => [r.action, r.dstNets]),
        [['deny', ['169.254.169.254/32']]],
      );
      const wep = held.get('/calico/v1/host/node1/workload/k8s/prod%2fweb-0/endpoint/eth0')?.value as {
        ipv4Nets: string[];
        profileIds: string[];
        name: string;
      };
      assert.deepEqual(wep.ipv4Nets, ['10.65.0.10/32']);
      assert.deepEqual(wep.profileIds, ['kns.prod', 'ksa.prod.default']);
      // A change in the API reaches the client.
      await api.del('networkpolicies', 'prod', 'web');
      await until(() => !held.has('/calico/v1/policy/KubernetesNetworkPolicy/prod/web'), 5000, 'the deletion');
    } finally {
      await client.stop();
      await feeder.stop();
      server.close();
    }
  });
});
