// The agent on the Kubernetes datastore when its API server vanishes without a FIN or RST
// (issue 51 D4: it stayed in sync and ready on stale policy for 150 s and more, and never
// asked the server that replaced it). The tests' API server sits behind a proxy in the
// lab's host namespace that goes silent on demand (test/helpers/blackhole-proxy.ts: no
// real server produces this fault on demand), with bookmarks every 500 ms standing in for
// the real server's one a minute, and a watch idle time scaled down to match. Silent,
// readiness fails with the reason; once new connections reach a server again ("moved", a
// load balancer sending them to a healthy one), the change made meanwhile is enforced and
// the agent is ready again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { vethNameForWorkload } from '../../src/datastore/kdd/conversion/names.js';
import { ApiProcess, dbFromApiPolicy, labKubeconfig, ProxyProcess, shopPod } from '../helpers/kube-api-process.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kddvanish');
const policy = dbFromApiPolicy;

describe('e2e: the Kubernetes API server vanishes (issue 51 D4)', { skip: ROOT_SKIP, timeout: 120_000 }, () => {
  let lab: Lab;
  let api: ApiProcess;
  let proxy: ProxyProcess;
  let agent: LabAgent;
  let client: Workload, db: Workload;
  const readiness = () => lab.http('http://127.0.0.1:9099/readiness');
  const detail = () => lab.http('http://127.0.0.1:9099/readiness?detail=true').body;

  before(async () => {
    lab = new Lab('palisade-kddvan');
    const add = (name: string, ip: string, i: number) =>
      lab.addWorkload(name, ip, i, { iface: vethNameForWorkload('shop', name) });
    client = add('api', '10.76.0.10', 1);
    db = add('db', '10.76.0.11', 2);
    await lab.listen(db, [5432, 6543]);
    api = new ApiProcess(lab.host);
    const target = new URL(await api.url());
    await api.bookmarks(500);
    proxy = new ProxyProcess(lab.host, { host: target.hostname, port: Number(target.port) });
    const port = await proxy.port();
    await api.put('namespaces', { metadata: { name: 'shop' } });
    await api.put('serviceaccounts', { metadata: { name: 'default', namespace: 'shop' } });
    await api.put('nodes', { metadata: { name: 'node1' } });
    for (const w of [client, db]) await api.put('pods', shopPod(w));
    await api.put('networkpolicies', policy(5432));
    const dir = tempDir();
    const kubeconfig = labKubeconfig(dir, `http://127.0.0.1:${port}`);
    agent = new LabAgent(lab, tempDir(), {
      FELIX_DATASTORETYPE: 'kubernetes',
      KUBECONFIG: kubeconfig,
      FELIX_HEALTHENABLED: 'true',
      FELIX_HEALTHHOST: '127.0.0.1',
      PALISADE_KDD_WATCH_IDLE_MS: '3000',
      PALISADE_DATASTORE_GRACE_MS: '3000',
    });
    await agent.applied();
    assert.ok((await lab.until(() => lab.tcp(client, db.ip, 5432, 300), 10_000)) >= 0, 'the policy never allowed');
    assert.equal(lab.tcp(client, db.ip, 6543, 300), false);
  });
  after(async () => {
    await agent?.stop();
    api?.proc.kill();
    proxy?.proc.kill();
    lab?.destroy();
  });

  it('silent: readiness fails, saying why; moved: the change made meanwhile is enforced and it is ready again', async () => {
    assert.ok((await lab.until(() => readiness().status === 204, 15_000, 200)) >= 0, `never ready: ${detail()}`);
    const t0 = Date.now();
    await proxy.mode('vanish');
    await api.put('networkpolicies', policy(6543));
    const notReady = await lab.until(() => readiness().status === 503, 30_000, 200);
    assert.ok(notReady >= 0, `still ready 30 s after the server vanished:\n${agent.log.slice(-2000)}`);
    const why = detail();
    assert.match(why, /the datastore has not answered for \d+ s: .*nothing received in 3000 ms/, why);
    console.log(`# not ready ${Date.now() - t0} ms after the server vanished (idle 3 s, grace 3 s, heartbeat 5 s)`);
    // Stale policy is kept meanwhile (fail closed: nothing is opened for a datastore's silence).
    assert.equal(lab.tcp(client, db.ip, 5432, 300), true);
    const relayed = await proxy.mode('moved');
    assert.ok(
      (await lab.until(() => lab.tcp(client, db.ip, 6543, 300) && !lab.tcp(client, db.ip, 5432, 200), 20_000)) >= 0,
      `the change made while the server was gone never landed:\n${agent.log.slice(-2000)}`,
    );
    assert.ok((await proxy.mode('moved')) > relayed, 'no request reached the new server');
    assert.ok((await lab.until(() => readiness().status === 204, 15_000, 200)) >= 0, 'never ready again');
    assert.match(agent.log, /Kubernetes API: answering again/);
  });
});
