// Runs inside the test VM (test/e2e/multinode-wireguard.test.ts boots it): the dual-stack
// multi-node lab - three node namespaces on an underlay routing between two subnets, a pod
// per node with an IPv4 and an IPv6 address, VXLAN Always on both families - on the
// datastore and in the rules mode PALISADE_WG_LAB names ("etcd nftables" by default,
// "kubernetes iptables-legacy": a real kube-apiserver with Calico's CRDs), with palisade
// agents, WireGuard on for node1 and node2 (both families) and off for node3. Each agent
// publishes its keys on its Node; pod traffic between node1 and node2 is encrypted on both
// families (the underlay sees WireGuard's UDP only, no pod address, no VXLAN); traffic to
// keyless node3 goes in clear as Felix sends it, or nowhere with WireguardRequired; a device
// deleted under an agent comes back with a new key that the others learn; a restarted agent
// keeps its keys. Not a *.test.js: it needs the VM's kernel.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { vethNameForWorkload } from '../../src/datastore/kdd/conversion/names.js';
import { type DualStackCluster, EtcdDualStack, KddDualStack } from '../helpers/dualstack-cluster.js';
import { type Member, startAgents, tcp, THREE_NODES } from '../helpers/multinode-cluster.js';
import { MultiNodeLab } from '../helpers/multinode.js';
import { tempDirs } from '../helpers/temp.js';

const SLOW = 240_000; // software emulation, on a machine that may be running other tests: minutes, not seconds
const [DATASTORE = 'etcd', MODE = 'nftables'] = (process.env.PALISADE_WG_LAB ?? '').split(' ').filter(Boolean);
const MODE_ENV: Record<string, NodeJS.ProcessEnv> = {
  nftables: { FELIX_NFTABLESMODE: 'Enabled' },
  'iptables-legacy': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'legacy' },
  'iptables-nft': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'nft' },
};
const tempDir = tempDirs('wglab');

