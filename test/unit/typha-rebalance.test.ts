// ConnectionRebalancingMode=kubernetes (issue 52): the limit as Typha's CalculateMaxConnLimit
// computes it (vectors from upstream's rebalance_test.go at v3.31.7, written here), the
// Typhas counted from the service's EndpointSlices on a real kube-apiserver (read as deploy/'s
// palisade-typha ServiceAccount), and the server
// then dropping connections down to its share.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { ConnectionRebalancer, countTyphas, maxConnLimit } from '../../src/typha/server/rebalance.js';
import { installPalisade, KubeApiServer } from '../helpers/kube-cluster.js';
import { FakeSyncer } from '../helpers/fake-syncer.js';
import { until } from '../helpers/until.js';
import { TyphaConnection } from '../../src/typha/connection.js';
import { loadTyphaConfig } from '../../src/typha/server/config.js';
import { TyphaDaemon } from '../../src/typha/server/daemon.js';

const log = createLogger({ severity: 'Fatal' });
const limits = { lowerLimit: 400, upperLimit: 10_000 };
const cfg = {
  ...limits,
  pollMs: 1000,
  namespace: 'kube-system',
  serviceName: 'calico-typha',
  portName: 'calico-typha',
};

const slice = (name: string, ips: string[], portName = 'calico-typha') => ({
  metadata: { name, namespace: 'kube-system', labels: { 'kubernetes.io/service-name': 'calico-typha' } },
  addressType: 'IPv4',
  ports: [{ name: portName, port: 5473 }],
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
});

describe('Typha: connection rebalancing through Kubernetes', { timeout: 60_000 }, () => {
  let api: KubeApiServer;
  let kube: () => HttpKubeTransport;
  before(async () => {
    api = await KubeApiServer.start();
    const endpoint = api.endpoint(await installPalisade(api, 'palisade-typha'));
    kube = () => new HttpKubeTransport(endpoint);
  });
  after(async () => api.stop());

  it("computes the limit as Typha does: a lone Typha the upper limit, else each one's share + 20%, spare one", () => {
    assert.deepEqual(maxConnLimit(limits, 1, 1000, 4), { target: 10_000, reason: 'lone typha' });
    assert.deepEqual(maxConnLimit(limits, 0, 1000, 4), { target: 10_000, reason: 'lone typha' });
    assert.deepEqual(maxConnLimit(limits, 2, 10, 4), { target: 400, reason: 'configured lower limit' });
    // 4 x (1 + 1000 x 120 / 2 / 100) = 4 x 601
    assert.deepEqual(maxConnLimit(limits, 3, 1000, 4), { target: 2404, reason: 'fraction+20%' });
    // palisade serves the felix syncer only: one type
    assert.deepEqual(maxConnLimit(limits, 3, 1000, 1), { target: 601, reason: 'fraction+20%' });
    assert.deepEqual(maxConnLimit(limits, 2, 100_000, 1), { target: 10_000, reason: 'configured upper limit' });
    // Go's integer division: 7 nodes x 120 / 2 = 420, / 100 = 4
    assert.deepEqual(maxConnLimit({ lowerLimit: 1, upperLimit: 100 }, 3, 7, 1), { target: 5, reason: 'fraction+20%' });
  });

  it('counts the distinct addresses of the slices that carry the named port', async () => {
    await api.put('endpointslices', slice('a', ['10.0.0.1', '10.0.0.2']));
    await api.put('endpointslices', slice('b', ['10.0.0.2', '10.0.0.3']));
    await api.put('endpointslices', slice('c', ['10.0.0.9'], 'metrics'));
    const transport = kube();
    assert.equal(await countTyphas(transport, cfg), 3);
    for (const n of ['a', 'b', 'c']) await api.del('endpointslices', 'kube-system', n);
  });

  it('sets the server limit as the cluster changes; an API failure or a datastore not in sync keeps the upper limit', async () => {
    const set: number[] = [];
    let nodes: number | undefined;
    const r = new ConnectionRebalancer({
      config: cfg,
      transport: kube(),
      nodes: () => nodes,
      server: { setMaxConns: (n) => set.push(n) },
      log,
    });
    await api.put('endpointslices', slice('a', ['10.0.0.1', '10.0.0.2', '10.0.0.3']));
    assert.equal(await r.tick(), 10_000, 'not in sync: the upper limit');
    nodes = 1000;
    assert.equal(await r.tick(), 601);
    await api.put('endpointslices', slice('a', ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5']));
    assert.equal(await r.tick(), 400, 'five Typhas: 1 + 1000 x 1.2 / 4 = 301, below the lower limit');
    const broken = new ConnectionRebalancer({
      config: cfg,
      transport: new HttpKubeTransport({ server: 'http://127.0.0.1:1' }),
      nodes: () => 1000,
      server: { setMaxConns: (n) => set.push(n) },
      log,
    });
    assert.equal(await broken.tick(), 10_000);
    assert.deepEqual(set, [601, 400], 'only changes are set');
    await api.del('endpointslices', 'kube-system', 'a');
  });

  it('palisade typha with ConnectionRebalancingMode kubernetes sheds connections down to its share', async () => {
    await api.put('endpointslices', slice('a', ['10.0.0.1', '10.0.0.2', '10.0.0.3']));
    const cfgT = loadTyphaConfig({
      TYPHA_SERVERHOST: '127.0.0.1',
      TYPHA_SERVERPORT: '0',
      TYPHA_CONNECTIONREBALANCINGMODE: 'kubernetes',
      TYPHA_K8SSERVICEPOLLINTERVALSECS: '1',
      TYPHA_MAXCONNECTIONSLOWERLIMIT: '1',
      TYPHA_CONNECTIONDROPINTERVALSECS: '0.2',
    });
    const syncer = new FakeSyncer();
    const daemon = new TyphaDaemon(cfgT, syncer, log, '', kube());
    await daemon.start();
    const conns: TyphaConnection[] = [];
    try {
      // Two nodes and three Typhas: 1 x (1 + 2 x 120 / 2 / 100) = 2 connections each.
      for (const n of ['node1', 'node2'])
        syncer.update({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: n }, spec: {} });
      syncer.status('in-sync');
      let open = 0;
      for (let i = 0; i < 5; i++) {
        const c = new TyphaConnection({
          address: `127.0.0.1:${daemon.port}`,
          hostname: `client-${i}`,
          version: 'test',
          info: 'rebalance test',
          onUpdates: () => {},
          onStatus: () => {},
        });
        conns.push(c);
        open++;
        void c.run().then(
          () => open--,
          () => open--,
        );
      }
      await until(() => open === 2, 15_000, 'connections shed to the limit of 2');
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(open, 2, 'and no further');
    } finally {
      for (const c of conns) c.close();
      await daemon.stop();
      await api.del('endpointslices', 'kube-system', 'a');
    }
  });
});
