// The native WireGuard client (generic netlink, native/wg) against the kernel's own
// WireGuard module, which this machine's kernel lacks: in a VM booting Debian's kernel
// (test/helpers/vm.ts), two network namespaces joined by a veth, each device created and
// configured only through palisade's addon. A thousand peers and a peer with 3,000
// allowed IPs go in several messages and read back whole; replace_peers drops the rest;
// pings cross the tunnel, and stop when one side's key changes until the other learns it;
// a missing device and a kernel without WireGuard are errors with their codes.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { generatePrivateKey, publicKeyOf } from '../../src/dataplane/wireguard/keys.js';
import { wgGet } from '../../src/native/wg.js';
import { runInVm, vmLines, vmSkipReason } from '../helpers/vm.js';
import { routeUpdate } from '../helpers/wg-fixtures.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const skip = vmSkipReason() || false;
type Result = {
  tag: string;
  ok: boolean;
  value?: Record<string, unknown>;
  error?: { code?: string; errno?: number; message?: string };
};

/** n distinct fake peers, one /32 each (10.200.x.y). */
function fakePeers(n: number) {
  return Array.from({ length: n }, (_, i) => ({
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: `198.51.100.${(i % 250) + 1}:51820`,
    allowedIps: [`10.200.${i >> 8}.${i & 255}/32`],
    persistentKeepalive: 0,
  }));
}

