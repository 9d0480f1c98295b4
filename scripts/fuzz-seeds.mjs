#!/usr/bin/env node
// Writes the fuzzers' seed corpus (native/fuzz/corpus/): real nftables op streams, as the
// backend sends them for a small ruleset (a table, base and regular chains, sets with
// elements, verdict maps, rules of every kind), one stream per chain or set so each seed is
// small; selectors of the shapes Calico users write; route op streams; and rtnetlink
// messages (links, renames, addresses, route deletions) as the kernel sends them; IP-set
// command streams; WireGuard device changes. Run
// after `npm run build:ts`.
import { mkdirSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const { defaultConfig } = await import(new URL('dist/src/config/params.js', root));
const { desiredOf } = await import(new URL('dist/src/dataplane/backends/nft/desired.js', root));
const { NativeSink } = await import(new URL('dist/src/dataplane/backends/nft/sinks.js', root));
const { renderRuleset } = await import(new URL('dist/src/dataplane/render/ruleset.js', root));
const { DesiredState } = await import(new URL('dist/src/dataplane/desired-state.js', root));

const out = (dir, name, bytes) => {
  const d = new URL(`native/fuzz/corpus/${dir}/`, root);
  mkdirSync(d, { recursive: true });
  writeFileSync(new URL(name, d), bytes);
};

const state = new DesiredState();
state.apply([
  { type: 'IPSetUpdate', id: 's:seed', ipsetType: 'NET', members: ['10.0.0.0/8', '192.168.1.1/32', 'fd00::/64'] },
  {
    type: 'ActivePolicyUpdate',
    id: { tier: 'default', name: 'np/prod/web' },
    policy: {
      namespace: 'prod',
      untracked: false,
      preDnat: false,
      originalSelector: '',
      outboundRules: [],
      inboundRules: [
        {
          action: 'allow',
          protocol: { name: 'tcp' },
          srcNet: ['10.1.0.0/16'],
          dstNet: [],
          notSrcNet: [],
          notDstNet: [],
          srcPorts: [],
          dstPorts: [
            { first: 80, last: 80 },
            { first: 8000, last: 8100 },
          ],
          notSrcPorts: [],
          notDstPorts: [],
          srcIpSetIds: ['s:seed'],
          dstIpSetIds: [],
          notSrcIpSetIds: [],
          notDstIpSetIds: [],
          srcNamedPortIpSetIds: [],
          dstNamedPortIpSetIds: [],
          notSrcNamedPortIpSetIds: [],
          notDstNamedPortIpSetIds: [],
          dstIpPortSetIds: [],
        },
        {
          action: 'log',
          srcNet: [],
          dstNet: [],
          notSrcNet: [],
          notDstNet: [],
          srcPorts: [],
          dstPorts: [],
          notSrcPorts: [],
          notDstPorts: [],
          srcIpSetIds: [],
          dstIpSetIds: [],
          notSrcIpSetIds: [],
          notDstIpSetIds: [],
          srcNamedPortIpSetIds: [],
          dstNamedPortIpSetIds: [],
          notSrcNamedPortIpSetIds: [],
          notDstNamedPortIpSetIds: [],
          dstIpPortSetIds: [],
        },
      ],
    },
  },
  {
    type: 'WorkloadEndpointUpdate',
    id: { orchestratorId: 'k8s', workloadId: 'prod/web', endpointId: 'eth0' },
    endpoint: {
      state: 'active',
      name: 'cali12345',
      mac: '',
      profileIds: ['kns.prod'],
      ipv4Nets: ['10.65.0.2/32'],
      ipv6Nets: [],
      tiers: [{ name: 'default', ingressPolicies: ['np/prod/web'], egressPolicies: [], defaultAction: 'Deny' }],
      ipv4Nat: [{ extIp: '203.0.113.9', intIp: '10.65.0.2' }],
      ipv6Nat: [],
      allowSpoofedSourcePrefixes: [],
    },
  },
  { type: 'InSync' },
]);
const cfg = { ...defaultConfig(), FloatingIPs: 'Enabled' };
let n = 0;
for (const family of [4, 6]) {
  const d = desiredOf(renderRuleset(state, cfg, family, 'nftables'));
  for (const set of d.sets.values()) {
    const w = new NativeSink();
    w.tableAdd(family, 'calico');
    w.setAdd(family, 'calico', set.name, w.nextSetId(), set.spec);
    if (set.elems.size) w.elems(true, family, 'calico', set.name, 0, [...set.elems.values()]);
    out('nft_ops', `set-${family}-${n++}`, w.bytes());
  }
  for (const ch of d.chains.values()) {
    if (!ch.rules.length) continue;
    const w = new NativeSink();
    w.chainAdd(family, 'calico', ch.name, ch.base);
    for (let i = 0; i < ch.rules.length; i++) w.rule(family, 'calico', ch, i);
    out('nft_ops', `chain-${family}-${n++}`, w.bytes());
  }
}

const selectors = [
  "app == 'web'",
  'has(role) && !has(quarantine)',
  "tier in {'fe', 'edge'}",
  'env not in {"prod"}',
  'all()',
  'global()',
  "a.b/c contains 'x' || name starts with 'ab' || name ends with \"z\"",
  "!(a == 'b' && (c != 'd' || has(e)))",
  "x in {'a', 'b',}",
];
selectors.forEach((s, i) => out('selector', `sel-${i}`, s));

// Route and neighbour op streams as the route manager encodes them.
const { encodeRouteOps } = await import(new URL('dist/src/native/rtnl.js', root));
const routeSeeds = [
  [
    { op: 'routeReplace', ifindex: 7, dst: '10.65.0.2/32' },
    { op: 'neighReplace', ifindex: 7, dst: '10.65.0.2', mac: 'ee:ee:ee:ee:ee:ee' },
  ],
  [
    { op: 'routeDelete', ifindex: 9, dst: 'fd00:65::2/128' },
    { op: 'neighDelete', ifindex: 9, dst: 'fd00:65::2' },
  ],
  [
    { op: 'routeReplace', ifindex: 3, dst: '192.168.0.0/16' },
    { op: 'routeReplace', ifindex: 3, dst: '0.0.0.0/0' },
  ],
];
routeSeeds.push([
  { op: 'routeReplace', ifindex: 4, dst: '10.65.1.0/26', table: 1, protocol: 80 },
  { op: 'routeReplace', ifindex: 0, dst: 'fd65::/122', type: 'throw', table: 70000 },
]);
routeSeeds.forEach((ops, i) => out('route_ops', `ops-${i}`, encodeRouteOps(ops)));

// WireGuard changes as the WireGuard manager sends them: a device's key, port and mark
// with peers (endpoints of both families, allowed IPs), a removal, replace_peers.
const { encodeWgChange } = await import(new URL('dist/src/native/wg.js', root));
const key = (n) => Buffer.alloc(32, n).toString('base64');
const wgSeeds = [
  {
    privateKey: key(1),
    listenPort: 51820,
    fwmark: 0x100000,
    peers: [
      { publicKey: key(2), endpoint: '192.0.2.2:51820', allowedIps: ['10.65.1.0/26', '10.65.1.64/32'] },
      { publicKey: key(3), endpoint: '[2001:db8::3]:51821', allowedIps: ['fd65::/122'], persistentKeepalive: 25 },
    ],
  },
  {
    replacePeers: true,
    peers: [
      { publicKey: key(2), remove: true },
      { publicKey: key(4), allowedIps: [] },
    ],
  },
];
wgSeeds.forEach((c, i) => out('wg_msgs', `change-${i}`, encodeWgChange(c)));

// rtnetlink messages as the kernel sends them to the interface monitor: nlmsghdr, the
// family header, then attributes (each 4-byte aligned).
const attr = (type, payload) => {
  const a = Buffer.alloc(4 + payload.length + ((4 - (payload.length % 4)) % 4));
  a.writeUInt16LE(4 + payload.length, 0);
  a.writeUInt16LE(type, 2);
  Buffer.from(payload).copy(a, 4);
  return a;
};
const msg = (type, fixed, attrs) => {
  const body = Buffer.concat([fixed, ...attrs]);
  const h = Buffer.alloc(16);
  h.writeUInt32LE(16 + body.length, 0);
  h.writeUInt16LE(type, 4);
  return Buffer.concat([h, body]);
};
const ifinfo = (index, running) => {
  const b = Buffer.alloc(16);
  b.writeInt32LE(index, 4);
  b.writeUInt32LE(running ? 0x41 : 0x1, 8);
  return b;
};
const ifaddr = (family, prefix, index) => Buffer.from([family, prefix, 0, 0, index, 0, 0, 0]);
const rtmsg = (family, dstLen, protocol) => Buffer.from([family, dstLen, 0, 0, 254, protocol, 253, 1, 0, 0, 0, 0]);
const name = (s) => attr(3, Buffer.from(`${s}\0`));
const [NEWLINK, DELLINK, NEWADDR, DELADDR, DELROUTE] = [16, 17, 20, 21, 25];
const v4 = Buffer.from([10, 65, 0, 1]);
const v6 = Buffer.from('fd000065000000000000000000000001', 'hex');
const oif = (i) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(i);
  return attr(4, b);
};
const rtnlSeeds = [
  [msg(NEWLINK, ifinfo(5, true), [name('cali1234')]), msg(NEWADDR, ifaddr(2, 32, 5), [attr(2, v4), attr(1, v4)])],
  [
    msg(NEWLINK, ifinfo(6, false), [name('eth0')]),
    msg(NEWADDR, ifaddr(10, 64, 6), [attr(1, v6)]),
    msg(DELADDR, ifaddr(10, 64, 6), [attr(1, v6)]),
  ],
  [
    msg(NEWLINK, ifinfo(5, true), [name('cali1234')]),
    msg(NEWLINK, ifinfo(5, true), [name('cali5678')]),
    msg(DELLINK, ifinfo(5, false), [name('cali5678')]),
  ],
  [
    msg(NEWLINK, ifinfo(8, true), [name('docker0')]),
    msg(NEWLINK, ifinfo(9, true), [name('calib')]),
    msg(DELROUTE, rtmsg(2, 32, 3), [attr(1, v4), oif(9)]),
  ],
];
// Regression: a length of 2^31 or more once made the message iterator loop forever.
const huge = msg(NEWLINK, ifinfo(5, true), [name('cali1')]);
huge.writeUInt32LE(0xfffffff0, 0);
rtnlSeeds.push([msg(NEWLINK, ifinfo(4, true), [name('eth1')]), huge]);
rtnlSeeds.forEach((msgs, i) => out('rtnl_msgs', `msgs-${i}`, Buffer.concat(msgs)));

