// The agent fed only through `palisade typha`, which reads etcd (and, below, a file
// datastore): enforcement follows the datastore through Typha; a Typha restart, with a
// change made while it was down, converges; 100 clients connecting at once are all served
// while the agent keeps enforcing.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { BIN, cleanEnv, LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const V3 = 'projectcalico.org/v3';
const PREFIX = '/calico/resources/v3/projectcalico.org';
const CLIENTS = fileURLToPath(new URL('../helpers/typha-clients.js', import.meta.url));
const tempDir = tempDirs('typha-server');
const PORT = 15473;

const wep = (w: Workload, labels: Record<string, string>) => labWorkloadEndpoint(w, labels);
const profile = {
  apiVersion: V3,
  kind: 'Profile',
  metadata: { name: 'kns.e2e' },
  spec: { egress: [{ action: 'Allow' }] },
};
const policy = (port: number) => ({
  apiVersion: V3,
  kind: 'NetworkPolicy',
  metadata: { name: 'db', namespace: 'e2e' },
  spec: {
    selector: "app == 'db'",
    ingress: [
      { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [port] } },
    ],
  },
});

class TyphaProcess {
  proc: ChildProcess | undefined;
  log = '';
  constructor(
    private readonly lab: Lab,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
  ) {}
  async start(): Promise<void> {
    this.log = '';
    this.proc = this.lab.spawnInHost(
      [process.execPath, BIN, 'typha', '--port', String(PORT), '--listen-host', '127.0.0.1', ...this.args],
      { ...cleanEnv, PALISADE_LOG_FORMAT: 'json', TYPHA_SHUTDOWNTIMEOUTSECS: '2', ...this.env },
    );
    this.proc.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
    assert.ok(
      (await this.lab.until(() => /"msg":"Typha listening"/.test(this.log), 15_000)) >= 0,
      `palisade typha never listened:\n${this.log}`,
    );
  }
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGKILL');
    await new Promise((r) => p.once('exit', r));
  }
}