describe('kernel WireGuard over generic netlink (in a VM)', { skip }, () => {
  it('creates, configures and reads back devices; pings cross the tunnel; a key change cuts it until learnt', async (t) => {
    const [privA, privB, privB2] = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()];
    const [pubA, pubB, pubB2] = [publicKeyOf(privA), publicKeyOf(privB), publicKeyOf(privB2)];
    const peerB = {
      publicKey: pubB,
      endpoint: '192.0.2.2:51821',
      allowedIps: ['10.99.0.2/32'],
      persistentKeepalive: 0,
    };
    const peerA = {
      publicKey: pubA,
      endpoint: '192.0.2.1:51820',
      allowedIps: ['10.99.0.1/32'],
      persistentKeepalive: 0,
    };
    const wide = {
      publicKey: publicKeyOf(generatePrivateKey()),
      endpoint: '[2001:db8::9]:51820',
      allowedIps: Array.from({ length: 3000 }, (_, i) => `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`),
      persistentKeepalive: 25,
    };
    const dir = join(ROOT, 'build/vm');
    mkdirSync(dir, { recursive: true });
    const file = (name: string, steps: unknown) => {
      const path = join(dir, `${name}-${process.pid}.json`);
      writeFileSync(path, JSON.stringify(steps));
      t.after(() => rmSync(path, { force: true }));
      return path;
    };
    const a1 = file('wg-a1', [
      { tag: 'createA', create: 'wg0', mtu: 1420 },
      {
        tag: 'setA',
        set: 'wg0',
        change: { privateKey: privA, listenPort: 51820, fwmark: 0x100000, peers: [peerB, wide, ...fakePeers(1000)] },
      },
      { tag: 'getA', get: 'wg0', summary: true },
      { tag: 'trim', set: 'wg0', change: { replacePeers: true, peers: [peerB] } },
      { tag: 'getA2', get: 'wg0' },
      { tag: 'missingGet', get: 'nope0' },
      { tag: 'missingSet', set: 'nope0', change: { listenPort: 1 } },
    ]);
    const b1 = file('wg-b1', [
      { tag: 'createB', create: 'wg0' },
      { tag: 'setB', set: 'wg0', change: { privateKey: privB, listenPort: 51821, peers: [peerA] } },
    ]);
    const b2 = file('wg-b2', [{ tag: 'rotateB', set: 'wg0', change: { privateKey: privB2 } }]);
    const a2 = file('wg-a2', [
      {
        tag: 'learnB2',
        set: 'wg0',
        change: {
          peers: [
            { publicKey: pubB, remove: true },
            { ...peerB, publicKey: pubB2 },
          ],
        },
      },
    ]);
    const ping = (tag: string) =>
      `if ip netns exec a ping -c 2 -W 3 10.99.0.2 >/dev/null 2>&1; then echo 'RESULT {"tag":"${tag}","ok":true}'; ` +
      `else echo 'RESULT {"tag":"${tag}","ok":false}'; fi`;
    const D = `${process.execPath} dist/test/helpers/wg-kernel-driver.js`;
    const run = await runInVm(
      [
        'modprobe wireguard && modprobe veth',
        'ip netns add a && ip netns add b',
        'ip link add va netns a type veth peer name vb netns b',
        'ip -n a link set lo up && ip -n b link set lo up',
        'ip -n a addr add 192.0.2.1/24 dev va && ip -n a link set va up',
        'ip -n b addr add 192.0.2.2/24 dev vb && ip -n b link set vb up',
        `ip netns exec a ${D} ${a1}`,
        `ip netns exec b ${D} ${b1}`,
        'ip -n a addr add 10.99.0.1/24 dev wg0 && ip -n a link set wg0 up',
        'ip -n b addr add 10.99.0.2/24 dev wg0 && ip -n b link set wg0 up',
        ping('ping1'),
        `ip netns exec b ${D} ${b2}`,
        ping('pingRotated'),
        `ip netns exec a ${D} ${a2}`,
        ping('pingLearnt'),
      ].join('\n'),
    );
    const results = new Map(vmLines<Result>(run, 'RESULT').map((r) => [r.tag, r]));
    const get = (tag: string) => {
      const r = results.get(tag);
      assert.ok(r, `no ${tag} in the VM's output (exit ${run.exit}, ${run.ms} ms):\n${run.output.slice(-3000)}`);
      return r;
    };
    console.log(`# VM run: ${run.ms} ms; setA ${JSON.stringify(get('setA').value)}`);
    assert.deepEqual(get('createA').value, { kind: 'wireguard', mtu: 1420 });
    const setA = get('setA').value as { messages: number };
    assert.ok(setA.messages > 1, `1,002 peers and 3,000 allowed IPs took ${setA.messages} message(s)`);
    const a = get('getA').value as Record<string, unknown>;
    assert.equal(a.privateKey, privA);
    assert.equal(a.publicKey, pubA);
    assert.equal(a.listenPort, 51820);
    assert.equal(a.fwmark, 0x100000);
    assert.equal(a.peerCount, 1002);
    assert.deepEqual(a.allowedCounts, [3000], 'the wide peer read back with all its allowed IPs, once');
    const a2v = get('getA2').value as { peers: Array<Record<string, unknown>> };
    assert.deepEqual(
      a2v.peers.map((p) => [p.publicKey, p.endpoint, p.allowedIps, p.persistentKeepalive]),
      [[pubB, '192.0.2.2:51821', ['10.99.0.2/32'], 0]],
    );
    assert.equal(get('missingGet').value, null);
    assert.deepEqual(get('missingSet').error, {
      code: 'EWIREGUARD',
      errno: 19,
      message: get('missingSet').error?.message,
    });
    assert.ok(get('setB').ok);
    assert.ok(get('ping1').ok, 'no ping through the tunnel');
    assert.ok(!get('pingRotated').ok, "a ping crossed with B's new key unknown to A");
    assert.ok(get('pingLearnt').ok, "no ping once A learnt B's new key");
    assert.equal(run.exit, 0, run.output.slice(-2000));
  });

  it("the WireGuard manager on the kernel's device: two nodes' addresses reach each other only through it, as Felix programs it; a restart keeps the key; WireguardRequired; disabled, it is all gone", async (t) => {
    const dir = join(ROOT, 'build/vm');
    mkdirSync(dir, { recursive: true });
    const route = routeUpdate;
    const msgs = (me: string) => [
      { type: 'HostMetadataUpdate', hostname: 'node1', ipv4Addr: '192.0.2.1' },
      { type: 'HostMetadataUpdate', hostname: 'node2', ipv4Addr: '192.0.2.2' },
      { type: 'HostMetadataUpdate', hostname: 'node3', ipv4Addr: '192.0.2.3' },
      {
        type: 'WireguardEndpointUpdate',
        hostname: me === 'node1' ? 'node2' : 'node1',
        publicKey: 'PEERKEY',
        interfaceIpv4Addr: '',
      },
      route('10.65.0.0/26', 'node1', me === 'node1' ? 4 : 1),
      route('10.65.1.0/26', 'node2', me === 'node2' ? 4 : 1),
      route('10.65.2.0/26', 'node3', 1),
    ];
    const file = (name: string, body: unknown) => {
      const path = join(dir, `${name}-${process.pid}.json`);
      writeFileSync(path, JSON.stringify(body));
      t.after(() => rmSync(path, { force: true }));
      return path;
    };
    // The first apply of each node has no peer key yet ("PEERKEY" left empty: no peer).
    const a = file('mgr-a', { config: { hostname: 'node1', required: true }, msgs: msgs('node1') });
    const b = file('mgr-b', { config: { hostname: 'node2' }, msgs: msgs('node2') });
    const off = file('mgr-off', { config: { hostname: 'node1', enabled: false }, msgs: [] });
    const D = `${process.execPath} dist/test/helpers/wg-manager-driver.js`;
    const key = (ns: string, f: string, peer = '') =>
      `$(ip netns exec ${ns} ${D} ${f} "${peer}" | tee -a /tmp/out | sed -n 's/^KEY //p' | tail -1)`;
    const run = await runInVm(
      [
        'modprobe wireguard && modprobe veth',
        'ip netns add a && ip netns add b',
        'ip link add va netns a type veth peer name vb netns b',
        'ip -n a addr add 192.0.2.1/24 dev va && ip -n a link set va up && ip -n a link set lo up',
        'ip -n b addr add 192.0.2.2/24 dev vb && ip -n b link set vb up && ip -n b link set lo up',
        'ip -n a addr add 10.65.0.5/32 dev lo && ip -n b addr add 10.65.1.5/32 dev lo',
        `KA=${key('a', a)}`,
        `KB=${key('b', b)}`,
        `echo "RESULT {\\"tag\\":\\"keys\\",\\"a\\":\\"$KA\\",\\"b\\":\\"$KB\\"}"`,
        `KA2=${key('a', a, '$KB')}`,
        `KB2=${key('b', b, '$KA')}`,
        `echo "RESULT {\\"tag\\":\\"keys2\\",\\"a\\":\\"$KA2\\",\\"b\\":\\"$KB2\\"}"`,
        'cat /tmp/out',
        `echo "TABLE $(ip -n a route show table 1 | tr '\n' ';')"`,
        `echo "RULE $(ip -n a rule show | grep '^99:')"`,
        `echo "LINK $(ip -n a -d link show wireguard.cali | tr '\n' ' ')"`,
        `echo "MAIN $(ip -n a route show | tr '\n' ';')"`,
        'if ip netns exec a ping -c 2 -W 3 -I 10.65.0.5 10.65.1.5 >/dev/null 2>&1; then echo PING ok; else echo PING failed; fi',
        `echo "PEER $(ip netns exec a wg show wireguard.cali 2>/dev/null | tr '\n' ' ')"`,
        `ip netns exec a ${D} ${off} >> /tmp/off`,
        `echo "OFF $(ip -n a link show wireguard.cali 2>&1 | head -1) | $(ip -n a rule show | grep -c '^99:') | $(ip -n a route show table 1 | wc -l)"`,
      ].join('\n'),
    );
    const line = (p: string) => run.output.split('\n').find((l) => l.startsWith(p)) ?? `(no ${p} line)`;
    const diag = `exit ${run.exit} in ${run.ms} ms:\n${run.output.slice(-4000)}`;
    const [keys, keys2] = vmLines<{ tag: string; a: string; b: string }>(run, 'RESULT');
    assert.ok(keys?.a && keys.b && keys.a !== keys.b, diag);
    assert.deepEqual([keys2?.a, keys2?.b], [keys.a, keys.b], 'a second run (a restart) keeps the keys in the devices');
    // Felix's shape: the peer's block via the device (scope link), this node's own block
    // and nothing else thrown back; node3, without a key, unreachable (WireguardRequired).
    const table = line('TABLE ');
    assert.match(table, /10\.65\.1\.0\/26 dev wireguard\.cali proto 80 scope link/, diag);
    assert.match(table, /throw 10\.65\.0\.0\/26 proto 80/, diag);
    assert.match(table, /unreachable 10\.65\.2\.0\/26 proto 80/, diag);
    assert.match(line('RULE '), /^RULE 99:\s+not from all fwmark 0x200000\/0x200000 lookup 1/, diag);
    assert.match(line('LINK '), /mtu 1420 .*state UNKNOWN/, diag);
    assert.doesNotMatch(line('MAIN '), /10\.65/, 'no route to the pods but through WireGuard');
    assert.equal(line('PING '), 'PING ok', diag);
    assert.match(line('OFF '), /does not exist\.? \| 0 \| 0$/, `disabled: device, rule and routes gone; ${diag}`);
  });

  it('on a kernel without WireGuard (this one, unless it has the module), a get is ENOTSUP', async (t) => {
    const dev = await wgGet('wireguard.cali').catch((e: { code?: string; errno?: number }) => e);
    if (dev === undefined) return t.skip('this kernel has WireGuard');
    assert.deepEqual([(dev as { code?: string }).code, (dev as { errno?: number }).errno], ['ENOTSUP', 95]);
  });
});
