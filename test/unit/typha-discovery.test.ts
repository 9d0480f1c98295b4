// Typha found through Kubernetes (TyphaK8sServiceName), as Felix's discovery: the
// EndpointSlices of the service, the "calico-typha" port, ready endpoints only, this node's
// Typhas first; one address per attempt, each tried once before any again; and the agent's
// Typha datastore connecting to a palisade typha it found that way, past a dead address.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { ConnectionAttemptTracker, TyphaDiscoverer, TyphaDiscoveryError } from '../../src/datastore/typha/discovery.js';
import { TyphaSyncer } from '../../src/datastore/typha/typha-syncer.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import type { V1Update } from '../../src/model/v1/values.js';
import { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import { installPalisade, KubeApiServer } from '../helpers/kube-cluster.js';
import { loopbackTyphaServer } from '../helpers/typha-server.js';
import { until } from '../helpers/until.js';

const log = createLogger({ severity: 'Fatal' });
const noTls = { caFile: '', certFile: '', keyFile: '', cn: '', uriSan: '' };

type Ep = { addresses: string[]; nodeName?: string; conditions?: { ready?: boolean } };
const slice = (
  name: string,
  endpoints: Ep[],
  port = 5473,
  portName = 'calico-typha',
  service = 'calico-typha',
  ns = 'kube-system',
) => ({
  metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': service } },
  addressType: endpoints.some((e) => e.addresses.some((a) => a.includes(':'))) ? 'IPv6' : 'IPv4',
  endpoints,
  ports: [
    { name: 'metrics', port: 9093 },
    { name: portName, port },
  ],
});

describe('Typha discovery through Kubernetes', { timeout: 60_000 }, () => {
  let api: KubeApiServer;
  let transport: HttpKubeTransport;

  before(async () => {
    api = await KubeApiServer.start();
    transport = new HttpKubeTransport(api.endpoint(await installPalisade(api)));
  });
  after(async () => {
    await api?.stop();
  });

  const discoverer = (nodeName = 'node1', serviceName = 'calico-typha') =>
    new TyphaDiscoverer({ transport, namespace: 'kube-system', serviceName, nodeName, log });

  it('ready endpoints on the "calico-typha" port, this node\'s first; other services, namespaces and ports left out', async () => {
    await api.put(
      'endpointslices',
      slice('calico-typha-a', [
        { addresses: ['10.0.0.1'], nodeName: 'node2' },
        { addresses: ['10.0.0.2'], nodeName: 'node1' },
        { addresses: ['10.0.0.3'], nodeName: 'node3', conditions: { ready: false } },
      ]),
    );
    await api.put(
      'endpointslices',
      slice('calico-typha-b', [{ addresses: ['fd00::4'], nodeName: 'node4', conditions: { ready: true } }]),
    );
    await api.put(
      'endpointslices',
      slice('other-svc', [{ addresses: ['10.9.9.9'], nodeName: 'node1' }], 5473, 'calico-typha', 'other'),
    );
    await api.put(
      'endpointslices',
      slice(
        'calico-typha-x',
        [{ addresses: ['10.9.9.8'], nodeName: 'node1' }],
        5473,
        'calico-typha',
        'calico-typha',
        'default',
      ),
    );
    await api.put(
      'endpointslices',
      slice('calico-typha-c', [{ addresses: ['10.9.9.7'], nodeName: 'node1' }], 5999, 'not-typha'),
    );
    for (let i = 0; i < 5; i++) {
      const found = await discoverer().load();
      assert.equal(found[0]?.addr, '10.0.0.2:5473', "this node's Typha first");
      assert.deepEqual(
        found
          .slice(1)
          .map((t) => t.addr)
          .sort(),
        ['10.0.0.1:5473', '[fd00::4]:5473'],
      );
    }
    const orders = new Set<string>();
    for (let i = 0; i < 40; i++) orders.add((await discoverer('elsewhere').load()).map((t) => t.addr).join());
    assert.ok(orders.size > 1, 'the others are shuffled');
  });

  it('no ready Typha, or an API that fails, is a clear error', async () => {
    await assert.rejects(
      discoverer('node1', 'nothing').load(),
      (e: Error) =>
        e instanceof TyphaDiscoveryError && /no ready Typha in service kube-system\/nothing/.test(e.message),
    );
    const broken = new TyphaDiscoverer({
      transport: new HttpKubeTransport({ server: 'http://127.0.0.1:1' }),
      namespace: 'kube-system',
      serviceName: 'calico-typha',
      nodeName: 'n',
      log,
    });
    await assert.rejects(
      broken.load(),
      (e: Error) => e instanceof TyphaDiscoveryError && /cannot list the EndpointSlices/.test(e.message),
    );
  });

  it('the attempt tracker: the start-up list first, then a fresh look-up per attempt; each address once before any again', async () => {
    let loads = 0;
    const list = [{ addr: 'a:1' }, { addr: 'b:1' }, { addr: 'c:1' }];
    const tracker = new ConnectionAttemptTracker(async () => {
      loads++;
      return list;
    }, [{ addr: 'a:1' }, { addr: 'b:1' }]);
    const picks: string[] = [];
    for (let i = 0; i < 7; i++) picks.push(await tracker.next());
    assert.deepEqual(picks, ['a:1', 'b:1', 'c:1', 'a:1', 'b:1', 'c:1', 'a:1']);
    assert.equal(loads, 6, 'the cached list served the first attempt only');
  });

  it('the Typha datastore connects to a Typha it found, moving past one that is listed but dead', async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 100 });
    cache.onUpdates([
      {
        key: '/calico/v1/config/LogSeverityScreen',
        value: Buffer.from('Info'),
        revision: '1',
        v3ResourceVersion: '',
        ttlNanos: 0,
        updateType: 1,
      },
    ]);
    cache.onStatus('in-sync');
    const server = loopbackTyphaServer(cache, log);
    const port = await server.listen();
    // A real API server refuses loopback endpoint addresses, so the slices name TEST-NET
    // addresses, which the dial below maps to this test's loopback (its stand-in for the
    // node network). This node's Typha is listed first but nothing listens there (port 1).
    const local = (addr: string) => addr.replace(/^192\.0\.2\.\d+:/, '127.0.0.1:');
    const tried: string[] = [];
    let syncer: TyphaSyncer | undefined;
    try {
      await api.put(
        'endpointslices',
        slice('live-typha', [{ addresses: ['192.0.2.10'], nodeName: 'node9' }], port, 'calico-typha', 'live-typha'),
      );
      await api.put(
        'endpointslices',
        slice('dead-typha', [{ addresses: ['192.0.2.11'], nodeName: 'node1' }], 1, 'calico-typha', 'live-typha'),
      );
      const d = new TyphaDiscoverer({
        transport,
        namespace: 'kube-system',
        serviceName: 'live-typha',
        nodeName: 'node1',
        log,
      });
      const tracker = new ConnectionAttemptTracker(() => d.load());
      syncer = new TyphaSyncer({
        address: 'service kube-system/live-typha',
        nextAddress: async () => {
          const a = await tracker.next();
          tried.push(a);
          return local(a);
        },
        hostname: 'node1',
        readTimeoutMs: 5000,
        writeTimeoutMs: 5000,
        tls: noTls,
        log,
        backoffMs: { min: 10, max: 50 },
      });
      const updates: V1Update[] = [];
      const statuses: string[] = [];
      syncer.start({ onModelUpdates: (u) => updates.push(...u), onStatusUpdated: (s) => statuses.push(s) });
      await until(() => statuses.includes('in-sync'), 10_000, 'in-sync through the discovered Typha');
      assert.deepEqual(tried, ['192.0.2.11:1', `192.0.2.10:${port}`]);
      assert.ok(
        updates.some((u) => u.key.type === 'GlobalConfig' && u.key.name === 'LogSeverityScreen'),
        JSON.stringify(updates.map((u) => u.key)),
      );
    } finally {
      await syncer?.stop();
      server.close();
    }
  });
});
