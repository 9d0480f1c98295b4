// BIRD syntax injection (issue 51 D3): a BGPConfiguration ignoredInterfaces entry such as
// `eth9", "*"; }; protocol static injected { route 0.0.0.0/0 blackhole; }; ...` reached
// bird.cfg unescaped and gave BIRD an extra static route and a whole extra peer, which
// `bird -p` accepted. Two walls: validation as libcalico-go's (interface globs, community
// values, cluster IDs as IPv4 addresses) refuses the resource with the field at fault; and
// should a value get past it (a resource put into the state unvalidated here), the render
// refuses every interpolated value holding anything but its syntax's characters, renders
// nothing, and BIRD keeps its previous configuration.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { BgpState } from '../../src/bgp/bgp-state.js';
import { renderBird } from '../../src/bgp/bird-config.js';
import type { Resource } from '../../src/model/schemas.js';
import { validateResource } from '../../src/model/validate.js';

const V3 = 'projectcalico.org/v3';
/** The probe's value: it closes the interface list and the template, then adds its own protocols. */
const PROBE =
  'eth9", "*"; }; protocol static injected { route 0.0.0.0/0 blackhole; }; protocol bgp evil from bgp_template { neighbor 192.0.2.66 as 666; }; template direct x { interface "x';
const INJECTIONS = [
  PROBE,
  'x"',
  'x;',
  'x{',
  'x}',
  'x#',
  'x\ny',
  '1.2.3.4; protocol static s { route 0.0.0.0/0 blackhole; }',
];

const node = (name: string, ip: string, bgp: Record<string, unknown> = {}) => ({
  apiVersion: V3,
  kind: 'Node',
  metadata: { name },
  spec: { bgp: { ipv4Address: `${ip}/24`, ...bgp } },
});
const bgpConfig = (spec: Record<string, unknown>) => ({
  apiVersion: V3,
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec,
});

/** The state as a datastore would fill it, with `raw` put in unvalidated (what the second wall is for). */
function stateWith(raw: Array<Record<string, unknown>>): BgpState {
  const state = new BgpState('node1', () => {});
  for (const r of [node('node1', '10.0.0.1'), node('node2', '10.0.0.2')]) {
    const v = validateResource(r);
    assert.ok(v.ok);
    state.onUpdate({ kind: 'Node', name: r.metadata.name }, v.resource);
  }
  for (const r of raw) {
    const meta = r.metadata as { name: string };
    state.onUpdate({ kind: r.kind as Resource['kind'], name: meta.name }, r as unknown as Resource);
  }
  return state;
}

const birdAvailable = !spawnSync('bird', ['--version']).error;

