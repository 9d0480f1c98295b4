// etcd faults during churn: while a writer keeps changing endpoints and policies (ten
// changes per transaction, ten transactions a second), etcd is stopped and restarted
// twice and compacted twice, once right after a restart so the agent comes back to a
// compacted revision. Afterwards the agent's kernel state must equal what a fresh agent
// programs from the final datastore, the traffic must follow the final policy, foreign
// state must be untouched, and the agent must never have exited.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { foreignState, nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { BIN, cleanEnv } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { Rng } from '../helpers/rng.js';

const PREFIX = '/calico/resources/v3/projectcalico.org';
const V3 = 'projectcalico.org/v3';
const SYNTHETIC = 150;
const POLICIES = 10;
const skip = ROOT_SKIP || (etcdAvailable() ? false : 'etcd-server/etcd-client not installed (npm test installs them)');

const wepKey = (name: string) => `${PREFIX}/workloadendpoints/e2e/node1-k8s-${name}-eth0`;
const wep = (name: string, iface: string, ip: string, labels: Record<string, string>, mac?: string) => ({
  apiVersion: V3,
  kind: 'WorkloadEndpoint',
  metadata: { name: `node1-k8s-${name}-eth0`, namespace: 'e2e', labels },
  spec: {
    node: 'node1',
    orchestrator: 'k8s',
    pod: name,
    endpoint: 'eth0',
    interfaceName: iface,
    ...(mac ? { mac } : {}),
    ipNetworks: [`${ip}/32`],
    profiles: ['kns.e2e'],
  },
});
const policyKey = (i: number) => `${PREFIX}/networkpolicies/e2e/p${i}`;
const policy = (i: number, port: number) => ({
  apiVersion: V3,
  kind: 'NetworkPolicy',
  metadata: { name: `p${i}`, namespace: 'e2e' },
  spec: {
    order: i,
    selector: i === 0 ? "app == 'b'" : `group == 'g${i}'`,
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: i === 0 ? "app == 'a'" : `group == 'g${(i + 1) % POLICIES}'` },
        destination: { ports: [port] },
      },
    ],
  },
});

