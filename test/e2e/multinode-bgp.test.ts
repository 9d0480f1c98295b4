// Pod networking across nodes with BGP and no encapsulation, as calico-node does it: each
// "node" (a network namespace on one underlay subnet) runs the palisade agent and
// `palisade bgp`, which renders BIRD's configuration from etcd and runs Debian's BIRD 1.6.
// Real packets and real BGP: the full mesh comes up and each node learns the others'
// blocks (routes `proto bird`), pods reach each other, a policy is enforced across nodes,
// a new node joins, BIRD killed on one node is restarted and its routes come back, a node
// removed takes its routes with it, and the underlay link cut and restored.
import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { BIN, cleanEnv } from '../helpers/lab-agent.js';
import { type LabNode, MultiNodeLab } from '../helpers/multinode.js';
import {
  type Member as ClusterMember,
  newPodReachableMs,
  putAllowProfile,
  putWorkload,
  routeTo,
  tcp,
  V3_PREFIX,
  v3,
} from '../helpers/multinode-cluster.js';
import { ROOT_SKIP } from '../helpers/netns.js';

const birdMissing = spawnSync('bird', ['--version']).error
  ? 'bird (Debian package bird, BIRD 1.6) not installed (npm test installs it)'
  : false;
const skip =
  ROOT_SKIP || (etcdAvailable() ? birdMissing : 'etcd-server/etcd-client not installed (npm test installs them)');

interface Member extends ClusterMember {
  /** palisade bgp, and its BIRD's configuration directory and control socket. */
  bgp: ChildProcess;
  dir: string;
  bgpLog: string;
}

