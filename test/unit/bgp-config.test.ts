// palisade bgp's BIRD configuration, as confd renders it: the mesh, explicit peerings
// (global, per node, selectors, reverse, route reflectors), blocks and aggregation,
// service ranges, pools in the filters, communities; what cannot be honoured is said;
// Debian's BIRD 1.6 accepts every configuration rendered here (`bird -p`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { BgpState } from '../../src/bgp/bgp-state.js';
import { type BirdFiles, hashToIPv4, renderBird } from '../../src/bgp/bird-config.js';
import { parseProtocols } from '../../src/bgp/bird.js';
import { parseDuration } from '../../src/model/bgp.js';
import { validateResource } from '../../src/model/validate.js';

const node = (name: string, ip: string, extra: Record<string, unknown> = {}, labels: Record<string, string> = {}) => ({
  kind: 'Node',
  metadata: { name, labels },
  spec: { bgp: { ipv4Address: `${ip}/24`, ...extra } },
});
const pool = (name: string, cidr: string, spec: Record<string, unknown> = {}) => ({
  kind: 'IPPool',
  metadata: { name },
  spec: { cidr, ...spec },
});
const bgpConfig = (name: string, spec: Record<string, unknown>) => ({
  kind: 'BGPConfiguration',
  metadata: { name },
  spec,
});
const peer = (name: string, spec: Record<string, unknown>) => ({ kind: 'BGPPeer', metadata: { name }, spec });
const affinity = (nodeName: string, cidr: string, state?: string) => ({
  kind: 'BlockAffinity',
  metadata: { name: `${nodeName}-${cidr.replace('/', '-')}` },
  spec: { node: nodeName, cidr, ...(state ? { state } : {}) },
});

function stateOf(hostname: string, ...resources: Array<Record<string, unknown>>): BgpState {
  const state = new BgpState(hostname, () => {});
  for (const r of resources) {
    const v = validateResource({ apiVersion: 'projectcalico.org/v3', ...r });
    assert.ok(v.ok, JSON.stringify(!v.ok && v.error.message));
    state.onUpdate({ kind: v.resource.kind, name: v.resource.metadata.name }, v.resource);
  }
  return state;
}

function render(hostname: string, ...resources: Array<Record<string, unknown>>) {
  const r = renderBird(stateOf(hostname, ...resources), hostname);
  assert.ok(r.files, r.problems.join('; '));
  return { ...(r.files as BirdFiles), problems: r.problems };
}

/** The lines of one `protocol bgp NAME` block. */
function protocol(cfg: string, name: string): string[] {
  const start = cfg.indexOf(`protocol bgp ${name} from bgp_template {`);
  if (start < 0) return [];
  return cfg
    .slice(start, cfg.indexOf('\n}', start))
    .split('\n')
    .map((l) => l.trim());
}

const protocols = (cfg: string) => [...cfg.matchAll(/^protocol bgp (\S+) from/gm)].map((m) => m[1]);

const birdAvailable = !spawnSync('bird', ['--version']).error;

