// Pod networking across nodes with VXLAN: three "nodes" (network namespaces joined by an
// underlay that bridges two subnets and routes between them), each with a palisade agent
// on one etcd, each with a pod. Real packets: pod to pod across nodes, a policy enforced
// across nodes (a remote pod's IP-set membership), CrossSubnet (direct routes within the
// subnet, the tunnel across), a node removed (its routes go) and back, the underlay link
// cut and restored. Also measured: a new pod's endpoint written on one node to the first
// packet reaching it from another.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { etcdAvailable, TestEtcd } from '../helpers/etcd.js';
import { type LabNode, MultiNodeLab } from '../helpers/multinode.js';
import {
  type Member,
  newPodReachableMs,
  putAllowProfile,
  putWorkload,
  routeTo,
  startAgents,
  tcp,
  THREE_NODES,
  V3_PREFIX,
  v3,
  vxlanNodeBlock,
} from '../helpers/multinode-cluster.js';
import { ROOT_SKIP } from '../helpers/netns.js';

const skip = ROOT_SKIP || (etcdAvailable() ? false : 'etcd-server/etcd-client not installed (npm test installs them)');

// The overlay does not depend on the rules backend, but the policy test does: both modes.
const MODES: Array<[string, NodeJS.ProcessEnv]> = [
  ['nftables', { FELIX_NFTABLESMODE: 'Enabled' }],
  ['iptables-legacy', { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'legacy' }],
];