describe(`WireGuard across three dual-stack nodes (in the VM; ${DATASTORE}, ${MODE})`, { timeout: 1_200_000 }, () => {
  let mn: MultiNodeLab;
  const cluster: DualStackCluster = DATASTORE === 'kubernetes' ? new KddDualStack(tempDir()) : new EtcdDualStack();
  const members: Member[] = [];
  const [n1, n2, n3] = [0, 1, 2].map((i) => () => members[i] as Member);
  const until = (f: () => boolean, ms = SLOW) => n1().node.lab.until(f, ms, 250);
  const untilAsync = async (f: () => Promise<boolean>, ms = SLOW) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 250)))
      if (await f()) return true;
    return false;
  };
  const keyOf = (name: string, family: 4 | 6 = 4) => cluster.wireguardKey(name, family);
  const env = (m: Member, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
    const on = m.node.name === 'node3' ? 'false' : 'true';
    return { FELIX_WIREGUARDENABLED: on, FELIX_WIREGUARDENABLEDV6: on, ...extra };
  };
  const shared = () => ({ ...MODE_ENV[MODE], FELIX_IPV6SUPPORT: 'true' });
  const start = async (ms: Member[], extra: NodeJS.ProcessEnv = {}) =>
    startAgents(ms, shared(), async (m) => ({ ...(await cluster.agentEnv(m)), ...env(m, extra) }), SLOW);
  /** What the underlay carries while `f` runs: tcpdump's lines. */
  const capture = async (f: () => Promise<void> | void): Promise<string[]> => {
    const dump = spawn(
      'ip',
      ['netns', 'exec', mn.underlay, 'tcpdump', '-i', 'any', '-n', '-l', '-q', 'ip', 'or', 'ip6'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    dump.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((r) => setTimeout(r, 3000));
    await f();
    await new Promise((r) => setTimeout(r, 1000));
    dump.kill('SIGINT');
    await new Promise((r) => dump.once('close', r));
    return out.split('\n').filter(Boolean);
  };
  const host = (m: Member, ...args: string[]) => m.node.lab.sh(m.node.lab.host, 'ip', args);

  before(async () => {
    mn = new MultiNodeLab();
    await cluster.start(mn);
    await cluster.pools('Always');
    for (const [i, [name, ip, app]] of THREE_NODES.entries()) {
      const node = mn.addNode(name, ip);
      const index = i + 1;
      const pod = node.lab.addWorkload(app, `10.68.${index}.10`, 1, {
        ip6: `fd68:0:0:${index}::a`,
        iface: vethNameForWorkload('e2e', app),
      });
      await node.lab.listen(pod, [8080]);
      const m = { node, index, pod, log: '' } as Member;
      await cluster.member(m, app);
      members.push(m);
    }
    // node1 as an older palisade left it: IPv6 WireGuard in its own second table (Felix
    // programs both families in the first, and so does palisade now).
    host(n1(), '-6', 'rule', 'add', 'priority', '99', 'not', 'fwmark', '0x200000/0x200000', 'table', '2');
    host(n1(), '-6', 'route', 'add', 'throw', 'fd68:0:0:9::/122', 'table', '2', 'proto', 'boot');
    await start(members);
  });
  after(async () => {
    for (const m of members) m.agent?.kill('SIGTERM');
    await cluster.stop();
    mn?.destroy();
  });

  it('node1 and node2 publish both keys on their Nodes, node3 none; pods reach each other on both families', async () => {
    const keyed = async () =>
      !!((await keyOf('node1')) && (await keyOf('node2')) && (await keyOf('node1', 6)) && (await keyOf('node2', 6)));
    assert.ok(await untilAsync(keyed), `no keys: ${n1().log.slice(-3000)}`);
    assert.notEqual(await keyOf('node1'), await keyOf('node1', 6), 'one key per device');
    assert.deepEqual([await keyOf('node3'), await keyOf('node3', 6)], ['', '']);
    for (const family of [4, 6] as const)
      for (const [a, b] of [
        [n1(), n2()],
        [n2(), n1()],
        [n1(), n3()],
      ] as const)
        assert.ok(
          (await until(() => tcp(a, b, 8080, 2000, family))) >= 0,
          `IPv${family} ${a.node.name} -> ${b.node.name}\n${a.log.slice(-3000)}`,
        );
  });

  it("node1 -> node2 is encrypted on both families: the underlay carries WireGuard's UDP between the nodes only; node1 -> node3 is VXLAN in clear (no key), as Felix", async () => {
    const lines = await capture(() => {
      for (const family of [4, 6] as const)
        for (let i = 0; i < 3; i++) assert.ok(tcp(n1(), n2(), 8080, 3000, family), `IPv${family}`);
    });
    const wg4 = lines.filter((l) => /10\.99\.0\.11\.51820 > 10\.99\.0\.12\.51820: UDP/.test(l));
    const wg6 = lines.filter((l) => /fd99::11\.51821 > fd99::12\.51821: UDP/.test(l));
    assert.ok(wg4.length >= 3, `no IPv4 WireGuard packets seen:\n${lines.join('\n')}`);
    assert.ok(wg6.length >= 3, `no IPv6 WireGuard packets (wg-v6.cali) seen:\n${lines.join('\n')}`);
    assert.deepEqual(
      lines.filter((l) => /10\.68\.|fd68:|\.4789\b|\.8080\b/.test(l)),
      [],
      'a pod address, VXLAN or the pod port on the wire',
    );
    for (const family of [4, 6] as const) {
      const clear = await capture(() => {
        assert.ok(tcp(n1(), n3(), 8080, 3000, family));
      });
      const vxlan = family === 4 ? /10\.99\.0\.11\.\d+ > 10\.99\.1\.13\.4789/ : /fd99::11\.\d+ > fd99:1::13\.4789/;
      assert.ok(
        clear.some((l) => vxlan.test(l)),
        `node3's IPv${family} traffic not VXLAN:\n${clear.join('\n')}`,
      );
    }
    // Felix's shape on both families: the device, its table (IPv6 in IPv4's index, as Felix
    // v3.31.7 programs it), the rule; what an older palisade left in a second table swept.
    assert.match(host(n1(), '-d', 'link', 'show', 'wg-v6.cali'), /mtu 1420 .*wireguard/s);
    const rules6 = host(n1(), '-6', 'rule', 'show');
    assert.match(rules6, /^99:\s+not from all fwmark 0x200000\/0x200000 lookup 1$/m);
    assert.doesNotMatch(rules6, /lookup 2/);
    assert.match(host(n1(), '-6', 'route', 'show', 'table', '1'), /fd68:0:0:2::\/122 dev wg-v6\.cali/);
    assert.equal(host(n1(), '-6', 'route', 'show', 'table', '2').trim(), '');
  });

  it('a device deleted under node2 comes back with a new key; node1 learns it and traffic flows again', async () => {
    const old = await keyOf('node2');
    n2().node.lab.sh(n2().node.lab.host, 'ip', ['link', 'del', 'wireguard.cali']);
    assert.ok(
      await untilAsync(async () => !!(await keyOf('node2')) && (await keyOf('node2')) !== old),
      `no new key: ${n2().log.slice(-3000)}`,
    );
    assert.ok(
      (await until(() => tcp(n1(), n2(), 8080, 2000))) >= 0,
      `node1 -> node2 after rotation\n${n1().log.slice(-3000)}`,
    );
  });

  it('a restarted agent keeps its keys; with WireguardRequired, keyless node3 is unreachable on both families while node2 stays reachable', async () => {
    const keys = [await keyOf('node1'), await keyOf('node1', 6)];
    const m = n1();
    m.agent.kill('SIGTERM');
    await new Promise((r) => m.agent.once('exit', r));
    await start([m], { FELIX_WIREGUARDREQUIRED: 'true' });
    assert.deepEqual([await keyOf('node1'), await keyOf('node1', 6)], keys, 'a key changed across a restart');
    for (const family of [4, 6] as const) {
      assert.ok(
        (await until(() => tcp(n1(), n2(), 8080, 2000, family))) >= 0,
        `IPv${family} node1 -> node2\n${m.log.slice(-3000)}`,
      );
      assert.ok(
        (await until(() => !tcp(n1(), n3(), 8080, 1500, family))) >= 0,
        `IPv${family} node1 -> node3 still reachable in clear`,
      );
    }
    assert.match(host(m, 'route', 'show', 'table', '1'), /unreachable 10\.68\.3\.0\/26/);
    assert.match(host(m, '-6', 'route', 'show', 'table', '1'), /unreachable fd68:0:0:3::\/122/);
  });
});
