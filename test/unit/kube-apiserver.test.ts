// The tests' Kubernetes API server, checked with a real client: kubectl gets, creates,
// replaces, merge-patches, deletes and watches through it; pagination, bookmarks and the
// 410 on a compacted version behave as the real server's.
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { crdTypes, FakeKubeApiServer, mergePatch } from '../helpers/kube-apiserver.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { tempDirs } from '../helpers/temp.js';

const haveKubectl = spawnSync('kubectl', ['version', '--client']).status === 0;
const tempDir = tempDirs('kube-apiserver');

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

const pod = (name: string, ns = 'default', labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: 'node1', containers: [{ name: 'c', image: 'x' }] },
});

describe("the tests' Kubernetes API server", { timeout: 60_000 }, () => {
  let api: FakeKubeApiServer;
  let url: string;
  let kubeconfig: string;
  /** kubectl's discovery cache, kept in the test's own directory rather than ~/.kube. */
  let cacheDir: string;

  before(async () => {
    api = new FakeKubeApiServer();
    url = await api.start();
    const dir = tempDir();
    kubeconfig = join(dir, 'kubeconfig');
    cacheDir = join(dir, 'cache');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: ${url}\ncontexts:\n- name: t\n  context:\n    cluster: t\n    user: u\ncurrent-context: t\nusers:\n- name: u\n  user: {}\n`,
    );
  });
  after(async () => {
    await api?.stop();
  });

  // Asynchronous: the server answering it runs in this process.
  const kubectl = (...args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(
        'kubectl',
        ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args],
        { encoding: 'utf8', timeout: 20_000 },
        (e, stdout, stderr) =>
          e ? reject(new Error(`kubectl ${args.join(' ')}: ${e.message} ${stderr}`)) : resolve(`${stdout}${stderr}`),
      ),
    );

  it('kubectl: create, get (with label selectors), replace, merge patch, delete', async (t) => {
    if (!haveKubectl) {
      assert.ok(!process.env.CI, 'kubectl is required on CI');
      t.skip('kubectl is not installed');
      return;
    }
    const dir = tempDir();
    writeFileSync(join(dir, 'pod.json'), JSON.stringify(pod('web', 'default', { app: 'web' })));
    assert.match(await kubectl('create', '--validate=false', '-f', join(dir, 'pod.json')), /pod\/web created/);
    const got = JSON.parse(await kubectl('get', 'pods', '-A', '-o', 'json')) as {
      items: Array<{ metadata: { name: string; labels: Record<string, string> } }>;
    };
    assert.deepEqual(
      got.items.map((i) => i.metadata.name),
      ['web'],
    );
    writeFileSync(join(dir, 'pod.json'), JSON.stringify(pod('web', 'default', { app: 'web', v: '2' })));
    assert.match(await kubectl('replace', '--validate=false', '-f', join(dir, 'pod.json')), /pod\/web replaced/);
    assert.match(
      await kubectl('patch', 'pod', 'web', '--type=merge', '-p', '{"metadata":{"labels":{"v":"3","app":null}}}'),
      /pod\/web patched/,
    );
    assert.deepEqual(api.get('pods', 'default', 'web')?.metadata.labels, { v: '3' });
    // Label selectors, as kubectl sends them (Typha discovery lists EndpointSlices this way).
    assert.match(await kubectl('get', 'pods', '-n', 'default', '-l', 'v=3', '-o', 'name'), /^pod\/web$/m);
    assert.equal((await kubectl('get', 'pods', '-n', 'default', '-l', 'v!=3,!app', '-o', 'name')).trim(), '');
    assert.match(await kubectl('get', 'pods', '-A', '-l', 'v,!app', '-o', 'name'), /^pod\/web$/m);
    assert.match(await kubectl('get', 'networkpolicies', '-n', 'default'), /No resources found/);
    assert.match(await kubectl('delete', 'pod', 'web'), /pod "web" deleted/);
    assert.equal(api.get('pods', 'default', 'web'), undefined);
  });

  it('kubectl: get --watch sees what changes', async (t) => {
    if (!haveKubectl) {
      assert.ok(!process.env.CI, 'kubectl is required on CI');
      t.skip('kubectl is not installed');
      return;
    }
    const w = spawn('kubectl', [
      '--kubeconfig',
      kubeconfig,
      '--cache-dir',
      cacheDir,
      'get',
      'pods',
      '-n',
      'default',
      '--watch-only',
      '-o',
      'name',
    ]);
    let out = '';
    w.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await new Promise((r) => setTimeout(r, 1500));
      api.put('pods', pod('watched'));
      const t0 = Date.now();
      while (!out.includes('pod/watched') && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
      assert.match(out, /pod\/watched/);
    } finally {
      w.kill();
    }
  });

  it('lists page by page at one resourceVersion; watch resumes from it, with bookmarks; a compacted version is 410', async () => {
    for (let i = 0; i < 25; i++) api.put('pods', pod(`p${String(i).padStart(2, '0')}`, 'ns1'));
    const names: string[] = [];
    let cont = '';
    let rv = '';
    do {
      const r = JSON.parse((await get(`${url}/api/v1/pods?limit=10${cont ? `&continue=${cont}` : ''}`)).body) as {
        metadata: { continue?: string; resourceVersion: string };
        items: Array<{ metadata: { name: string } }>;
      };
      names.push(...r.items.map((i) => i.metadata.name));
      rv ||= r.metadata.resourceVersion;
      assert.equal(r.metadata.resourceVersion, rv, "every page at the first page's version");
      cont = r.metadata.continue ?? '';
    } while (cont);
    assert.equal(names.filter((n) => n.startsWith('p')).length, 25);
    api.put('pods', pod('after-list', 'ns1'));
    // Watch from the list's version: just what happened since, then a bookmark.
    const events = await new Promise<string>((resolve) => {
      request(`${url}/api/v1/pods?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
          if (body.includes('BOOKMARK')) {
            res.destroy();
            resolve(body);
          }
        });
      }).end();
    });
    const lines = events
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name?: string } } });
    assert.deepEqual(
      lines.map((l) => [l.type, l.object.metadata.name]),
      [
        ['ADDED', 'after-list'],
        ['BOOKMARK', undefined],
      ],
    );
    api.compact();
    const gone = await get(`${url}/api/v1/pods?watch=true&resourceVersion=${rv}`);
    const status = JSON.parse(gone.body.trim()) as { type: string; object: { code: number; reason: string } };
    assert.deepEqual([status.type, status.object.code, status.object.reason], ['ERROR', 410, 'Expired']);
  });

  it('merge patch (RFC 7386)', () => {
    assert.deepEqual(mergePatch({ a: 'b', c: { d: 'e', f: 'g' } }, { a: 'z', c: { f: null } }), {
      a: 'z',
      c: { d: 'e' },
    });
    assert.deepEqual(mergePatch({ a: [1, 2] }, { a: [3] }), { a: [3] });
  });
});

