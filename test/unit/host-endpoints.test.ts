// Host endpoints resolved to interfaces as Felix's endpoint manager resolves them, and the
// all-interfaces endpoint as the host dispatch chains' default.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  ALL_INTERFACES,
  hostEndpointsFragment,
  resolveHostEndpoints,
} from '../../src/dataplane/render/host-endpoints.js';
import { allocateMarks } from '../../src/dataplane/render/marks.js';
import { DEFAULT_ACTIONS } from '../../src/dataplane/render/policy.js';
import type { HostEndpoint } from '../../src/proto/messages.js';

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
    const f = hostEndpointsFragment(heps, resolveHostEndpoints(heps, new Map()), ctx, ['cali']);
    const fromHost = f.chains.find((c) => c.table === 'filter' && c.name === 'cali-from-host-endpoint');
    assert.deepEqual(
      fromHost?.rules.map((r) => r.action),
      [
        { k: 'vmap', iface: 'in', map: 'cali-from-host-endpoint' },
        { k: 'goto', chain: `cali-fh-${ALL_INTERFACES}` },
      ],
    );
    const toHost = f.chains.find((c) => c.table === 'filter' && c.name === 'cali-to-host-endpoint');
    assert.deepEqual(toHost?.rules[1], {
      match: [{ k: 'iface', dir: 'out', name: 'cali+' }],
      action: { k: 'return' },
      comment: 'Skip egress WHEP policy for traffic to local workload',
    });
    assert.equal(f.entries.length, 0, 'no interface of its own');
    assert.ok(
      !f.chains.some((c) => c.table === 'raw' && c.name.includes(ALL_INTERFACES)),
      'no untracked policy through "*", as Felix',
    );
    assert.ok(f.chains.some((c) => c.name === 'cali-thfw-any-interface-at-all'));
  });
});
