// The Kubernetes reflector against a real kube-apiserver: a paged list, then the watch;
// resuming after the server drops the watch without losing what changed meanwhile; a 410
// once etcd's history is compacted, answered by a relist that finds what was deleted; 2,500
// pods in pages of 250; a type the server does not have (a CRD not installed) is listed as
// empty, found once its CRD is created, and its objects deleted when the CRD is. The
// server's watch cache is off here (`--watch-cache=false`: watches are served from etcd, as
// a cluster configured so does), so that compacting etcd produces the 410 on demand; with
// the cache on, the same 410 comes once the cache's window has moved past the version.
// Kubeconfig and in-cluster credentials (a ServiceAccount token the server signed, its
// CA) against the same server. Bad answers (garbage, a 500, a watch line that is not JSON)
// come from a stand-in server: faults a real one will not produce on demand.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { loadKubeEndpoint } from '../../src/datastore/kdd/kubeconfig.js';
import { type KubeObject, Reflector } from '../../src/datastore/kdd/reflector.js';
import { HttpKubeTransport, type KubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { BlackholeProxy } from '../helpers/blackhole-proxy.js';
import { makeTls } from '../helpers/etcd.js';
import { KubeApiServer } from '../helpers/kube-cluster.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { tempDirs } from '../helpers/temp.js';
import { until } from '../helpers/until.js';

const tempDir = tempDirs('kdd-reflector');
const log = createLogger({ severity: process.env.REFLECTOR_DEBUG ? 'Debug' : 'Fatal' });
const pod = (name: string, ns = 'default', labels: Record<string, string> = {}) => ({
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: 'node1', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
});

/** A transport that records the paths it was asked for. */
function recording(t: KubeTransport): { t: KubeTransport; gets: string[] } {
  const gets: string[] = [];
  return {
    gets,
    t: {
      get: (path) => {
        gets.push(path);
        return t.get(path);
      },
      watch: (...a) => t.watch(...a),
    },
  };
}

function mirror(transport: KubeTransport, path: string, pageSize = 10) {
  const held = new Map<string, KubeObject>();
  let listed = 0;
  const r = new Reflector(
    { transport, path, log, pageSize, backoffMs: { min: 20, max: 200 }, missingApiRetryMs: 300 },
    {
      onUpsert: (o) => held.set(`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o),
      onDelete: (o) => held.delete(`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`),
      onListed: () => listed++,
    },
  );
  return { r, held, listed: () => listed };
}

describe('Kubernetes reflector on a real API server', { timeout: 180_000 }, () => {
  let api: KubeApiServer;
  let proxy: BlackholeProxy;
  let viaProxy: string;

  before(async () => {
    api = await KubeApiServer.start(undefined, ['--watch-cache=false']);
    const port = Number(new URL(api.url).port);
    proxy = new BlackholeProxy({ host: '127.0.0.1', port });
    viaProxy = `https://127.0.0.1:${await proxy.listen()}`;
    for (const ns of ['paged', 'compacted', 'many']) await api.put('namespaces', { metadata: { name: ns } });
  });
  after(async () => {
    proxy?.close();
    await api?.stop();
  });

  const transport = (server = api.url) => new HttpKubeTransport({ ...api.endpoint(), server });

  it('lists page by page, then follows the watch; a dropped watch resumes without losing changes', async () => {
    for (let i = 0; i < 25; i++) await api.put('pods', pod(`p${i}`, 'paged'));
    const { t, gets } = recording(transport(viaProxy));
    const { r, held, listed } = mirror(t, '/api/v1/namespaces/paged/pods');
    r.start();
    try {
      await until(() => listed() === 1, 5000, 'the list');
      assert.equal(held.size, 25);
      assert.equal(gets.filter((q) => q.includes('limit=10')).length, 3, 'three pages of ten');
      await api.put('pods', pod('live', 'paged'));
      await api.del('pods', 'paged', 'p0');
      await until(() => held.has('paged/live') && !held.has('paged/p0'));
      const watches = r.watches;
      proxy.cut();
      await api.put('pods', pod('while-away', 'paged'));
      await api.put('pods', pod('p1', 'paged', { changed: 'yes' }));
      await until(
        () =>
          held.has('paged/while-away') &&
          (held.get('paged/p1')?.metadata as { labels?: Record<string, string> } | undefined)?.labels?.changed ===
            'yes',
        10_000,
        'the changes made while the watch was down',
      );
      assert.ok(r.watches > watches, 'the watch was resumed');
      assert.equal(r.lists, 1, 'from its version, without a relist');
    } finally {
      r.stop();
    }
  });

  it('a 410 (the version compacted away) means a relist, which finds what was deleted meanwhile', async () => {
    await api.put('pods', pod('stays', 'compacted'));
    await api.put('pods', pod('gone-soon', 'compacted'));
    const { r, held, listed } = mirror(transport(viaProxy), '/api/v1/namespaces/compacted/pods');
    r.start();
    try {
      await until(() => listed() === 1);
      assert.deepEqual([...held.keys()].sort(), ['compacted/gone-soon', 'compacted/stays']);
      // While the watch is down and the history gone: one deleted, one added.
      proxy.mode = 'vanish';
      proxy.cut();
      await api.del('pods', 'compacted', 'gone-soon');
      await api.put('pods', pod('new-after-compaction', 'compacted'));
      api.etcdctl(['compact', api.etcdRevision()]);
      proxy.mode = 'forward';
      proxy.cut();
      await until(() => listed() === 2, 15_000, 'the relist');
      assert.deepEqual([...held.keys()].sort(), ['compacted/new-after-compaction', 'compacted/stays']);
      assert.equal(r.lists, 2);
    } finally {
      r.stop();
    }
  });

  it('lists 2,500 pods in pages of 250', async () => {
    const names = Array.from({ length: 2500 }, (_, i) => `pod-${i}`);
    for (let i = 0; i < names.length; i += 50)
      await Promise.all(names.slice(i, i + 50).map((n) => api.put('pods', pod(n, 'many', { app: `a${i % 10}` }))));
    const { t, gets } = recording(transport());
    const { r, held, listed } = mirror(t, '/api/v1/namespaces/many/pods', 250);
    const t0 = Date.now();
    r.start();
    try {
      await until(() => listed() === 1, 60_000, 'the 2,500-pod list');
      assert.equal(held.size, 2500);
      assert.equal(gets.length, 10, 'ten pages');
      console.log(`# 2,500 pods listed from kube-apiserver in ${Date.now() - t0} ms (10 pages)`);
    } finally {
      r.stop();
    }
  });

  it('a 404 is an empty list (in sync, not an error loop); once its CRD is created it is found; when the CRD is deleted, its objects are deleted', async () => {
    const { t, gets } = recording(transport());
    const { r, held, listed } = mirror(t, '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies');
    r.start();
    try {
      await until(() => listed() === 1, 5000, 'the 404 to count as a list');
      assert.ok(r.missing);
      const before = gets.length;
      await new Promise((res) => setTimeout(res, 150));
      assert.equal(gets.length, before, 'no retry before the pause is over');
      const crd = sharedCalico(
        'v3.32.1',
        'crds',
        'libcalico-go',
        'policy.networking.k8s.io_clusternetworkpolicies.yaml',
      );
      await api.installCrds(crd);
      const cnp = (name: string) => ({
        metadata: { name },
        spec: { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [] },
      });
      await api.put('clusternetworkpolicies', cnp('deny-all'));
      await until(() => held.has('/deny-all'), 10_000, 'the policy once the type is installed');
      assert.equal(r.missing, false);
      await api.put('clusternetworkpolicies', cnp('second'));
      await until(() => held.has('/second'), 5000, 'the watch');
      api.kubectl(['delete', 'crd', 'clusternetworkpolicies.policy.networking.k8s.io', '--wait=true']);
      await until(() => held.size === 0 && r.missing, 20_000, 'the objects of a removed type to be deleted');
    } finally {
      r.stop();
    }
  });

  it("a kubeconfig's server and credentials reach the API; a wrong token is refused; a missing file is a clear error", async () => {
    const dir = tempDir();
    const file = api.kubeconfig(dir);
    const e = await loadKubeEndpoint({ env: { KUBECONFIG: file } });
    assert.equal(e.server, api.url);
    assert.equal(e.source, `kubeconfig ${file}`);
    await new HttpKubeTransport(e).get('/api/v1/pods?limit=1');
    const wrong = await loadKubeEndpoint({ env: { KUBECONFIG: api.kubeconfig(dir, 'not-a-token', 'wrong') } });
    await assert.rejects(new HttpKubeTransport(wrong).get('/api/v1/pods?limit=1'), /401/);
    await assert.rejects(
      loadKubeEndpoint({ env: { KUBECONFIG: join(dir, 'missing') } }),
      /cannot load the Kubernetes configuration/,
    );
  });

  it("in a pod: KUBERNETES_SERVICE_HOST/PORT, the service account's CA checks the server and its token authenticates", async () => {
    await api.put('serviceaccounts', { metadata: { name: 'reader', namespace: 'default' } });
    const dir = mkdtempSync(join(tmpdir(), 'palisade-incluster-'));
    const root = join(dir, 'root');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), await api.serviceAccountToken('default', 'reader'));
    writeFileSync(join(sa, 'ca.crt'), readFileSync(api.caFile));
    writeFileSync(join(sa, 'namespace'), 'default');
    const port = new URL(api.url).port;
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    // client-node reads these from the process environment itself.
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = port;
    const load = () =>
      loadKubeEndpoint({
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        serviceAccountRoot: root,
      });
    try {
      const e = await load();
      assert.equal(e.source, 'in-cluster service account');
      assert.equal(e.server, api.url);
      // Authenticated as the account: RBAC's answer (no role grants it pods) proves who it is.
      await assert.rejects(
        new HttpKubeTransport(e).get('/api/v1/pods?limit=1'),
        /403.*system:serviceaccount:default:reader/s,
      );
      assert.ok(await new HttpKubeTransport(e).get('/version'));
      // A server the service account's CA did not sign is refused.
      const other = join(dir, 'other');
      mkdirSync(other);
      writeFileSync(join(sa, 'ca.crt'), readFileSync(makeTls(other).server.caFile));
      await assert.rejects(
        new HttpKubeTransport(await load()).get('/version'),
        /self[- ]signed|unable to verify|certificate/i,
      );
    } finally {
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe('Kubernetes reflector: bad answers from the API', () => {
  it('garbage, an error status and a watch line that is not JSON are retried; the reflector carries on', async () => {
    const { createServer } = await import('node:http');
    let lists = 0;
    let watches = 0;
    const server = createServer((req, res) => {
      if (!req.url?.includes('watch=true')) {
        lists++;
        if (lists === 1) return void res.writeHead(200).end('{not json');
        if (lists === 2)
          return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"boom"}');
        return void res.writeHead(200).end(
          JSON.stringify({
            metadata: { resourceVersion: '5' },
            items: [{ metadata: { name: 'a', namespace: 'default', resourceVersion: '5' } }],
          }),
        );
      }
      watches++;
      res.writeHead(200);
      if (watches === 1) return void res.end('this is not JSON\n');
      res.write(
        `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', namespace: 'default', resourceVersion: '6' } } })}\n`,
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const held = new Set<string>();
    const r = new Reflector(
      { transport: new HttpKubeTransport({ server: url }), path: '/api/v1/pods', log, backoffMs: { min: 10, max: 50 } },
      { onUpsert: (o) => held.add(o.metadata?.name ?? ''), onDelete: () => {}, onListed: () => {} },
    );
    r.start();
    try {
      await until(() => held.has('a') && held.has('b'), 5000, 'the reflector to get past the bad answers');
      assert.equal(lists, 3, 'garbage and a 500 were retried');
      assert.ok(watches >= 2, 'a bad watch line was retried');
    } finally {
      r.stop();
      server.closeAllConnections();
      server.close();
    }
  });
});
