// Runs inside the test VM (test/e2e/multinode-wireguard.test.ts boots it): the multi-node
// lab - three node namespaces on one etcd, an underlay routing between two subnets, a pod
// per node, VXLAN Always - with palisade agents, WireGuard on for node1 and node2 and off
// for node3. Each agent publishes its key on its Node; pod traffic between node1 and node2
// is encrypted (the underlay sees WireGuard's UDP only, no pod address, no VXLAN); traffic
// to keyless node3 goes in clear as Felix sends it, or nowhere with WireguardRequired; a
// device deleted under an agent comes back with a new key that the others learn; a
// restarted agent keeps its key. Not a *.test.js: it needs the VM's kernel.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { TestEtcd } from '../helpers/etcd.js';
import {
  type Member,
  putAllowProfile,
  putWorkload,
  startAgents,
  tcp,
  THREE_NODES,
  V3_PREFIX,
  v3,
  vxlanNodeBlock,
} from '../helpers/multinode-cluster.js';
import { MultiNodeLab } from '../helpers/multinode.js';

const SLOW = 240_000; // software emulation, on a machine that may be running other tests: minutes, not seconds

describe('WireGuard across three nodes (in the VM)', { timeout: 900_000 }, () => {
  let mn: MultiNodeLab;
  let etcd: TestEtcd;
  const members: Member[] = [];
  const [n1, n2, n3] = [0, 1, 2].map((i) => () => members[i] as Member);
  const until = (f: () => boolean, ms = SLOW) => n1().node.lab.until(f, ms, 250);
  const keyOf = (name: string): string => {
    const raw = etcd.get(`${V3_PREFIX}/nodes/${name}`);
    return raw
      ? ((JSON.parse(raw) as { status?: { wireguardPublicKey?: string } }).status?.wireguardPublicKey ?? '')
      : '';
  };
  const env = (m: Member, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    FELIX_WIREGUARDENABLED: m.node.name === 'node3' ? 'false' : 'true',
    ...extra,
  });
  const shared = () => ({
    FELIX_DATASTORETYPE: 'etcdv3',
    FELIX_ETCDENDPOINTS: etcd.endpoint,
    FELIX_NFTABLESMODE: 'Enabled',
  });
  /** What the underlay carries while `f` runs: tcpdump's lines. */
  const capture = async (f: () => Promise<void> | void): Promise<string[]> => {
    const dump = spawn('ip', ['netns', 'exec', mn.underlay, 'tcpdump', '-i', 'any', '-n', '-l', '-q', 'ip'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    dump.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((r) => setTimeout(r, 3000));
    await f();
    await new Promise((r) => setTimeout(r, 1000));
    dump.kill('SIGINT');
    await new Promise((r) => dump.once('close', r));
    return out.split('\n').filter(Boolean);
  };

  before(async () => {
    mn = new MultiNodeLab();
    etcd = new TestEtcd(undefined, mn.underlay, '10.99.0.1');
    await etcd.start();
    putAllowProfile(etcd);
    etcd.put(
      `${V3_PREFIX}/ippools/pool1`,
      v3('IPPool', 'pool1', { cidr: '10.66.0.0/16', vxlanMode: 'Always', ipipMode: 'Never', natOutgoing: false }),
    );
    for (const [i, [name, ip, app]] of THREE_NODES.entries()) {
      const node = mn.addNode(name, ip);
      const index = i + 1;
      const pod = node.lab.addWorkload(app, `10.66.${index}.10`, 1);
      await node.lab.listen(pod, [8080]);
      const m = { node, index, pod } as Member;
      etcd.put(
        `${V3_PREFIX}/nodes/${name}`,
        v3('Node', name, { bgp: { ipv4Address: `${ip}/24` }, ipv4VXLANTunnelAddr: `10.66.${index}.1` }),
      );
      etcd.put(
        `/calico/ipam/v2/assignment/ipv4/block/10.66.${index}.0-26`,
        JSON.stringify(vxlanNodeBlock(`10.66.${index}.0/26`, name)),
      );
      putWorkload(etcd, m, pod, app);
      members.push(m);
    }
    await startAgents(members, shared(), (m) => env(m), SLOW);
  });
  after(async () => {
    for (const m of members) m.agent?.kill('SIGTERM');
    await etcd?.destroy();
    mn?.destroy();
  });

  it('node1 and node2 publish their keys on their Nodes, node3 none; pods reach each other', async () => {
    assert.ok((await until(() => !!keyOf('node1') && !!keyOf('node2'))) >= 0, `no keys: ${n1().log.slice(-3000)}`);
    assert.equal(keyOf('node3'), '');
    for (const [a, b] of [
      [n1(), n2()],
      [n2(), n1()],
      [n1(), n3()],
    ] as const)
      assert.ok(
        (await until(() => tcp(a, b, 8080, 2000))) >= 0,
        `${a.node.name} -> ${b.node.name}\n${a.log.slice(-3000)}`,
      );
  });

  it("node1 -> node2 is encrypted: the underlay carries WireGuard's UDP between the nodes only; node1 -> node3 is VXLAN in clear (no key), as Felix", async () => {
    const lines = await capture(() => {
      for (let i = 0; i < 3; i++) assert.ok(tcp(n1(), n2(), 8080, 3000));
    });
    const wg = lines.filter((l) => /10\.99\.0\.11\.51820 > 10\.99\.0\.12\.51820: UDP/.test(l));
    assert.ok(wg.length >= 3, `no WireGuard packets seen:\n${lines.join('\n')}`);
    assert.deepEqual(
      lines.filter((l) => /10\.66\.|\.4789\b|\.8080\b/.test(l)),
      [],
      'a pod address, VXLAN or the pod port on the wire',
    );
    const clear = await capture(() => {
      assert.ok(tcp(n1(), n3(), 8080, 3000));
    });
    assert.ok(
      clear.some((l) => /10\.99\.0\.11\.\d+ > 10\.99\.1\.13\.4789/.test(l)),
      `node3's traffic not VXLAN:\n${clear.join('\n')}`,
    );
  });

  it('a device deleted under node2 comes back with a new key; node1 learns it and traffic flows again', async () => {
    const old = keyOf('node2');
    n2().node.lab.sh(n2().node.lab.host, 'ip', ['link', 'del', 'wireguard.cali']);
    assert.ok(
      (await until(() => !!keyOf('node2') && keyOf('node2') !== old)) >= 0,
      `no new key: ${n2().log.slice(-3000)}`,
    );
    assert.ok(
      (await until(() => tcp(n1(), n2(), 8080, 2000))) >= 0,
      `node1 -> node2 after rotation\n${n1().log.slice(-3000)}`,
    );
  });

  it('a restarted agent keeps its key; with WireguardRequired, keyless node3 is unreachable while node2 stays reachable', async () => {
    const key = keyOf('node1');
    const m = n1();
    m.agent.kill('SIGTERM');
    await new Promise((r) => m.agent.once('exit', r));
    await startAgents([m], shared(), () => env(m, { FELIX_WIREGUARDREQUIRED: 'true' }), SLOW);
    assert.equal(keyOf('node1'), key, 'the key changed across a restart');
    assert.ok((await until(() => tcp(n1(), n2(), 8080, 2000))) >= 0, `node1 -> node2\n${m.log.slice(-3000)}`);
    assert.ok((await until(() => !tcp(n1(), n3(), 8080, 1500))) >= 0, 'node1 -> node3 still reachable in clear');
    assert.match(m.node.lab.sh(m.node.lab.host, 'ip', ['route', 'show', 'table', '1']), /unreachable 10\.66\.3\.0\/26/);
  });
});
