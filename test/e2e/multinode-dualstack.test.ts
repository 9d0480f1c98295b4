// Dual-stack pods across nodes: three "nodes" (network namespaces on a dual-stack underlay
// of two subnets), each with a palisade agent and a pod with an IPv4 and an IPv6 address,
// on etcd (both rules modes) and on the Kubernetes datastore (a real kube-apiserver with
// Calico's CRDs). Real packets, both families: over VXLAN (vxlan.calico and
// vxlan-v6.calico, Felix's devices, VTEPs and routes), a policy enforced on both families
// across nodes with neighbour discovery still working under it, NAT outgoing, CrossSubnet
// (direct routes within the subnet), and unencapsulated pools whose routes palisade
// programs (ProgramClusterRoutes Enabled) within the subnet, the node beyond it reported.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { vethNameForWorkload } from '../../src/datastore/kdd/conversion/names.js';
import { block4, block6, type DualStackCluster, EtcdDualStack, KddDualStack } from '../helpers/dualstack-cluster.js';
import { etcdAvailable } from '../helpers/etcd.js';
import { MultiNodeLab } from '../helpers/multinode.js';
import { type Member, routeTo, startAgents, tcp, THREE_NODES } from '../helpers/multinode-cluster.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = fileURLToPath(new URL('../../src/demo/tcp-probe.js', import.meta.url));
const skip = ROOT_SKIP || (etcdAvailable() ? false : 'etcd-server/etcd-client not installed (npm test installs them)');

// The overlay does not depend on the rules backend or the datastore, the policy does: etcd
// in two modes, the Kubernetes datastore in nftables.
const tempDir = tempDirs('dualstack');
const SUITES: Array<[string, () => DualStackCluster, string, NodeJS.ProcessEnv]> = [
  ['etcd', () => new EtcdDualStack(), 'nftables', { FELIX_NFTABLESMODE: 'Enabled' }],
  [
    'etcd',
    () => new EtcdDualStack(),
    'iptables-legacy',
    { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'legacy' },
  ],
  ['Kubernetes API', () => new KddDualStack(tempDir()), 'nftables', { FELIX_NFTABLESMODE: 'Enabled' }],
];