// IP-set command streams as the IP-set code encodes them.
const { encodeIpsetOps } = await import(new URL('dist/src/native/ipset.js', root));
const ipsetSeeds = [
  [
    { op: 'create', name: 'cali40s:a', type: 'hash:ip', family: 4, maxelem: 1048576, hashsize: 4096 },
    { op: 'add', name: 'cali40s:a', type: 'hash:ip', family: 4, members: ['10.0.0.1', '10.0.0.2'] },
  ],
  [
    { op: 'create', name: 'cali40s:n', type: 'hash:net', family: 4, maxelem: 1024 },
    { op: 'del', name: 'cali40s:n', type: 'hash:net', family: 4, members: ['10.1.0.0/16'] },
    { op: 'flush', name: 'cali40s:n' },
  ],
  [
    { op: 'create', name: 'cali60n:p', type: 'hash:ip,port', family: 6, maxelem: 1024 },
    { op: 'add', name: 'cali60n:p', type: 'hash:ip,port', family: 6, members: ['fd00::1,tcp:80', 'fd00::2,udp:53'] },
  ],
  [
    { op: 'create', name: 'cali4t0', type: 'hash:ip', family: 4, maxelem: 1024 },
    { op: 'swap', name: 'cali4t0', other: 'cali40s:a' },
    { op: 'destroy', name: 'cali4t0' },
  ],
];
ipsetSeeds.forEach((ops, i) => out('ipset_ops', `ops-${i}`, encodeIpsetOps(ops)));
console.log(
  `fuzz-seeds: ${n} op streams, ${selectors.length} selectors, ${routeSeeds.length} route op streams, ${rtnlSeeds.length} rtnetlink message sets, ${ipsetSeeds.length} IP-set streams, ${wgSeeds.length} WireGuard changes`,
);