describe('BIRD syntax injection (issue 51 D3)', () => {
  it('validation refuses the probe in ignoredInterfaces, community values and routeReflectorClusterID, naming the field', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [];
    for (const v of INJECTIONS) {
      cases.push([bgpConfig({ ignoredInterfaces: ['eth1', v] }), /spec\.ignoredInterfaces\[1\]/]);
      cases.push([
        bgpConfig({
          communities: [{ name: 'gold', value: v }],
          prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold'] }],
        }),
        /spec\.communities\[0\]\.value/,
      ]);
      cases.push([bgpConfig({ communities: [{ name: v, value: '1:2' }] }), /spec\.communities\[0\]\.name/]);
      cases.push([
        bgpConfig({ prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: [v] }] }),
        /spec\.prefixAdvertisements\[0\]\.communities\[0\]/,
      ]);
      cases.push([node('n', '10.0.0.9', { routeReflectorClusterID: v }), /routeReflectorClusterID/]);
    }
    // libcalico-go's own syntax: 16-bit standard parts, 32-bit large ones, "*" alone, an IPv6 cluster ID.
    cases.push([bgpConfig({ communities: [{ name: 'a', value: '100:65536' }] }), /spec\.communities\[0\]\.value/]);
    cases.push([bgpConfig({ communities: [{ name: 'a', value: '1:2:4294967296' }] }), /spec\.communities\[0\]\.value/]);
    cases.push([bgpConfig({ ignoredInterfaces: ['*'] }), /spec\.ignoredInterfaces\[0\]/]);
    cases.push([bgpConfig({ ignoredInterfaces: ['a-name-of-16-chr'] }), /spec\.ignoredInterfaces\[0\]/]);
    cases.push([node('n', '10.0.0.9', { routeReflectorClusterID: 'fd00::1' }), /IPv4/]);
    for (const [r, field] of cases) {
      const v = validateResource(r);
      assert.equal(v.ok, false, `accepted: ${JSON.stringify(r)}`);
      if (!v.ok) assert.match(v.error.message, field, v.error.message);
    }
    for (const ok of [
      bgpConfig({
        ignoredInterfaces: ['eth*', 'docker0', 'veth.1-x_y'],
        communities: [{ name: 'gold', value: '65535:65535' }],
        prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold', '4294967295:1:2'] }],
      }),
      node('n', '10.0.0.9', { routeReflectorClusterID: '224.0.0.1' }),
    ])
      assert.ok(validateResource(ok).ok, JSON.stringify(ok));
  });

  it('the render refuses every interpolated value that could change BIRD syntax, and renders nothing', () => {
    // Every field of the BGP resources that reaches a BIRD file, each with each injection.
    const fields: Array<[string, (v: string) => Array<Record<string, unknown>>]> = [
      ['ignoredInterfaces[0]', (v) => [bgpConfig({ ignoredInterfaces: [v] })]],
      [
        'communities of 10.65.0.0/16',
        (v) => [
          bgpConfig({
            communities: [{ name: 'gold', value: v }],
            prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold'] }],
          }),
        ],
      ],
      ['prefixAdvertisements cidr', (v) => [bgpConfig({ prefixAdvertisements: [{ cidr: v, communities: ['1:2'] }] })]],
      [
        'routeReflectorClusterID',
        (v) => [{ ...node('node1', '10.0.0.1', { routeReflectorClusterID: v }), kind: 'Node' }],
      ],
      ['IPPool cidr', (v) => [{ kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr: v } }]],
      [
        'block affinity cidr',
        (v) => [{ kind: 'BlockAffinity', metadata: { name: 'b' }, spec: { node: 'node1', cidr: v } }],
      ],
      [
        'block affinity state',
        (v) => [
          { kind: 'BlockAffinity', metadata: { name: 'b' }, spec: { node: 'node1', cidr: '10.65.0.0/26', state: v } },
        ],
      ],
      ['serviceClusterIPs', (v) => [bgpConfig({ serviceClusterIPs: [{ cidr: v }] })]],
      ['serviceExternalIPs', (v) => [bgpConfig({ serviceExternalIPs: [{ cidr: v }] })]],
      ['serviceLoadBalancerIPs', (v) => [bgpConfig({ serviceLoadBalancerIPs: [{ cidr: v }] })]],
      [
        'reachableBy',
        (v) => [
          { kind: 'BGPPeer', metadata: { name: 'p' }, spec: { peerIP: '192.0.2.1', asNumber: 1, reachableBy: v } },
        ],
      ],
    ];
    for (const [field, make] of fields)
      for (const v of INJECTIONS) {
        const r = renderBird(stateWith(make(v)), 'node1');
        assert.equal(r.files, undefined, `${field} ${JSON.stringify(v)} was rendered`);
        const said = r.problems.join('\n');
        assert.ok(said.includes(field), `${field}: ${said}`);
        assert.match(said, /nothing is rendered; BIRD keeps its previous configuration/);
        // Quoted, and cut short: a log line never carries the whole value.
        assert.ok(!said.includes(PROBE), said);
      }
    // CALICO_ROUTER_ID is an operator's, but it is interpolated too: an address or "hash" only.
    for (const v of [...INJECTIONS, 'router1', 'fd00::1'])
      assert.equal(renderBird(stateWith([]), 'node1', { routerId: v }).files, undefined, v);
    assert.ok(renderBird(stateWith([]), 'node1', { routerId: '10.9.9.9' }).files);
  });

  it('what validation lets through renders, and BIRD 1.6 accepts it', (t) => {
    const state = stateWith([
      bgpConfig({
        ignoredInterfaces: ['eth*', 'docker0'],
        communities: [{ name: 'gold', value: '65535:1' }],
        prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold', '4294967295:1:2'] }],
      }),
    ]);
    const r = renderBird(state, 'node1');
    assert.ok(r.files, r.problems.join('\n'));
    assert.match(r.files['bird.cfg'], /interface -"eth\*", -"docker0", -"cali\*", -"kube-ipvs\*", "\*";/);
    assert.match(r.files['bird.cfg'], /bgp_large_community\.add\(\(4294967295, 1, 2\)\);/);
    if (!birdAvailable) {
      assert.ok(!process.env.CI, 'bird is required on CI');
      t.skip('bird is not installed');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'palisade-bird-'));
    try {
      for (const name of ['bird.cfg', 'bird_aggr.cfg', 'bird_ipam.cfg'] as const)
        writeFileSync(join(dir, name), r.files[name]);
      const p = spawnSync('bird', ['-p', '-c', join(dir, 'bird.cfg')], { encoding: 'utf8' });
      assert.equal(p.status, 0, p.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
