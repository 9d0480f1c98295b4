// The Kubernetes reflector against the tests' API server: a paged list, then the watch;
// resuming after a dropped watch without losing what changed meanwhile; a 410 after
// compaction answered by a relist that finds what was deleted; a 50,000-pod list; a type
// the server does not have (a CRD not installed) is listed as empty, and found once installed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { type KubeObject, Reflector } from '../../src/datastore/kdd/reflector.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { CLUSTER_NETWORK_POLICY_TYPE, FakeKubeApiServer } from '../helpers/kube-apiserver.js';
import { tempDirs } from '../helpers/temp.js';
import { until } from '../helpers/until.js';

const tempDir = tempDirs('kdd-reflector');
const log = createLogger({ severity: process.env.REFLECTOR_DEBUG ? 'Debug' : 'Fatal' });
const pod = (name: string, ns = 'default', labels: Record<string, string> = {}) => ({
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: 'node1' },
});

function mirror(api: FakeKubeApiServer, url: string, pageSize = 10) {
  const held = new Map<string, KubeObject>();
  let listed = 0;
  const r = new Reflector(
    {
      transport: new HttpKubeTransport({ server: url }),
      path: '/api/v1/pods',
      log,
      pageSize,
      backoffMs: { min: 20, max: 200 },
    },
    {
      onUpsert: (o) => held.set(`${o.metadata?.namespace}/${o.metadata?.name}`, o),
      onDelete: (o) => held.delete(`${o.metadata?.namespace}/${o.metadata?.name}`),
      onListed: () => listed++,
    },
  );
  void api;
  return { r, held, listed: () => listed };
}

describe('Kubernetes reflector', { timeout: 120_000 }, () => {
  let api: FakeKubeApiServer;
  let url: string;

  before(async () => {
    api = new FakeKubeApiServer();
    url = await api.start();
  });
  after(async () => {
    await api?.stop();
  });

  it('lists page by page, then follows the watch; a dropped watch resumes without losing changes', async () => {
    for (let i = 0; i < 25; i++) api.put('pods', pod(`p${i}`));
    const { r, held, listed } = mirror(api, url);
    r.start();
    try {
      await until(() => listed() === 1, 5000, 'the list');
      assert.equal(held.size, 25);
      assert.equal(
        api.requests.filter((q) => q.startsWith('GET /api/v1/pods?limit=10')).length,
        3,
        'three pages of ten',
      );
      api.put('pods', pod('live'));
      api.delete('pods', 'default', 'p0');
      await until(() => held.has('default/live') && !held.has('default/p0'));
      const watches = r.watches;
      api.dropWatches();
      api.put('pods', pod('while-away'));
      api.put('pods', pod('p1', 'default', { changed: 'yes' }));
      await until(
        () =>
          held.has('default/while-away') &&
          (held.get('default/p1')?.metadata as { labels?: Record<string, string> } | undefined)?.labels?.changed ===
            'yes',
        5000,
        'the changes made while the watch was down',
      );
      assert.ok(r.watches > watches, 'the watch was resumed');
      assert.equal(r.lists, 1, 'from its version, without a relist');
    } finally {
      r.stop();
    }
  });

  it('a 410 (the version compacted away) means a relist, which finds what was deleted meanwhile', async () => {
    const own = new FakeKubeApiServer();
    const ownUrl = await own.start();
    own.put('pods', pod('stays'));
    own.put('pods', pod('gone-soon'));
    const { r, held, listed } = mirror(own, ownUrl);
    r.start();
    try {
      await until(() => listed() === 1);
      assert.deepEqual([...held.keys()].sort(), ['default/gone-soon', 'default/stays']);
      // While the watch is down and the history gone: one deleted, one added.
      own.dropWatches();
      own.delete('pods', 'default', 'gone-soon');
      own.put('pods', pod('new-after-compaction'));
      own.compact();
      await until(() => listed() === 2, 5000, `the relist (requests: ${own.requests.slice(-6).join(', ')})`);
      assert.deepEqual([...held.keys()].sort(), ['default/new-after-compaction', 'default/stays']);
      assert.equal(r.lists, 2);
    } finally {
      r.stop();
      await own.stop();
    }
  });

  it('lists 50,000 pods', async () => {
    const big = new FakeKubeApiServer();
    const bigUrl = await big.start();
    try {
      for (let i = 0; i < 50_000; i++) big.put('pods', pod(`pod-${i}`, `ns-${i % 2000}`, { app: `a${i % 10}` }));
      const { r, held, listed } = mirror(big, bigUrl, 500);
      const t0 = Date.now();
      r.start();
      await until(() => listed() === 1, 60_000, 'the 50,000-pod list');
      const ms = Date.now() - t0;
      r.stop();
      assert.equal(held.size, 50_000);
      console.log(`# 50,000 pods listed in ${ms} ms (100 pages)`);
    } finally {
      await big.stop();
    }
  });
});