describe('e2e: palisade agent <- palisade typha <- etcd', {
  skip: ROOT_SKIP || (etcdAvailable() ? false : 'etcd is not installed (npm test installs it)'),
  timeout: 240_000,
}, () => {
  let lab: Lab;
  let etcd: TestEtcd;
  let typha: TyphaProcess;
  let agent: LabAgent;
  let api: Workload, db: Workload;

  before(async () => {
    lab = new Lab();
    etcd = new TestEtcd(undefined, lab.host);
    await etcd.start();
    api = lab.addWorkload('api', '10.67.0.10', 1);
    db = lab.addWorkload('db', '10.67.0.11', 2);
    await lab.listen(db, [5432, 6543]);
    etcd.put(`${PREFIX}/profiles/kns.e2e`, JSON.stringify(profile));
    etcd.put(`${PREFIX}/workloadendpoints/e2e/node1-k8s-api-eth0`, JSON.stringify(wep(api, { app: 'api' })));
    etcd.put(`${PREFIX}/workloadendpoints/e2e/node1-k8s-db-eth0`, JSON.stringify(wep(db, { app: 'db' })));
    typha = new TyphaProcess(lab, [], {
      FELIX_DATASTORETYPE: 'etcdv3',
      FELIX_ETCDENDPOINTS: etcd.endpoint,
      TYPHA_HEALTHENABLED: 'true',
      TYPHA_PROMETHEUSMETRICSENABLED: 'true',
      TYPHA_PROMETHEUSMETRICSHOST: '127.0.0.1',
    });
    await typha.start();
    agent = new LabAgent(lab, tempDir(), { FELIX_TYPHAADDR: `127.0.0.1:${PORT}` });
    await agent.applied();
  });
  after(async () => {
    await agent?.stop();
    await typha?.kill();
    await etcd?.destroy();
    lab?.destroy();
  });

  it('follows etcd through Typha: deny by default, a policy allows, an edit moves the port', async () => {
    assert.equal(lab.tcp(api, db.ip, 5432), false);
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(5432)));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 5432, 300), 10_000)) >= 0,
      'the policy never reached the kernel through Typha',
    );
    const t0 = Date.now();
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(6543)));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 6543, 300) && !lab.tcp(api, db.ip, 5432, 100), 5000, 10)) >= 0,
    );
    console.log(`# etcd -> palisade typha -> agent -> kernel: policy edit enforced in ${Date.now() - t0} ms`);
  });

  it('palisade typha reports ready and serves typha_* metrics', () => {
    assert.equal(lab.http('http://localhost:9098/readiness').status, 204);
    const m = lab.http('http://127.0.0.1:9093/metrics').body;
    assert.match(m, /^typha_connections_active 1$/m);
    assert.match(m, /^typha_cache_size [1-9]/m);
    assert.match(m, /^typha_breadcrumb_seq_number [1-9]/m);
    assert.match(m, /^typha_snapshots_generated [1-9]/m);
  });

  it('a Typha restart, with a change made while it was down: traffic keeps flowing, then the change is enforced', async () => {
    await typha.kill();
    assert.equal(lab.tcp(api, db.ip, 6543), true, 'what is programmed stays while Typha is away');
    etcd.del(`${PREFIX}/networkpolicies/e2e/db`);
    await typha.start();
    assert.ok(
      (await lab.until(() => !lab.tcp(api, db.ip, 6543, 200), 20_000)) >= 0,
      `the deletion made while Typha was down never reached the kernel:\n${agent.log.slice(-3000)}`,
    );
    assert.match(agent.log, /lost the connection to Typha; reconnecting/);
  });

  it('100 clients connecting at once are all served, and the agent keeps enforcing', async () => {
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(5432)));
    assert.ok((await lab.until(() => lab.tcp(api, db.ip, 5432, 300), 10_000)) >= 0);
    const out = lab.sh(lab.host, process.execPath, [CLIENTS, `127.0.0.1:${PORT}`, '100', '60']);
    const result = JSON.parse(out) as { inSync?: number; keys?: number[]; ms?: number; timeout?: boolean };
    assert.equal(result.inSync, 100, out);
    assert.equal(result.keys?.length, 1, `every client holds the same number of keys: ${out}`);
    console.log(`# 100 Typha clients in sync in ${result.ms} ms`);
    etcd.put(`${PREFIX}/networkpolicies/e2e/db`, JSON.stringify(policy(6543)));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 6543, 300), 10_000)) >= 0,
      'the agent stopped following after the load',
    );
  });
});

describe('e2e: palisade agent <- palisade typha <- file datastore', { skip: ROOT_SKIP, timeout: 120_000 }, () => {
  let lab: Lab;
  let typha: TyphaProcess;
  let agent: LabAgent;
  let dir: string;

  after(async () => {
    await agent?.stop();
    await typha?.kill();
    lab?.destroy();
  });

  it("enforces the directory's policy through Typha, and follows an edit", async () => {
    lab = new Lab();
    dir = tempDir();
    const api = lab.addWorkload('api', '10.67.1.10', 1);
    const db = lab.addWorkload('db', '10.67.1.11', 2);
    await lab.listen(db, [5432, 6543]);
    const put = (file: string, ...r: unknown[]) => writeResources(dir, r, file);
    put('r.yaml', profile, wep(api, { app: 'api' }), wep(db, { app: 'db' }), policy(5432));
    typha = new TyphaProcess(lab, ['--datastore-dir', dir], {});
    await typha.start();
    agent = new LabAgent(lab, tempDir(), { FELIX_TYPHAADDR: `127.0.0.1:${PORT}` });
    await agent.applied();
    assert.equal(lab.tcp(api, db.ip, 5432), true);
    assert.equal(lab.tcp(api, db.ip, 6543), false);
    put('r.yaml', profile, wep(api, { app: 'api' }), wep(db, { app: 'db' }), policy(6543));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 6543, 300) && !lab.tcp(api, db.ip, 5432, 100), 10_000)) >= 0,
      'the file edit never reached the kernel through Typha',
    );
  });
});