describe('e2e: etcd stopped, restarted and compacted during churn', { skip }, () => {
  let lab: Lab;
  let etcd: TestEtcd;
  let agent: ChildProcess | undefined;
  let log = '';
  let a: Workload, b: Workload;
  const sh = (cmd: string, args: string[]) => lab.sh(lab.host, cmd, args);
  // Our tables: the rules, and Calico 3.32's ARP table (its chains follow the endpoints too).
  const table = () => {
    const rules = nftTableState(sh, 'ip', 'calico');
    return rules && `${rules}\n${nftTableState(sh, 'arp', 'calico-arp')}`;
  };
  const start = () => {
    log = '';
    agent = lab.spawnInHost([process.execPath, BIN, 'agent', '--hostname', 'node1'], {
      ...cleanEnv,
      FELIX_DATASTORETYPE: 'etcdv3',
      FELIX_ETCDENDPOINTS: etcd.endpoint,
      FELIX_LOGSEVERITYSCREEN: 'Debug',
      PALISADE_LOG_FORMAT: 'json',
    });
    agent.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  };
  const stopAgent = async () => {
    const p = agent;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
  };
  /** Polls until the table has not changed for `quietMs`; returns it. */
  const settled = async (quietMs = 2500, maxMs = 60_000) => {
    let last = table();
    let since = Date.now();
    const t0 = Date.now();
    while (Date.now() - t0 < maxMs) {
      await new Promise((r) => setTimeout(r, 250));
      const now = table();
      if (now !== last) {
        last = now;
        since = Date.now();
      } else if (Date.now() - since >= quietMs && now !== '') return now;
    }
    throw new Error(`the table never settled:\n${log.slice(-3000)}`);
  };

  before(async () => {
    lab = new Lab('palisade-etcdchurn');
    etcd = new TestEtcd(undefined, lab.host);
    await etcd.start();
    a = lab.addWorkload('a', '10.72.0.10', 1);
    b = lab.addWorkload('b', '10.72.0.11', 2);
    await lab.listen(b, [7000, 7001, 7002, 7003]);
    sh('nft', ['add table ip foreign']);
    sh('nft', ['add chain ip foreign screen { type filter hook forward priority 10; policy accept; }']);
    sh('nft', ['add rule ip foreign screen ip saddr 192.0.2.1 accept']);
    const base: Array<[string, string]> = [
      [
        `${PREFIX}/profiles/kns.e2e`,
        JSON.stringify({
          apiVersion: V3,
          kind: 'Profile',
          metadata: { name: 'kns.e2e' },
          spec: { egress: [{ action: 'Allow' }] },
        }),
      ],
      [wepKey('a'), JSON.stringify(wep('a', a.iface, a.ip, { app: 'a' }, a.mac))],
      [wepKey('b'), JSON.stringify(wep('b', b.iface, b.ip, { app: 'b' }, b.mac))],
    ];
    for (let i = 0; i < SYNTHETIC; i++)
      base.push([
        wepKey(`s${i}`),
        JSON.stringify(
          wep(`s${i}`, `cali${(0xe0000000 + i).toString(16)}000`.slice(0, 15), `10.73.${i >> 8}.${i & 255}`, {
            group: `g${i % POLICIES}`,
          }),
        ),
      ]);
    for (let i = 0; i < POLICIES; i++) base.push([policyKey(i), JSON.stringify(policy(i, 7000))]);
    etcd.putMany(base);
    start();
    assert.ok((await lab.until(() => /"msg":"applied"/.test(log), 20_000)) >= 0, `never applied:\n${log.slice(-3000)}`);
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 7000, 300), 5000)) >= 0);
  });
  after(async () => {
    await stopAgent();
    await etcd?.destroy();
    lab?.destroy();
  });

  it('converges to what a fresh agent programs, whatever etcd went through', { timeout: 300_000 }, async () => {
    const foreignBefore = foreignState(sh, [a.ip, b.ip]);
    const rng = new Rng(0xe7cd);
    let finalPort = 7000;
    let written = 0;
    let refused = 0;
    /** One transaction of ten random changes; false when etcd refused it (it is down). */
    const churn = () => {
      const ops: string[] = [];
      for (let k = 0; k < 10; k++) {
        const r = rng.next();
        const i = rng.int(SYNTHETIC);
        if (r < 0.5)
          ops.push(
            `put ${JSON.stringify(wepKey(`s${i}`))} ${JSON.stringify(JSON.stringify(wep(`s${i}`, `cali${(0xe0000000 + i).toString(16)}000`.slice(0, 15), `10.73.${i >> 8}.${i & 255}`, { group: `g${rng.int(POLICIES)}`, v: String(rng.int(1000)) })))}`,
          );
        else if (r < 0.8) ops.push(`del ${JSON.stringify(wepKey(`s${i}`))}`);
        else if (r < 0.99) {
          const p = rng.int(POLICIES);
          const port = 7000 + rng.int(4);
          if (p === 0) finalPort = port;
          ops.push(`put ${JSON.stringify(policyKey(p))} ${JSON.stringify(JSON.stringify(policy(p, port)))}`);
        } else ops.push(`del ${JSON.stringify(policyKey(1 + rng.int(POLICIES - 1)))}`);
      }
      const ok = etcd.ctl(['--command-timeout', '2s', 'txn'], `\n${ops.join('\n')}\n\n\n`, false).ok;
      if (ok) written += ops.length;
      else refused++;
      return ok;
    };
    const churnFor = async (ms: number) => {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        churn();
        await new Promise((r) => setTimeout(r, 60));
      }
    };
    await churnFor(4000);
    await etcd.stop();
    await churnFor(2500); // refused: etcd is down
    await etcd.start();
    await churnFor(4000);
    etcd.ctl(['compact', etcd.revision()]);
    await churnFor(3000);
    await etcd.stop();
    await etcd.start();
    // Before the agent is back: more changes, then compact them, so it resumes from a
    // revision that no longer exists.
    churn();
    churn();
    etcd.ctl(['compact', etcd.revision()]);
    await churnFor(4000);

    const converged = await settled();
    assert.equal(agent?.exitCode, null, 'the agent exited');
    assert.ok(
      (await lab.until(() => lab.tcp(a, b.ip, finalPort, 300), 5000)) >= 0,
      `a cannot reach b on the final port ${finalPort}`,
    );
    for (const p of [7000, 7001, 7002, 7003].filter((x) => x !== finalPort))
      assert.equal(lab.tcp(a, b.ip, p), false, `port ${p} is open`);
    const resyncs = (
      log.match(
        /"msg":"(resynced the datastore|watch revision compacted; full resync|lost the datastore watch; resyncing)"/g,
      ) ?? []
    ).length;
    const compactedSeen = /watch revision compacted/.test(log);

    // A fresh agent on the final datastore, from an empty kernel.
    await stopAgent();
    sh('nft', ['delete', 'table', 'ip', 'calico']);
    sh('nft', ['delete', 'table', 'arp', 'calico-arp']);
    start();
    assert.ok(
      (await lab.until(() => /"msg":"applied"/.test(log), 20_000)) >= 0,
      `the fresh agent never applied:\n${log.slice(-3000)}`,
    );
    const fresh = await settled();
    assert.equal(converged, fresh, 'the churned agent and a fresh one disagree');
    assert.equal(foreignState(sh, [a.ip, b.ip]), foreignBefore, 'foreign state changed');
    console.log(
      `# ${written} changes written (${refused} transactions refused while etcd was down), 2 restarts, 2 compactions; ${resyncs} resyncs${compactedSeen ? ', one from a compacted revision' : ''}; converged to the fresh agent's table`,
    );
  });
});