describe('Kubernetes configuration', () => {
  it("a kubeconfig's server and credentials reach the API; a missing one is a clear error", async () => {
    const { loadKubeEndpoint } = await import('../../src/datastore/kdd/kubeconfig.js');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const api = new FakeKubeApiServer();
    const url = await api.start();
    const dir = mkdtempSync(join(tmpdir(), 'palisade-kubeconfig-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: ${url}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: t\n  context:\n    cluster: t\n    user: u\ncurrent-context: t\nusers:\n- name: u\n  user:\n    token: s3cret\n`,
    );
    try {
      const e = loadKubeEndpoint({ env: { KUBECONFIG: file } });
      assert.equal(e.server, url);
      assert.equal(e.source, `kubeconfig ${file}`);
      await new HttpKubeTransport(e).get('/api/v1/pods');
      assert.equal(api.lastAuthorization, 'Bearer s3cret');
      assert.throws(
        () => loadKubeEndpoint({ env: { KUBECONFIG: join(dir, 'missing') } }),
        /cannot load the Kubernetes configuration/,
      );
    } finally {
      await api.stop();
    }
  });
});

describe('Kubernetes configuration in the cluster', () => {
  it("in a pod: KUBERNETES_SERVICE_HOST/PORT, the service account's CA checks the server and its token authenticates", async () => {
    const { loadKubeEndpoint } = await import('../../src/datastore/kdd/kubeconfig.js');
    const { mkdirSync, readFileSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { makeTls } = await import('../helpers/etcd.js');
    const dir = tempDir();
    const tls = makeTls(dir);
    const api = new FakeKubeApiServer();
    const url = await api.start('127.0.0.1', {
      cert: readFileSync(tls.server.certFile),
      key: readFileSync(tls.server.keyFile),
    });
    const root = join(dir, 'root');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'pod-token');
    writeFileSync(join(sa, 'ca.crt'), readFileSync(tls.server.caFile));
    writeFileSync(join(sa, 'namespace'), 'kube-system');
    const port = new URL(url).port;
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    // client-node reads these from the process environment itself.
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = port;
    try {
      const e = loadKubeEndpoint({
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        serviceAccountRoot: root,
      });
      assert.equal(e.source, 'in-cluster service account');
      assert.equal(e.server, url);
      await new HttpKubeTransport(e).get('/api/v1/pods');
      assert.equal(api.lastAuthorization, 'Bearer pod-token');
      // A server the service account's CA did not sign is refused.
      const otherDir = join(dir, 'other');
      mkdirSync(otherDir);
      const other = makeTls(otherDir);
      writeFileSync(join(sa, 'ca.crt'), readFileSync(other.server.caFile));
      const e2 = loadKubeEndpoint({
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        serviceAccountRoot: root,
      });
      await assert.rejects(
        new HttpKubeTransport(e2).get('/api/v1/pods'),
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
      await api.stop();
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

describe('Kubernetes reflector: a resource type the server does not have', () => {
  it('a 404 is an empty list (in sync, not an error loop); once its CRD is installed it is found; when removed, its objects are deleted', async () => {
    const api = new FakeKubeApiServer();
    const url = await api.start();
    const held = new Set<string>();
    let listed = 0;
    const r = new Reflector(
      {
        transport: new HttpKubeTransport({ server: url }),
        path: '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies',
        log,
        backoffMs: { min: 10, max: 50 },
        missingApiRetryMs: 300,
      },
      {
        onUpsert: (o) => held.add(o.metadata?.name ?? ''),
        onDelete: (o) => held.delete(o.metadata?.name ?? ''),
        onListed: () => listed++,
      },
    );
    r.start();
    try {
      await until(() => listed === 1, 5000, 'the 404 to count as a list');
      assert.ok(r.missing);
      const tries = () => api.requests.filter((q) => q.includes('clusternetworkpolicies')).length;
      const before = tries();
      await new Promise((res) => setTimeout(res, 150));
      assert.equal(tries(), before, 'no retry before the pause is over');
      api.install(CLUSTER_NETWORK_POLICY_TYPE);
      api.put('clusternetworkpolicies', { metadata: { name: 'deny-all' }, spec: { tier: 'Admin' } });
      await until(() => held.has('deny-all'), 5000, 'the policy once the type is installed');
      assert.equal(r.missing, false);
      api.put('clusternetworkpolicies', { metadata: { name: 'second' }, spec: { tier: 'Admin' } });
      await until(() => held.has('second'), 5000, 'the watch');
      api.uninstall('clusternetworkpolicies');
      await until(() => held.size === 0 && r.missing, 5000, 'the objects of a removed type to be deleted');
    } finally {
      r.stop();
      await api.stop();
    }
  });
});