for (const [mode, modeEnv] of MODES)
  describe(`e2e: pods across three nodes over VXLAN (etcd, ${mode})`, { skip, timeout: 240_000 }, () => {
    let mn: MultiNodeLab;
    let etcd: TestEtcd;
    const members: Member[] = [];
    const pool = (vxlanMode: string) =>
      etcd.put(
        `${V3_PREFIX}/ippools/pool1`,
        v3('IPPool', 'pool1', { cidr: '10.66.0.0/16', vxlanMode, ipipMode: 'Never', natOutgoing: false }),
      );
    const putNode = (m: { node: LabNode; index: number }) =>
      etcd.put(
        `${V3_PREFIX}/nodes/${m.node.name}`,
        v3('Node', m.node.name, {
          bgp: { ipv4Address: `${m.node.ip}/24` },
          ipv4VXLANTunnelAddr: `10.66.${m.index}.1`,
        }),
      );
    const putBlock = (index: number, node: string) =>
      etcd.put(
        `/calico/ipam/v2/assignment/ipv4/block/10.66.${index}.0-26`,
        JSON.stringify(vxlanNodeBlock(`10.66.${index}.0/26`, node)),
      );
    const until = (f: () => boolean, ms = 15_000) => (members[0] as Member).node.lab.until(f, ms, 100);

    before(async () => {
      mn = new MultiNodeLab();
      etcd = new TestEtcd(undefined, mn.underlay, '10.99.0.1');
      await etcd.start();
      putAllowProfile(etcd);
      pool('Always');
      for (const [i, [name, ip, app]] of THREE_NODES.entries()) {
        const node = mn.addNode(name, ip);
        const index = i + 1;
        const pod = node.lab.addWorkload(app, `10.66.${index}.10`, 1);
        await node.lab.listen(pod, [8080, 5432]);
        const m = { node, index, pod } as Member;
        putNode(m);
        putBlock(index, name);
        putWorkload(etcd, m, pod, app);
        members.push(m);
      }
      await startAgents(members, { ...modeEnv, FELIX_DATASTORETYPE: 'etcdv3', FELIX_ETCDENDPOINTS: etcd.endpoint });
    });
    after(async () => {
      for (const m of members) m.agent?.kill('SIGTERM');
      await etcd?.destroy();
      mn?.destroy();
    });

    const [n1, n2, n3] = [0, 1, 2].map((i) => () => members[i] as Member);

    it('VXLAN Always: the device, the tunnel address, and pods reach each other across nodes and subnets', async () => {
      const m1 = n1();
      const hasDevice = () =>
        spawnSync('ip', ['netns', 'exec', m1.node.lab.host, 'ip', 'link', 'show', 'vxlan.calico']).status === 0;
      assert.ok((await until(hasDevice)) >= 0, `no vxlan.calico on node1: ${m1.log.slice(-4000)}`);
      assert.match(
        m1.node.lab.sh(m1.node.lab.host, 'ip', ['-d', 'link', 'show', 'vxlan.calico']),
        /vxlan id 4096 .*dstport 4789/,
      );
      assert.match(m1.node.lab.sh(m1.node.lab.host, 'ip', ['addr', 'show', 'vxlan.calico']), /inet 10\.66\.1\.1\/32/);
      for (const [a, b] of [
        [n1(), n2()],
        [n2(), n1()],
        [n1(), n3()],
        [n3(), n2()],
      ] as const) {
        assert.ok(
          (await until(() => tcp(a, b))) >= 0,
          `${a.node.name} -> ${b.node.name}: ${routeTo(a, `10.66.${b.index}.0/26`)}\n${a.log.slice(-2000)}`,
        );
      }
      // Felix's route MTU, the device's: the host's (eth*, 1500) less VXLAN's 50 (D36).
      assert.match(routeTo(m1, '10.66.2.0/26'), /via 10\.66\.2\.1 dev vxlan\.calico onlink.* mtu 1450/);
      assert.equal(readFileSync(m1.node.lab.mtuFile(), 'utf8'), '1450', "the pods' MTU for the CNI plugin");
      assert.match(routeTo(m1, '10.66.1.0/26'), /blackhole/);
    });

    it("host traffic sent down vxlan.calico from another local address leaves from the tunnel's own (Felix's tunnel-source MASQ)", async () => {
      const [m1, m2] = [n1(), n2()];
      await m2.node.lab.peerServer(m2.pod, 9090);
      // Bound to node1's underlay address, as a socket bound to the wrong address (or a
      // Service's DNAT) leaves it: the pod sees node1's VXLAN tunnel address instead.
      let seen = '';
      await until(() => (seen = m1.node.lab.askPeer('host', m2.pod.ip, 9090, m1.node.ip)) !== '');
      assert.equal(seen, '10.66.1.1', `node1's host as node2's pod saw it: ${m1.log.slice(-2000)}`);
      // Unbound, the kernel picks the tunnel's address itself and nothing is rewritten.
      assert.equal(m1.node.lab.askPeer('host', m2.pod.ip, 9090), '10.66.1.1');
      // A pod's own traffic is not local to the host: never caught by the rule.
      assert.equal(m1.node.lab.askPeer(m1.pod, m2.pod.ip, 9090), m1.pod.ip);
    });

    it("VXLAN to a node is taken only from other nodes' VTEPs: from any other host it is dropped on input (all-vxlan-net)", async () => {
      const m1 = n1();
      const mac = (
        JSON.parse(m1.node.lab.sh(m1.node.lab.host, 'ip', ['-j', 'link', 'show', 'vxlan.calico'])) as Array<{
          address: string;
        }>
      )[0]?.address as string;
      const rx = () =>
        (
          JSON.parse(m1.node.lab.sh(m1.node.lab.host, 'ip', ['-s', '-j', 'link', 'show', 'vxlan.calico'])) as Array<{
            stats64: { rx: { packets: number } };
          }>
        )[0]?.stats64.rx.packets as number;
      // A VXLAN frame (VNI 4096) carrying an IPv4 header for node1's pod, sent from `ns`.
      const send = (ns: string) => {
        const script = `const d=require('dgram').createSocket('udp4');const m=Buffer.from(process.argv[1],'hex');d.send(m,4789,'${m1.node.ip}',()=>d.close());`;
        const inner = `${mac.replace(/:/g, '')}66aabbccddee08004500001c00000000400100000a6300010a42010a0800f7ff00000000`;
        spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script, `0800000000100000${inner}`], {
          stdio: 'ignore',
        });
      };
      const before = rx();
      for (let i = 0; i < 5; i++) send(mn.underlay);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(rx(), before, 'VXLAN from the underlay router (not a node) reached vxlan.calico');
      for (let i = 0; i < 5; i++) send(n2().node.lab.host);
      assert.ok(
        (await until(() => rx() >= before + 5, 3_000)) >= 0,
        `VXLAN from node2 was not taken: ${rx() - before} of 5`,
      );
    });

    it("a policy on node2 admits node1's pod and refuses node3's (remote pods in the rule's IP set)", async () => {
      etcd.put(
        `${V3_PREFIX}/networkpolicies/e2e/db`,
        v3(
          'NetworkPolicy',
          'db',
          {
            selector: "app == 'db'",
            ingress: [
              {
                action: 'Allow',
                protocol: 'TCP',
                source: { selector: "app == 'api'" },
                destination: { ports: [5432] },
              },
            ],
          },
          { namespace: 'e2e' },
        ),
      );
      assert.ok((await until(() => !tcp(n3(), n2(), 5432, 300))) >= 0, 'the policy never reached node2');
      assert.equal(tcp(n1(), n2(), 5432), true, "node1's api pod is in the rule's set");
      assert.equal(tcp(n1(), n2(), 8080, 300), false, 'only 5432');
      etcd.del(`${V3_PREFIX}/networkpolicies/e2e/db`);
      assert.ok((await until(() => tcp(n3(), n2(), 5432))) >= 0, 'the deletion never reached node2');
    });

    it('a new pod on node2 is reachable from node1 soon after its endpoint is written (measured)', async () => {
      const ms = await newPodReachableMs(etcd, n1(), n2(), '10.66.2.11');
      console.error(`# VXLAN: endpoint written on node2 -> first packet from node1's pod: ${ms} ms`);
    });

    it('CrossSubnet: direct routes within the subnet, the tunnel across it; traffic flows both ways', async () => {
      pool('CrossSubnet');
      assert.ok(
        (await until(() => /via 10\.99\.0\.12 dev eth1/.test(routeTo(n1(), '10.66.2.0/26')))) >= 0,
        routeTo(n1(), '10.66.2.0/26'),
      );
      assert.match(routeTo(n1(), '10.66.3.0/26'), /via 10\.66\.3\.1 dev vxlan\.calico onlink/);
      for (const [a, b] of [
        [n1(), n2()],
        [n2(), n1()],
        [n1(), n3()],
        [n3(), n1()],
      ] as const)
        assert.ok((await until(() => tcp(a, b))) >= 0, `${a.node.name} -> ${b.node.name}`);
      pool('Always');
      assert.ok((await until(() => /vxlan\.calico/.test(routeTo(n1(), '10.66.2.0/26')))) >= 0);
    });

    it('a node removed takes its routes with it; back, they return', async () => {
      const m3 = n3();
      etcd.del(`${V3_PREFIX}/nodes/node3`);
      etcd.del('/calico/ipam/v2/assignment/ipv4/block/10.66.3.0-26');
      assert.ok((await until(() => routeTo(n1(), '10.66.3.0/26') === '')) >= 0, routeTo(n1(), '10.66.3.0/26'));
      assert.equal(tcp(n1(), m3, 8080, 300), false);
      putNode(m3);
      putBlock(3, 'node3');
      assert.ok((await until(() => tcp(n1(), m3))) >= 0, 'node3 never came back');
    });

    it('the underlay link cut and restored: traffic stops, then flows again', async () => {
      const m2 = n2();
      mn.setLink(m2.node, false);
      assert.ok((await until(() => !tcp(n1(), m2, 8080, 300))) >= 0);
      mn.setLink(m2.node, true);
      assert.ok(
        (await until(() => tcp(n1(), m2) && tcp(m2, n1()), 20_000)) >= 0,
        `no traffic after the link came back: ${routeTo(n1(), '10.66.2.0/26')}`,
      );
    });
  });