describe('e2e: pods across nodes over BGP (palisade bgp + BIRD 1.6, no encapsulation, etcd)', {
  skip,
  timeout: 300_000,
}, () => {
  let mn: MultiNodeLab;
  let etcd: TestEtcd;
  const members: Member[] = [];
  const block = (i: number) => `10.67.${i}.0/26`;
  const putNode = (m: { node: LabNode }) =>
    etcd.put(`${V3_PREFIX}/nodes/${m.node.name}`, v3('Node', m.node.name, { bgp: { ipv4Address: `${m.node.ip}/24` } }));
  const putBlock = (i: number, node: string) => {
    etcd.put(
      `/calico/ipam/v2/assignment/ipv4/block/10.67.${i}.0-26`,
      JSON.stringify({
        cidr: block(i),
        affinity: `host:${node}`,
        allocations: [],
        unallocated: [],
        attributes: [],
        deleted: false,
      }),
    );
    etcd.put(
      `/calico/ipam/v2/host/${node}/ipv4/block/10.67.${i}.0-26`,
      JSON.stringify({ state: 'confirmed', deleted: false }),
    );
  };
  const delBlock = (i: number, node: string) => {
    etcd.del(`/calico/ipam/v2/assignment/ipv4/block/10.67.${i}.0-26`);
    etcd.del(`/calico/ipam/v2/host/${node}/ipv4/block/10.67.${i}.0-26`);
  };
  const until = (f: () => boolean, ms = 20_000) => (members[0] as Member).node.lab.until(f, ms, 100);
  const birdc = (m: Member, ...args: string[]) =>
    spawnSync('ip', ['netns', 'exec', m.node.lab.host, 'birdc', '-s', join(m.dir, 'bird.ctl'), ...args], {
      encoding: 'utf8',
    }).stdout ?? '';
  const birdPid = (m: Member) =>
    spawnSync('pgrep', ['-f', `bird -R -s ${join(m.dir, 'bird.ctl')}`], { encoding: 'utf8' }).stdout.trim();

  async function join_(name: string, ip: string, app: string): Promise<Member> {
    const node = mn.addNode(name, ip);
    const index = members.length + 1;
    const pod = node.lab.addWorkload(app, `10.67.${index}.10`, 1);
    await node.lab.listen(pod, [8080, 5432]);
    const dir = mkdtempSync(join(tmpdir(), `palisade-bgp-${name}-`));
    const m = { node, index, pod, dir, log: '', bgpLog: '' } as Member;
    putNode(m);
    putBlock(index, name);
    putWorkload(etcd, m, pod, app);
    const env = {
      ...cleanEnv,
      FELIX_DATASTORETYPE: 'etcdv3',
      FELIX_ETCDENDPOINTS: etcd.endpoint,
      FELIX_ROUTEREFRESHINTERVAL: '5',
    };
    m.agent = node.lab.spawnInHost([process.execPath, BIN, 'agent', '--hostname', name], env);
    m.agent.stderr?.on('data', (d: Buffer) => (m.log += d.toString()));
    m.bgp = node.lab.spawnInHost(
      [process.execPath, BIN, 'bgp', '--hostname', name, '--config-dir', dir, '--socket', join(dir, 'bird.ctl')],
      env,
    );
    m.bgp.stderr?.on('data', (d: Buffer) => (m.bgpLog += d.toString()));
    members.push(m);
    assert.ok(
      (await node.lab.until(() => /"status":"up"/.test(m.log), 20_000)) >= 0,
      `${name}'s agent never programmed: ${m.log.slice(-3000)}`,
    );
    return m;
  }

  before(async () => {
    mn = new MultiNodeLab();
    etcd = new TestEtcd(undefined, mn.underlay, '10.99.0.1');
    await etcd.start();
    putAllowProfile(etcd);
    etcd.put(
      `${V3_PREFIX}/ippools/pool1`,
      v3('IPPool', 'pool1', { cidr: '10.67.0.0/16', vxlanMode: 'Never', ipipMode: 'Never', natOutgoing: false }),
    );
    etcd.put(
      `${V3_PREFIX}/bgpconfigurations/default`,
      v3('BGPConfiguration', 'default', { asNumber: 64512, nodeToNodeMeshEnabled: true, logSeverityScreen: 'Info' }),
    );
    await join_('node1', '10.99.0.11', 'api');
    await join_('node2', '10.99.0.12', 'db');
  });
  after(async () => {
    for (const m of members) m.bgp?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const m of members) {
      m.agent?.kill('SIGTERM');
      // Whatever happened to palisade bgp, its BIRD must not outlive the test.
      spawnSync('pkill', ['-9', '-f', m.dir]);
      rmSync(m.dir, { recursive: true, force: true });
    }
    await etcd?.destroy();
    mn?.destroy();
  });

  const [n1, n2, n3] = [0, 1, 2].map((i) => () => members[i] as Member);

  it("the mesh comes up; each node learns the other's block from BIRD (proto bird) and pods reach each other", async () => {
    const learned = () =>
      /via 10\.99\.0\.12 dev eth1 proto bird/.test(routeTo(n1(), block(2))) &&
      /via 10\.99\.0\.11 dev eth1 proto bird/.test(routeTo(n2(), block(1)));
    const ms = await until(learned, 30_000);
    console.error(`# BGP: both agents programmed -> each node has the other's block from BIRD: ${ms} ms`);
    assert.ok(
      ms >= 0,
      `routes never learned: ${routeTo(n1(), block(2))} / ${birdc(n1(), 'show', 'protocols')}\n${n1().bgpLog.slice(-3000)}`,
    );
    assert.match(birdc(n1(), 'show', 'protocols'), /Mesh_10_99_0_12\s+BGP\s+master\s+up\s+.*Established/);
    // Each node's own block is a blackhole from BIRD's static protocol, as on calico-node.
    assert.match(routeTo(n1(), block(1)), /blackhole 10\.67\.1\.0\/26 proto bird/);
    for (const [a, b] of [
      [n1(), n2()],
      [n2(), n1()],
    ] as const)
      assert.ok((await until(() => tcp(a, b))) >= 0, `${a.node.name} -> ${b.node.name}`);
  });

  it("the agents leave BIRD's routes alone across their route refreshes", async () => {
    await new Promise((r) => setTimeout(r, 6000));
    assert.match(routeTo(n1(), block(2)), /proto bird/);
    assert.equal(tcp(n1(), n2()), true);
  });

  it("a policy on node2 admits node1's pod only on 5432 (remote pod in the rule's IP set)", async () => {
    etcd.put(
      `${V3_PREFIX}/networkpolicies/e2e/db`,
      v3(
        'NetworkPolicy',
        'db',
        {
          selector: "app == 'db'",
          ingress: [
            { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [5432] } },
          ],
        },
        { namespace: 'e2e' },
      ),
    );
    assert.ok((await until(() => !tcp(n1(), n2(), 8080, 300))) >= 0, 'the policy never reached node2');
    assert.equal(tcp(n1(), n2(), 5432), true);
    etcd.del(`${V3_PREFIX}/networkpolicies/e2e/db`);
    assert.ok((await until(() => tcp(n1(), n2(), 8080))) >= 0, 'the deletion never reached node2');
  });

  it('a new pod on node2 is reachable from node1 soon after its endpoint is written (measured)', async () => {
    const ms = await newPodReachableMs(etcd, n1(), n2(), '10.67.2.11');
    console.error(`# BGP: endpoint written on node2 -> first packet from node1's pod: ${ms} ms`);
  });

  it('a new node joins: the mesh grows to it and its pods are reachable', async () => {
    const m3 = await join_('node3', '10.99.0.13', 'other');
    assert.ok(
      (await until(
        () => /proto bird/.test(routeTo(n1(), block(3))) && /proto bird/.test(routeTo(m3, block(1))),
        30_000,
      )) >= 0,
      `node3 never meshed: ${birdc(m3, 'show', 'protocols')}\n${m3.bgpLog.slice(-2000)}`,
    );
    for (const [a, b] of [
      [n1(), m3],
      [m3, n2()],
    ] as const)
      assert.ok((await until(() => tcp(a, b))) >= 0, `${a.node.name} -> ${b.node.name}`);
  });

  it('BIRD killed on node2 is restarted by palisade bgp, and its routes come back', async () => {
    const m2 = n2();
    const pid = birdPid(m2);
    assert.ok(pid, 'no BIRD running on node2');
    spawnSync('kill', ['-9', pid]);
    assert.ok(
      (await until(() => birdPid(m2) !== '' && birdPid(m2) !== pid, 15_000)) >= 0,
      `BIRD was not restarted: ${m2.bgpLog.slice(-2000)}`,
    );
    assert.match(m2.bgpLog, /BIRD exited; restarting it/);
    const back = () =>
      /Established/.test(birdc(n1(), 'show', 'protocols', 'Mesh_10_99_0_12')) &&
      /proto bird/.test(routeTo(n1(), block(2))) &&
      /proto bird/.test(routeTo(m2, block(1)));
    assert.ok(
      (await until(back, 40_000)) >= 0,
      `routes did not come back: ${routeTo(n1(), block(2))} ${birdc(n1(), 'show', 'protocols')}`,
    );
    assert.ok((await until(() => tcp(n1(), m2) && tcp(m2, n1()))) >= 0);
  });

  it('a node removed (Node and block deleted) leaves the mesh and its routes go', async () => {
    const m3 = n3();
    etcd.del(`${V3_PREFIX}/nodes/node3`);
    delBlock(3, 'node3');
    assert.ok(
      (await until(
        () => routeTo(n1(), block(3)) === '' && !/Mesh_10_99_0_13/.test(birdc(n1(), 'show', 'protocols')),
        30_000,
      )) >= 0,
      `${routeTo(n1(), block(3))} / ${birdc(n1(), 'show', 'protocols')}`,
    );
    assert.equal(tcp(n1(), m3, 8080, 300), false);
  });

  it('the underlay link cut and restored: traffic stops, then flows again', async () => {
    const m2 = n2();
    mn.setLink(m2.node, false);
    assert.ok((await until(() => !tcp(n1(), m2, 8080, 300))) >= 0);
    mn.setLink(m2.node, true);
    assert.ok(
      (await until(() => tcp(n1(), m2) && tcp(m2, n1()), 40_000)) >= 0,
      `no traffic after the link came back: ${routeTo(n1(), block(2))}`,
    );
  });
});