describe("the tests' Kubernetes API server with Calico's own CRDs (../shared/calico)", () => {
  it("serves each release's CRDs as the real server would: group, storage version, scope, and pruning", () => {
    const v331 = crdTypes(sharedCalico('v3.31.7', 'crds', 'libcalico-go'));
    const find = (types: typeof v331, plural: string) => types.find((t) => t.plural === plural);
    assert.deepEqual(
      ['tiers', 'networkpolicies', 'adminnetworkpolicies', 'baselineadminnetworkpolicies'].map((p) => {
        const t = find(v331, p);
        return t && [t.group, t.version, t.namespaced];
      }),
      [
        ['crd.projectcalico.org', 'v1', false],
        ['crd.projectcalico.org', 'v1', true],
        ['policy.networking.k8s.io', 'v1alpha1', false],
        ['policy.networking.k8s.io', 'v1alpha1', false],
      ],
    );
    const v332 = crdTypes(sharedCalico('v3.32.1', 'crds', 'api'));
    assert.deepEqual(find(v332, 'tiers') && [find(v332, 'tiers')?.group, find(v332, 'tiers')?.version], [
      'projectcalico.org',
      'v3',
    ]);
    const cnp = find(crdTypes(sharedCalico('v3.32.1', 'crds', 'libcalico-go')), 'clusternetworkpolicies');
    assert.equal(cnp?.group, 'policy.networking.k8s.io');

    const api = new FakeKubeApiServer();
    api.installCrds(sharedCalico('v3.31.7', 'crds', 'libcalico-go'));
    const stored = api.put('tiers.crd.projectcalico.org', {
      metadata: { name: 'sec' },
      spec: { order: 100, defaultAction: 'Pass', bogus: true },
      status: { x: 1 },
    } as never);
    assert.deepEqual(stored.spec, { order: 100, defaultAction: 'Pass' }, 'unknown fields pruned');
    const anp = api.put('adminnetworkpolicies', {
      metadata: { name: 'a' },
      spec: {
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }], typo: 1 }],
      },
    } as never);
    assert.deepEqual((anp.spec as { ingress: unknown[] }).ingress, [{ action: 'Deny', from: [{ namespaces: {} }] }]);
  });
});
