// Host endpoints resolved to interfaces as Felix's endpoint manager resolves them, and the
// all-interfaces endpoint as the host dispatch chains' default.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  ALL_INTERFACES,
  hostEndpointsFragment,
  type PolicyLookup,
  resolveHostEndpoints,
} from '../../src/dataplane/render/host-endpoints.js';
import { allocateMarks } from '../../src/dataplane/render/marks.js';
import { DEFAULT_ACTIONS } from '../../src/dataplane/render/policy.js';
import type { HostEndpoint, Policy, Profile } from '../../src/proto/messages.js';
import { protoRule } from '../helpers/render-fixtures.js';

const hep = (name: string, v4: string[] = [], v6: string[] = []): HostEndpoint => ({
  name,
  profileIds: [],
  tiers: [],
  untrackedTiers: [],
  preDnatTiers: [],
  forwardTiers: [],
  expectedIpv4Addrs: v4,
  expectedIpv6Addrs: v6,
});
const ctx = { family: 4 as const, marks: allocateMarks(0xffff0000), iptables: false, actions: DEFAULT_ACTIONS };
const none: PolicyLookup = { policy: () => undefined, profile: () => undefined };

describe('host endpoint resolution', () => {
  it('an explicit name wins its interface; expectedIPs match by address; the smallest ID among matches; "*" apart', () => {
    const heps = new Map([
      ['b-by-name', hep('eth0')],
      ['a-by-ip', hep('', ['10.0.0.5'])],
      ['c-other', hep('eth9')],
      ['d-v6', hep('', [], ['fd00::7'])],
      ['z-all', hep('*')],
      ['y-all', hep('*')],
    ]);
    const ifaces = new Map<string, string[]>([
      ['eth0', ['10.0.0.5/24']],
      ['eth1', ['10.1.0.5/24', 'fd00::7/64']],
      ['lo', ['127.0.0.1/8']],
    ]);
    const r = resolveHostEndpoints(heps, ifaces);
    assert.deepEqual(
      [...r.byIface],
      [
        ['eth0', 'a-by-ip'],
        ['eth1', 'd-v6'],
      ],
      'eth0: both match, a-by-ip has the smaller ID; eth9 is absent',
    );
    assert.equal(r.wildcard, 'y-all');
  });

  it('without interface facts (plan): named interfaces taken as present, expectedIPs-only ones unresolved', () => {
    const r = resolveHostEndpoints(
      new Map([
        ['a', hep('eth0')],
        ['b', hep('', ['10.0.0.5'])],
      ]),
      undefined,
    );
    assert.deepEqual([...r.byIface], [['eth0', 'a']]);
  });

  it('renders "*" as the dispatch default, skipping workloads on egress, with no untracked chains', () => {
    const heps = new Map([
      [
        'all',
        {
          ...hep('*'),
          untrackedTiers: [{ name: 'default', ingressPolicies: ['gnp/x'], egressPolicies: [], defaultAction: 'Deny' }],
        },
      ],
    ]);
    const f = hostEndpointsFragment(heps, resolveHostEndpoints(heps, new Map()), ctx, ['cali'], undefined, none);
    const fromHost = f.chains.find((c) => c.table === 'filter' && c.name === 'cali-from-host-endpoint');
    assert.deepEqual(
      fromHost?.rules.map((r) => r.action),
      [
        { k: 'vmap', iface: 'in', map: 'cali-from-host-endpoint' },
        { k: 'goto', chain: `cali-fh-${ALL_INTERFACES}` },
      ],
    );
    // filter cali-OUTPUT returns traffic to workloads before its dispatch; mangle
    // cali-POSTROUTING does not, so only mangle's dispatch skips them (Felix v3.31.7).
    const toHost = (table: string) =>
      f.chains.find((c) => c.table === table && c.name === 'cali-to-host-endpoint')?.rules.slice(1);
    assert.deepEqual(toHost('filter'), [{ match: [], action: { k: 'goto', chain: `cali-th-${ALL_INTERFACES}` } }]);
    assert.deepEqual(toHost('mangle'), [
      {
        match: [{ k: 'iface', dir: 'out', name: 'cali+' }],
        action: { k: 'return' },
        comment: 'Skip egress WHEP policy for traffic to local workload',
      },
      { match: [], action: { k: 'goto', chain: `cali-th-${ALL_INTERFACES}` } },
    ]);
    assert.equal(f.entries.length, 0, 'no interface of its own');
    assert.ok(
      !f.chains.some((c) => c.table === 'raw' && c.name.includes(ALL_INTERFACES)),
      'no untracked policy through "*", as Felix',
    );
    assert.ok(f.chains.some((c) => c.name === 'cali-thfw-any-interface-at-all'));
  });

  it("puts the egress policy and profiles a host endpoint uses into mangle too, and nothing else's", () => {
    const tier = (egress: string[]) => ({
      name: 'default',
      ingressPolicies: ['gnp/in'],
      egressPolicies: egress,
      defaultAction: 'Deny',
    });
    const heps = new Map([['h', { ...hep('eth0'), tiers: [tier(['gnp/out', 'gnp/gone'])], profileIds: ['prof'] }]]);
    const rule = protoRule({ action: 'allow', dstPorts: [{ first: 80, last: 80 }] });
    const policy = { inboundRules: [rule], outboundRules: [rule] } as unknown as Policy;
    const lookup: PolicyLookup = {
      policy: (key) => (key === 'default/gnp/out' ? { name: 'gnp/out', tier: 'default', policy } : undefined),
      profile: (name) =>
        name === 'prof' ? ({ inboundRules: [], outboundRules: [rule] } as unknown as Profile) : undefined,
    };
    const f = hostEndpointsFragment(heps, resolveHostEndpoints(heps, undefined), ctx, ['cali'], undefined, lookup);
    const mangle = new Map(f.chains.filter((c) => c.table === 'mangle').map((c) => [c.name, c.rules]));
    assert.ok((mangle.get('cali-po-gnp/out')?.length ?? 0) > 0, [...mangle.keys()].join(' '));
    assert.deepEqual(mangle.get('cali-po-gnp/gone'), [], 'a policy gone meanwhile: an empty chain, so the tier drops');
    assert.ok((mangle.get('cali-pro-prof')?.length ?? 0) > 0);
    assert.ok(!mangle.has('cali-pi-gnp/in'), 'ingress policy stays in filter');
    const th = mangle.get('cali-th-eth0') ?? [];
    assert.deepEqual(
      th.slice(0, 3).map((r) => r.action),
      [{ k: 'setMark', mark: ctx.marks.accept, mask: ctx.marks.accept }, { k: 'return' }, { k: 'drop' }],
      'established flows return with the accept bit; invalid ones drop',
    );
    assert.ok(f.entries.some((e) => e.table === 'mangle' && e.map === 'cali-to-host-endpoint' && e.iface === 'eth0'));
  });
});