for (const [datastore, make, mode, modeEnv] of SUITES)
  describe(`e2e: dual-stack pods across three nodes (${datastore}, ${mode})`, { skip, timeout: 300_000 }, () => {
    let mn: MultiNodeLab;
    const cluster = make();
    const members: Member[] = [];
    const pools = (vxlanMode: string, natOutgoing = false) => cluster.pools(vxlanMode, natOutgoing);
    const until = (f: () => boolean, ms = 15_000) => (members[0] as Member).node.lab.until(f, ms, 100);
    const [n1, n2, n3] = [0, 1, 2].map((i) => () => members[i] as Member);
    const host = (m: Member, ...args: string[]) => m.node.lab.sh(m.node.lab.host, 'ip', args);
    /** Every pair reaches each other over this family; the first that does not says why. */
    const allPairs = async (family: 4 | 6, pairs: Array<[Member, Member]>) => {
      for (const [a, b] of pairs) {
        const dst = family === 6 ? block6(b.index) : block4(b.index);
        assert.ok(
          (await until(() => tcp(a, b, 8080, 700, family))) >= 0,
          `IPv${family} ${a.node.name} -> ${b.node.name}: ${routeTo(a, dst)}\n${a.log.slice(-3000)}`,
        );
      }
    };
    const crossing = (): Array<[Member, Member]> => [
      [n1(), n2()],
      [n2(), n1()],
      [n1(), n3()],
      [n3(), n2()],
    ];

    before(async () => {
      mn = new MultiNodeLab();
      await cluster.start(mn);
      await pools('Always');
      for (const [i, [name, ip, app]] of THREE_NODES.entries()) {
        const node = mn.addNode(name, ip);
        const index = i + 1;
        const pod = node.lab.addWorkload(app, `10.68.${index}.10`, 1, {
          ip6: `fd68:0:0:${index}::a`,
          iface: vethNameForWorkload('e2e', app),
        });
        await node.lab.listen(pod, [8080, 5432]);
        const m = { node, index, pod, log: '' } as Member;
        await cluster.member(m, app);
        members.push(m);
      }
      // node1 as an older palisade left it: its blackholes with DeviceRouteProtocol (boot).
      for (const b of [block4(1), block6(1)])
        n1().node.lab.sh(n1().node.lab.host, 'ip', ['route', 'add', 'blackhole', b, 'proto', 'boot']);
      await startAgents(
        members,
        { ...modeEnv, FELIX_IPV6SUPPORT: 'true', FELIX_PROGRAMCLUSTERROUTES: 'Enabled' },
        (m) => cluster.agentEnv(m),
        30_000,
      );
    });
    after(async () => {
      for (const m of members) m.agent?.kill('SIGTERM');
      await cluster.stop();
      mn?.destroy();
    });

    it('VXLAN both families: vxlan-v6.calico as Felix makes it, and pods reach each other over IPv4 and IPv6', async () => {
      const m1 = n1();
      const hasV6Device = () =>
        spawnSync('ip', ['netns', 'exec', m1.node.lab.host, 'ip', 'link', 'show', 'vxlan-v6.calico']).status === 0;
      assert.ok((await until(hasV6Device)) >= 0, `no vxlan-v6.calico on node1: ${m1.log.slice(-4000)}`);
      const link = JSON.parse(host(m1, '-d', '-j', 'link', 'show', 'vxlan-v6.calico'))[0] as {
        mtu: number;
        address: string;
        linkinfo: { info_data: { id: number; port: number; local6?: string; learning: boolean } };
      };
      assert.equal(link.linkinfo.info_data.id, 4096);
      assert.equal(link.linkinfo.info_data.port, 4789);
      assert.equal(link.linkinfo.info_data.local6, 'fd99::11');
      assert.equal(link.linkinfo.info_data.learning, false);
      assert.equal(link.mtu, 1500 - 70, "the underlay's MTU less Felix's 70 for IPv6");
      assert.notEqual(
        link.address,
        (JSON.parse(host(m1, '-j', 'link', 'show', 'vxlan.calico'))[0] as { address: string }).address,
        'its own VTEP MAC (the name with -v6, hashed)',
      );
      assert.deepEqual(
        (
          JSON.parse(host(m1, '-6', '-j', 'addr', 'show', 'dev', 'vxlan-v6.calico'))[0] as {
            addr_info: Array<{ local: string; prefixlen: number }>;
          }
        ).addr_info.map((a) => `${a.local}/${a.prefixlen}`),
        ['fd68:0:0:1::1/128'],
        'the tunnel address, the only IPv6 address (as Felix: not even the link-local)',
      );
      await allPairs(4, crossing());
      await allPairs(6, crossing());
      assert.match(routeTo(m1, block6(2)), /via fd68:0:0:2::1 dev vxlan-v6\.calico .*onlink.* mtu 1430/);
      // The pods' MTU: the smallest of the overlays in use (IPv6 VXLAN's 1430, D36).
      assert.equal(readFileSync(m1.node.lab.mtuFile(), 'utf8'), '1430');
      // Felix's protocols: its own 80 for blackholes, DeviceRouteProtocol (boot) onto the device.
      // ... and the boot-protocol blackholes an older palisade left are swept (one route each).
      assert.match(routeTo(m1, block6(1)), /^blackhole [^\n]*proto 80[^\n]*$/);
      assert.match(routeTo(m1, block4(1)), /^blackhole [^\n]*proto 80[^\n]*$/);
      assert.doesNotMatch(routeTo(m1, block6(2)), /proto/);
      // A remote VTEP's own address straight onto the device, as Felix (it is in its node's block).
      assert.match(routeTo(m1, 'fd68:0:0:2::1/128'), /^fd68:0:0:2::1 dev vxlan-v6\.calico/);
      assert.match(routeTo(m1, '10.68.2.1/32'), /^10\.68\.2\.1 dev vxlan\.calico scope link/);
      const ndp = host(m1, '-6', 'neigh', 'show', 'dev', 'vxlan-v6.calico');
      assert.match(ndp, /fd68:0:0:2::1 lladdr \S+ PERMANENT/);
      assert.match(
        m1.node.lab.sh(m1.node.lab.host, 'bridge', ['fdb', 'show', 'dev', 'vxlan-v6.calico']),
        /dst fd99::12 .*self permanent/,
      );
    });

    it('a policy on node2 admits node1 and refuses node3 on both families; neighbour discovery works under it', async () => {
      await cluster.dbPolicy(true);
      for (const f of [4, 6] as const) {
        assert.ok((await until(() => !tcp(n3(), n2(), 5432, 300, f))) >= 0, `the policy never reached node2 (IPv${f})`);
        assert.equal(tcp(n1(), n2(), 5432, 700, f), true, `IPv${f}: node1's api pod is in the rule's set`);
        assert.equal(tcp(n1(), n2(), 8080, 300, f), false, `IPv${f}: only 5432`);
      }
      // The pod forgets its gateway's and the host its pod's link-layer address: both are
      // found again by neighbour discovery through the policy's chains.
      const pod2 = n2().pod;
      n2().node.lab.sh(pod2.ns, 'ip', ['-6', 'neigh', 'flush', 'dev', 'eth0']);
      host(n2(), '-6', 'neigh', 'flush', 'dev', pod2.iface);
      assert.equal(tcp(n1(), n2(), 5432, 2000, 6), true, 'IPv6 after the neighbour caches were flushed');
      await cluster.dbPolicy(false);
      for (const f of [4, 6] as const)
        assert.ok((await until(() => tcp(n3(), n2(), 5432, 700, f))) >= 0, `IPv${f}: the deletion never reached node2`);
    });

    it('NAT outgoing on both families: a pod reaches beyond the pools (the underlay router, no route back to pods) only masqueraded', async () => {
      const server = spawn('ip', ['netns', 'exec', mn.underlay, process.execPath, PROBE, 'listen', '9090'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      try {
        await new Promise((r) => server.stdout?.once('data', r));
        const out = (f: 4 | 6, ms = 700) => n1().node.lab.tcp(n1().pod, f === 6 ? 'fd99::1' : '10.99.0.1', 9090, ms);
        assert.equal(out(4), false, 'IPv4 without natOutgoing: the reply has no way back');
        assert.equal(out(6), false, 'IPv6 without natOutgoing');
        await pools('Always', true);
        for (const f of [4, 6] as const)
          assert.ok(
            (await until(() => out(f))) >= 0,
            `IPv${f}: natOutgoing never took effect: ${n1().log.slice(-2000)}`,
          );
        await pools('Always', false);
        for (const f of [4, 6] as const)
          assert.ok((await until(() => !out(f, 300))) >= 0, `IPv${f}: still masqueraded`);
      } finally {
        server.kill();
      }
    });

    it('CrossSubnet, both families: direct routes within the subnet, the tunnels across it', async () => {
      await pools('CrossSubnet');
      assert.ok(
        (await until(() => /via fd99::12 dev eth1/.test(routeTo(n1(), block6(2))))) >= 0,
        routeTo(n1(), block6(2)),
      );
      assert.match(routeTo(n1(), block4(2)), /via 10\.99\.0\.12 dev eth1/);
      assert.match(routeTo(n1(), block6(3)), /via fd68:0:0:3::1 dev vxlan-v6\.calico/);
      await allPairs(4, crossing());
      await allPairs(6, crossing());
    });

    it('unencapsulated pools (ProgramClusterRoutes Enabled): routes over the underlay within the subnet, no tunnels left, the node beyond reported', async () => {
      await pools('Never');
      const m1 = n1();
      const gone = (name: string) =>
        spawnSync('ip', ['netns', 'exec', m1.node.lab.host, 'ip', 'link', 'show', name]).status !== 0;
      assert.ok((await until(() => gone('vxlan-v6.calico') && gone('vxlan.calico'))) >= 0, 'the VXLAN devices stayed');
      assert.ok(
        (await until(() => /via fd99::12 dev eth1/.test(routeTo(m1, block6(2))))) >= 0,
        `${routeTo(m1, block6(2))}\n${m1.log.slice(-3000)}`,
      );
      assert.match(routeTo(m1, block4(2)), /via 10\.99\.0\.12 dev eth1 proto 80/);
      assert.match(routeTo(m1, block6(1)), /blackhole/);
      assert.match(routeTo(m1, block4(1)), /blackhole/);
      assert.equal(routeTo(m1, block6(3)), '', 'node3 is beyond the subnet: no gateway on the link');
      for (const f of [4, 6])
        assert.ok(
          (await until(() =>
            new RegExp(`unencapsulated IPv${f} routes: 2 route\\(s\\) to nodes outside eth1's subnets`).test(m1.log),
          )) >= 0,
          `node3's IPv${f} block not reported: ${m1.log.slice(-2000)}`,
        );
      await allPairs(4, [
        [n1(), n2()],
        [n2(), n1()],
      ]);
      await allPairs(6, [
        [n1(), n2()],
        [n2(), n1()],
      ]);
    });
  });
