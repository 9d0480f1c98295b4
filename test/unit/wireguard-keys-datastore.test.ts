// This node's WireGuard public keys published where Felix publishes them, on the real
// datastores: etcd (the Node resource's status, compare-and-swap on its revision) and a
// real kube-apiserver (the Node's annotations, as deploy/'s ServiceAccount with deploy/'s
// RBAC). Only that field changes; a Node changed between read and write is a conflict,
// read again; no Node and no key is nothing to do; a cleared key removes the field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Etcd3Client } from '../../src/datastore/etcdv3/client.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { EtcdWireguardKeys, KubeWireguardKeys } from '../../src/datastore/wireguard-keys.js';
import { silentLogger } from '../../src/log.js';
import { WireguardKeyPublisher } from '../../src/status/wireguard-key.js';
import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { installPalisade, KubeApiServer, testServerBinary } from '../helpers/kube-cluster.js';
import { existsSync } from 'node:fs';

const K1 = Buffer.alloc(32, 1).toString('base64');
const K2 = Buffer.alloc(32, 2).toString('base64');
const NODE_KEY = '/calico/resources/v3/projectcalico.org/nodes/node1';
const node = {
  kind: 'Node',
  apiVersion: 'projectcalico.org/v3',
  metadata: { name: 'node1', labels: { zone: 'a' } },
  spec: { bgp: { ipv4Address: '192.0.2.1/24' }, wireguard: { interfaceIPv4Address: '10.65.0.1' } },
  status: { podCIDRs: ['10.65.0.0/24'] },
};

describe('WireGuard keys in etcd (the Node resource)', { skip: !etcdAvailable() }, () => {
  let etcd: TestEtcd;
  let client: Etcd3Client;
  before(async () => {
    etcd = new TestEtcd();
    await etcd.start();
    client = new Etcd3Client({ endpoints: [etcd.endpoint], timeoutMs: 5000 });
  });
  after(async () => {
    client?.close();
    await etcd?.destroy();
  });

  it('writes status.wireguardPublicKey(V6) only, compare-and-swap; a concurrent change is a conflict read again', async () => {
    const store = new EtcdWireguardKeys(client, 'node1');
    // No Node yet: an empty key is nothing to do; a key waits for the Node (retried).
    const pub = new WireguardKeyPublisher(store, silentLogger, () => 20);
    pub.onKey(6, '');
    await pub.settled();
    await client.put(NODE_KEY, JSON.stringify(node));
    pub.onKey(4, K1);
    pub.onKey(6, K2);
    await pub.settled();
    const written = JSON.parse((await client.getOne(NODE_KEY))?.value ?? '{}');
    assert.deepEqual(written, {
      ...node,
      status: { ...node.status, wireguardPublicKey: K1, wireguardPublicKeyV6: K2 },
    });
    // A write on a stale read loses; the publisher reads again and wins.
    const stale = await store.read(4);
    await client.put(NODE_KEY, JSON.stringify({ ...written, metadata: { ...node.metadata, labels: { zone: 'b' } } }));
    assert.equal(await store.write(4, K2, stale.token), false);
    pub.onKey(4, K2);
    await pub.settled();
    const after = JSON.parse((await client.getOne(NODE_KEY))?.value ?? '{}');
    assert.deepEqual([after.status.wireguardPublicKey, after.metadata.labels.zone], [K2, 'b'], 'the other change kept');
    pub.onKey(6, '');
    await pub.settled();
    assert.equal(JSON.parse((await client.getOne(NODE_KEY))?.value ?? '{}').status.wireguardPublicKeyV6, undefined);
    pub.stop();
  });
});

const haveApi = existsSync(testServerBinary('kube-apiserver'));
describe('WireGuard keys on a real kube-apiserver (the Node annotations, deploy/ RBAC)', {
  skip: haveApi ? false : 'kube-apiserver not built (scripts/setup.sh --with-test-tools)',
  timeout: 120_000,
}, () => {
  let api: KubeApiServer;
  let token: string;
  before(async () => {
    api = await KubeApiServer.start();
    token = await installPalisade(api);
    await api.put('nodes', {
      metadata: { name: 'node1', labels: { zone: 'a' }, annotations: { 'example.com/other': 'kept' } },
      spec: { podCIDR: '10.65.0.0/24' },
    });
  });
  after(async () => {
    await api?.stop();
  });

  it("patches only the key annotations as palisade's ServiceAccount; a stale resourceVersion is a conflict; clearing removes it", async () => {
    const kube = new HttpKubeTransport({ ...api.endpoint(token) });
    const store = new KubeWireguardKeys(kube, 'node1');
    const pub = new WireguardKeyPublisher(store, silentLogger, () => 20);
    pub.onKey(4, K1);
    pub.onKey(6, K2);
    await pub.settled();
    const n = (await api.get('nodes', undefined, 'node1')) as {
      metadata: { annotations: Record<string, string>; labels: Record<string, string> };
    };
    assert.deepEqual(n.metadata.annotations, {
      'example.com/other': 'kept',
      'projectcalico.org/WireguardPublicKey': K1,
      'projectcalico.org/WireguardPublicKeyV6': K2,
    });
    const stale = await store.read(4);
    await api.patch('nodes', undefined, 'node1', { metadata: { labels: { zone: 'b' } } });
    assert.equal(await store.write(4, K2, stale.token), false, 'the API server refused a stale resourceVersion (409)');
    pub.onKey(4, '');
    await pub.settled();
    const m = (await api.get('nodes', undefined, 'node1')) as typeof n;
    assert.deepEqual(m.metadata.annotations, {
      'example.com/other': 'kept',
      'projectcalico.org/WireguardPublicKeyV6': K2,
    });
    assert.equal(m.metadata.labels.zone, 'b');
    pub.stop();
  });
});