/** Debian's BIRD 1.6 parses the files (`bird -p`), as palisade bgp checks before any reload. */
function assertBirdAccepts(files: BirdFiles): void {
  if (!birdAvailable) return;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-bird-'));
  try {
    for (const name of ['bird.cfg', 'bird_aggr.cfg', 'bird_ipam.cfg'] as const)
      writeFileSync(join(dir, name), files[name]);
    const r = spawnSync('bird', ['-p', '-c', join(dir, 'bird.cfg')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `bird -p: ${r.stderr}${r.stdout}\n${files['bird.cfg']}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('palisade bgp: BIRD configuration as confd renders it', () => {
  const three = [node('node1', '10.0.0.1'), node('node2', '10.0.0.2'), node('node3', '10.0.0.3')];

  it('meshes with every other node: names, source address, AS, and the higher address listening (passive)', () => {
    const f = render('node2', ...three, pool('p', '10.65.0.0/16'));
    assert.deepEqual(protocols(f['bird.cfg']), ['Mesh_10_0_0_1', 'Mesh_10_0_0_3']);
    assert.match(f['bird.cfg'], /^router id 10\.0\.0\.2;$/m);
    assert.match(f['bird.cfg'], /^ {2}local as 64512;$/m);
    const m3 = protocol(f['bird.cfg'], 'Mesh_10_0_0_3');
    assert.ok(m3.includes('neighbor 10.0.0.3 as 64512;'));
    assert.ok(m3.includes('source address 10.0.0.2;  # The local address we use for the TCP connection'));
    assert.ok(m3.includes('ttl security off;') && m3.includes('multihop;'));
    assert.ok(m3.includes('passive on;'), 'the peer with the higher address waits');
    assert.ok(!protocol(f['bird.cfg'], 'Mesh_10_0_0_1').includes('passive on;'));
    assert.ok(m3.includes('calico_export_to_bgp_peers(true);'));
    assertBirdAccepts(f);
  });

  it('turns the mesh off (nodeToNodeMeshEnabled false), and takes the AS, port, restart time and log level from BGPConfiguration', () => {
    const off = render('node1', ...three, bgpConfig('default', { nodeToNodeMeshEnabled: false }));
    assert.match(off['bird.cfg'], /# No BGP peers configured for this node/);
    const f = render(
      'node1',
      ...three,
      bgpConfig('default', {
        asNumber: '1.10',
        listenPort: 1790,
        nodeMeshMaxRestartTime: '2m',
        logSeverityScreen: 'Warning',
      }),
      bgpConfig('node.node2', { listenPort: 1791 }),
    );
    assert.match(f['bird.cfg'], /^ {2}local as 65546;$/m, 'asdot 1.10');
    assert.match(f['bird.cfg'], /^listen bgp port 1790;$/m);
    assert.ok(
      protocol(f['bird.cfg'], 'Mesh_10_0_0_2').includes('neighbor 10.0.0.2 port 1791 as 65546;'),
      "a node's own listen port",
    );
    assert.ok(protocol(f['bird.cfg'], 'Mesh_10_0_0_3').includes('graceful restart time 120;'));
    assert.doesNotMatch(f['bird.cfg'], /debug/, 'log level none: no debug');
    assertBirdAccepts(f);
  });

  it("blackholes and aggregates this node's confirmed blocks (a pending one is not ours yet, /32s are not blackholed)", () => {
    const f = render(
      'node1',
      ...three,
      affinity('node1', '10.65.1.0/26', 'confirmed'),
      affinity('node1', '10.65.0.0/26'),
      affinity('node1', '10.65.9.0/26', 'pending'),
      affinity('node1', '10.65.3.7/32'),
      affinity('node2', '10.65.2.0/26'),
    );
    const aggr = f['bird_aggr.cfg'];
    assert.deepEqual(
      [...aggr.matchAll(/route (\S+) blackhole/g)].map((m) => m[1]),
      ['10.65.0.0/26', '10.65.1.0/26'],
    );
    assert.match(
      aggr,
      /# Block 10\.65\.0\.0\/26 is implicitly confirmed\.\n {6}if \( net = 10\.65\.0\.0\/26 \) then \{ accept; \}/,
    );
    assert.match(aggr, /# Block 10\.65\.1\.0\/26 is confirmed\n.*net = 10\.65\.1\.0\/26/);
    assert.match(aggr, /if \( net ~ 10\.65\.1\.0\/26 && krt_metric < 1024 \) then \{ accept; \}/);
    assert.doesNotMatch(aggr, /10\.65\.9\.0|10\.65\.2\.0/);
    assert.match(aggr, /^protocol static from static_template \{$/m);
    assertBirdAccepts(f);
  });

  it("puts each pool in the filters by its encapsulation: VXLAN routes are Felix's, unencapsulated ones BIRD's; export-disabled pools are not exported", () => {
    const f = render(
      'node1',
      ...three,
      pool('vx', '10.65.0.0/16', { vxlanMode: 'Always' }),
      pool('flat', '10.66.0.0/16'),
      pool('ipip', '10.67.0.0/16', { ipipMode: 'Always' }),
      pool('quiet', '10.68.0.0/16', { disableBGPExport: true }),
    );
    const ipam = f['bird_ipam.cfg'];
    assert.match(ipam, /if \(net ~ 10\.65\.0\.0\/16\) then \{ reject; \} # VXLAN routes are handled by Felix\./);
    assert.match(ipam, /filter calico_kernel_programming \{[\s\S]*if \(net ~ 10\.66\.0\.0\/16\) then \{ accept; \}/);
    assert.match(ipam, /if \(net ~ 10\.67\.0\.0\/16\) then \{ reject; \} # Cluster routes are handled by Felix\./);
    assert.match(ipam, /if \(net ~ 10\.68\.0\.0\/16\) then \{ reject; \} # BGP export is disabled\./);
    const exported = ipam.slice(
      ipam.indexOf('function calico_export_to_bgp_peers'),
      ipam.indexOf('filter calico_kernel_programming'),
    );
    assert.deepEqual(
      [...exported.matchAll(/net ~ (\S+)\) then \{ accept; \}/g)].map((m) => m[1]),
      ['10.65.0.0/16', '10.66.0.0/16', '10.67.0.0/16'],
    );
    assert.match(exported, /\(ifname ~ "\*\.cali"\) \|\| \(ifname ~ "\*\.calico"\) \|\| \(ifname ~ "tunl0"\)/);
    assertBirdAccepts(f);
  });

  it('advertises service ranges from every node (static routes, never programmed from BGP), except from a node labelled to be excluded', () => {
    const svc = bgpConfig('default', {
      serviceClusterIPs: [{ cidr: '10.96.0.0/12' }, {}],
      serviceExternalIPs: [{ cidr: '192.0.2.0/24' }, { cidr: '192.0.2.9/32' }],
    });
    const f = render('node1', ...three, svc);
    assert.deepEqual(
      [...f['bird_aggr.cfg'].matchAll(/route (\S+) blackhole/g)].map((m) => m[1]),
      ['10.96.0.0/12', '192.0.2.0/24'],
    );
    assert.match(
      f['bird_ipam.cfg'],
      /# Export static routes\.\n {2}if \( net ~ 10\.96\.0\.0\/12 \) then \{ accept; \}/,
    );
    assert.match(
      f['bird_ipam.cfg'],
      /# Don't program static routes into kernel\.\n {2}if \( net ~ 10\.96\.0\.0\/12 \) then \{ reject; \}/,
    );
    const excluded = render(
      'node1',
      node('node1', '10.0.0.1', {}, { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' }),
      svc,
    );
    assert.doesNotMatch(excluded['bird_aggr.cfg'], /10\.96/);
    assert.match(excluded['bird_ipam.cfg'], /if \( net ~ 10\.96\.0\.0\/12 \) then \{ reject; \}/);
    assertBirdAccepts(f);
  });

  it('peers explicitly: a global peer (passive when it is a Calico node with a higher address), a node-specific one by selector, options', () => {
    const f = render(
      'node1',
      ...three.slice(1),
      node('node1', '10.0.0.1', {}, { rack: 'a' }),
      bgpConfig('default', { nodeToNodeMeshEnabled: false }),
      peer('tor', {
        peerIP: '10.0.0.254',
        asNumber: 64600,
        keepaliveTime: '30s',
        maxRestartTime: '90s',
        ttlSecurity: 2,
        nextHopMode: 'Self',
      }),
      peer('calico', { peerIP: '10.0.0.3', asNumber: 64512 }),
      peer('rack-a', {
        nodeSelector: "rack == 'a'",
        peerIP: '10.0.9.1:1179',
        asNumber: 64601,
        localASNumber: 64700,
        numAllowedLocalASNumbers: 2,
      }),
      peer('rack-b', { nodeSelector: "rack == 'b'", peerIP: '10.0.9.2', asNumber: 64602 }),
    );
    assert.deepEqual(protocols(f['bird.cfg']), ['Global_10_0_0_254', 'Global_10_0_0_3', 'Node_10_0_9_1_port_1179']);
    const tor = protocol(f['bird.cfg'], 'Global_10_0_0_254');
    for (const l of [
      'neighbor 10.0.0.254 as 64600;',
      'ttl security on;',
      'multihop 2;',
      'keepalive time 30;',
      'graceful restart time 90;',
      'next hop self;',
      'calico_export_to_bgp_peers(false);',
    ])
      assert.ok(tor.includes(l), `${l} in ${tor.join(' | ')}`);
    assert.ok(protocol(f['bird.cfg'], 'Global_10_0_0_3').includes('passive on;'));
    const rack = protocol(f['bird.cfg'], 'Node_10_0_9_1_port_1179');
    for (const l of ['local as 64700;', 'neighbor 10.0.9.1 port 1179 as 64601;', 'allow local as 2;'])
      assert.ok(rack.includes(l), l);
    assertBirdAccepts(f);
  });

  it('route reflectors: the reflector has no mesh and takes the others as clients (rr client, cluster id); the others peer with it by selector, and it peers back', () => {
    const rr = node('rr1', '10.0.0.9', { routeReflectorClusterID: '224.0.0.1' }, { 'route-reflector': 'true' });
    const all = [...three, rr, peer('to-rr', { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" })];
    const onRr = render('rr1', ...all);
    assert.deepEqual(
      protocols(onRr['bird.cfg']),
      ['Node_10_0_0_1', 'Node_10_0_0_2', 'Node_10_0_0_3'],
      'reverse peerings to every node, no mesh',
    );
    const client = protocol(onRr['bird.cfg'], 'Node_10_0_0_1');
    assert.ok(client.includes('rr client;') && client.includes('rr cluster id 224.0.0.1;'));
    const onNode = render('node1', ...all);
    assert.deepEqual(
      protocols(onNode['bird.cfg']),
      ['Mesh_10_0_0_2', 'Mesh_10_0_0_3', 'Node_10_0_0_9'],
      'the mesh skips the reflector; the selector peering reaches it',
    );
    assertBirdAccepts(onRr);
    assertBirdAccepts(onNode);
  });

  it('adds communities for advertised prefixes (by value or by name), standard and large', () => {
    const f = render(
      'node1',
      ...three,
      bgpConfig('default', {
        communities: [{ name: 'gold', value: '100:200' }],
        prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold', '300:400:500'] }],
      }),
    );
    assert.match(
      f['bird.cfg'],
      /if \( net ~ 10\.65\.0\.0\/16 \) then \{\n {10}bgp_community\.add\(\(100, 200\)\);\n {10}bgp_large_community\.add\(\(300, 400, 500\)\);/,
    );
    assertBirdAccepts(f);
  });

  it('says what it cannot honour, and renders nothing without the node or a router ID', () => {
    const f = render(
      'node1',
      node('node1', '10.0.0.1', { ipv6Address: 'fd00::1/64' }),
      bgpConfig('default', { programClusterRoutes: 'Enabled', bindMode: 'NodeIP', someNewField: 1 }),
      pool('ipip', '10.67.0.0/16', { ipipMode: 'Always' }),
      peer('p', {
        peerIP: '10.0.0.5',
        asNumber: 1,
        filters: ['f'],
        password: { secretKeyRef: { name: 's', key: 'k' } },
      }),
      peer('w', { localWorkloadSelector: 'x == "y"', asNumber: 1 }),
    );
    const said = f.problems.join('\n');
    for (const re of [
      /IPv6 BGP \(bird6\) is not supported/,
      /krt_tunnel/,
      /someNewField is not supported/,
      /BGPPeer p: filters/,
      /BGPPeer p: password/,
      /BGPPeer w: localWorkloadSelector/,
    ])
      assert.match(said, re);
    // Never peered without its password or filters (issue 52): not brought up at all.
    assert.deepEqual(protocols(f['bird.cfg']), []);
    assert.match(said, /BGPPeer p: password .*not brought up/);
    assert.match(said, /BGPPeer p: filters .*not brought up/);
    assert.match(f['bird.cfg'], /^listen bgp address 10\.0\.0\.1;$/m);
    assert.match(f['bird_ipam.cfg'], /10\.67\.0\.0\/16\) then \{ reject; \} # IPIP routes need Calico's BIRD fork/);
    assertBirdAccepts(f);
    assert.equal(renderBird(stateOf('node1'), 'node1').files, undefined);
    assert.match(
      renderBird(stateOf('node1', { kind: 'Node', metadata: { name: 'node1' } }), 'node1').problems.join(),
      /no BGP IPv4 address and CALICO_ROUTER_ID is not set/,
    );
    const hashed = renderBird(stateOf('node1', { kind: 'Node', metadata: { name: 'node1' } }), 'node1', {
      routerId: 'hash',
    }).files;
    assert.match(
      hashed?.['bird.cfg'] ?? '',
      new RegExp(`^router id ${hashToIPv4('node1').replaceAll('.', '\\.')};$`, 'm'),
    );
    assert.match(hashed?.['bird.cfg'] ?? '', /# IPv4 disabled on this node\./);
  });

  it('a node-to-node mesh with a password palisade cannot apply is not brought up (issue 52)', () => {
    const f = render(
      'node1',
      ...three,
      bgpConfig('default', { nodeMeshPassword: { secretKeyRef: { name: 'bgp', key: 'mesh' } } }),
      peer('plain', { peerIP: '192.0.2.9', asNumber: 65001 }),
    );
    assert.deepEqual(protocols(f['bird.cfg']), ['Global_192_0_2_9']);
    assert.match(f.problems.join('\n'), /nodeMeshPassword .*the node-to-node mesh is not brought up/);
    assertBirdAccepts(f);
  });

  it('refuses bad BGP resources with the field at fault', () => {
    const bad = [
      peer('x', { peerIP: 'not-an-ip' }),
      peer('x', { node: 'a', nodeSelector: 'all()' }),
      peer('x', { peerSelector: 'a ==' }),
      bgpConfig('default', { asNumber: '70000.1' }),
      bgpConfig('default', { nodeMeshMaxRestartTime: 'soon' }),
      affinity('n', 'not-a-cidr'),
    ];
    for (const r of bad)
      assert.equal(validateResource({ apiVersion: 'projectcalico.org/v3', ...r }).ok, false, JSON.stringify(r));
  });

  it("hashes router IDs as confd (outside 224/4), parses Go durations and birdc's protocol table", () => {
    for (const n of ['node1', 'kube-master', 'a']) assert.ok(Number(hashToIPv4(n).split('.')[0]) <= 223);
    assert.equal(parseDuration('1m30s'), 90);
    assert.equal(parseDuration('250ms'), 0.25);
    assert.equal(parseDuration('5'), undefined);
    const rows = parseProtocols(`BIRD 1.6.8 ready.
name     proto    table    state  since       info
static1  Static   master   up     00:12:34
kernel1  Kernel   master   up     00:12:34
Mesh_10_0_0_2 BGP      master   up     00:12:36    Established
Mesh_10_0_0_3 BGP      master   start  00:12:34    Active        Socket: Connection refused`);
    assert.deepEqual(
      rows.filter((r) => r.proto === 'BGP').map((r) => [r.name, r.state, r.info.split(/\s+/)[0]]),
      [
        ['Mesh_10_0_0_2', 'up', 'Established'],
        ['Mesh_10_0_0_3', 'start', 'Active'],
      ],
    );
  });
});
