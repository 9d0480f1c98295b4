// PolicySorter and PolicyResolver against Felix's ordering and tier rules.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type PolicyMeta, PolicySorter } from '../../src/calc/policy-sorter.js';
import { type EndpointTiers, PolicyResolver } from '../../src/calc/policy-resolver.js';

const meta = (name: string, order?: number, over: Partial<PolicyMeta> = {}): PolicyMeta => ({
  name,
  sortKey: name,
  order: order ?? Number.POSITIVE_INFINITY,
  ingress: true,
  egress: true,
  doNotTrack: false,
  preDNAT: false,
  applyOnForward: false,
  ...over,
});

describe('PolicySorter', () => {
  it('orders tiers: with a resource first, then by order (none last), then name', () => {
    const s = new PolicySorter();
    s.onPolicyUpdate('p1', 'zeta', meta('p1'));
    s.onPolicyUpdate('p2', 'default', meta('p2'));
    s.onPolicyUpdate('p3', 'beta', meta('p3'));
    s.onPolicyUpdate('p4', 'alpha', meta('p4'));
    s.onPolicyUpdate('p5', 'gamma', meta('p5'));
    s.onTierUpdate('beta', { order: 10, defaultAction: 'Deny' });
    s.onTierUpdate('alpha', { order: 20, defaultAction: 'Pass' });
    s.onTierUpdate('gamma', { defaultAction: 'Deny' });
    s.onTierUpdate('zeta', { order: 10, defaultAction: 'Deny' });
    assert.deepEqual(
      s.sorted().map((t) => t.name),
      ['beta', 'zeta', 'alpha', 'gamma', 'default'],
    );
  });

  it('orders policies by order (none = last), then name; follows moves and deletes', () => {
    const s = new PolicySorter();
    s.onPolicyUpdate('c', 'default', meta('c', 5));
    s.onPolicyUpdate('b', 'default', meta('b'));
    s.onPolicyUpdate('a', 'default', meta('a', 5));
    s.onPolicyUpdate('d', 'default', meta('d', 1.5));
    assert.deepEqual(
      s.sorted()[0]?.policies.map((p) => p.name),
      ['d', 'a', 'c', 'b'],
    );
    assert.equal(s.onPolicyUpdate('a', 'default', meta('a', 5)), false, 'no change, not dirty');
    assert.equal(s.onPolicyUpdate('b', 'default', meta('b', 1)), true, 'a new order in the same tier');
    assert.deepEqual(
      s.sorted()[0]?.policies.map((p) => p.name),
      ['b', 'd', 'a', 'c'],
    );
    s.onPolicyUpdate('b', 'default', meta('b'));
    assert.equal(s.onPolicyUpdate('a', 'other', meta('a', 5)), true);
    assert.deepEqual(
      s.sorted().map((t) => [t.name, t.policies.map((p) => p.name)]),
      [
        ['default', ['d', 'c', 'b']],
        ['other', ['a']],
      ],
    );
    s.onPolicyUpdate('a', 'other', undefined);
    assert.deepEqual(
      s.sorted().map((t) => t.name),
      ['default'],
      'an empty tier without a resource goes',
    );
  });

  it('a deleted Tier whose policies remain sorts as invalid', () => {
    const s = new PolicySorter();
    s.onTierUpdate('sec', { order: 1, defaultAction: 'Pass' });
    s.onPolicyUpdate('p', 'sec', meta('p'));
    s.onPolicyUpdate('q', 'default', meta('q'));
    s.onTierUpdate('default', { order: 100, defaultAction: 'Deny' });
    assert.deepEqual(
      s.sorted().map((t) => t.name),
      ['sec', 'default'],
    );
    assert.equal(s.onTierUpdate('sec', undefined), true);
    assert.deepEqual(
      s.sorted().map((t) => [t.name, t.valid, t.defaultAction]),
      [
        ['default', true, 'Deny'],
        ['sec', false, ''],
      ],
    );
  });
});

describe('PolicyResolver', () => {
  function setup() {
    const sorter = new PolicySorter();
    const r = new PolicyResolver(sorter);
    const out = new Map<string, EndpointTiers | undefined>();
    const flush = () => {
      out.clear();
      r.flush((id, t) => out.set(id, t));
      return out;
    };
    return { sorter, r, flush };
  }

  it('lists matching policies per tier in order, splitting ingress and egress', () => {
    const { sorter, r, flush } = setup();
    sorter.onTierUpdate('sec', { order: 1, defaultAction: 'Pass' });
    sorter.onPolicyUpdate('sec.a', 'sec', meta('sec.a', 1, { egress: false }));
    sorter.onPolicyUpdate('b', 'default', meta('b', 2));
    sorter.onPolicyUpdate('c', 'default', meta('c', 1, { ingress: false }));
    sorter.onPolicyUpdate('unmatched', 'other', meta('unmatched'));
    r.onEndpointUpdate('ep1', true);
    r.onPolicyMatch('sec.a', 'ep1', 0);
    r.onPolicyMatch('b', 'ep1', 1);
    r.onPolicyMatch('c', 'ep1', 2);
    const t = flush().get('ep1');
    assert.deepEqual(t?.tiers, [
      { name: 'sec', ingressPolicies: ['sec.a'], egressPolicies: [], defaultAction: 'Pass' },
      { name: 'default', ingressPolicies: ['b'], egressPolicies: ['c', 'b'], defaultAction: 'Deny' },
    ]);
  });

  it('only dirty endpoints are recomputed; a sort change recomputes all', () => {
    const { sorter, r, flush } = setup();
    sorter.onPolicyUpdate('p', 'default', meta('p'));
    r.onEndpointUpdate('ep1', true);
    r.onEndpointUpdate('ep2', true);
    r.onPolicyMatch('p', 'ep1', 0);
    assert.deepEqual([...flush().keys()].sort(), ['ep1', 'ep2']);
    assert.equal(flush().size, 0);
    r.onPolicyMatchStopped('ep1', 0);
    assert.deepEqual([...flush().keys()], ['ep1']);
    r.onSortChanged();
    assert.deepEqual([...flush().keys()].sort(), ['ep1', 'ep2']);
    r.onEndpointUpdate('ep2', false);
    assert.deepEqual([...flush()], [['ep2', undefined]]);
  });

  it("a policy number reused for another policy ranks as that policy, with the order's cache kept", () => {
    const { sorter, r, flush } = setup();
    sorter.onPolicyUpdate('a', 'default', meta('a', 1));
    sorter.onPolicyUpdate('m', 'default', meta('m', 2));
    sorter.onPolicyUpdate('z', 'default', meta('z', 3));
    r.onEndpointUpdate('ep1', true);
    r.onPolicyMatch('a', 'ep1', 0);
    r.onPolicyMatch('m', 'ep1', 1);
    assert.deepEqual(flush().get('ep1')?.tiers[0]?.ingressPolicies, ['a', 'm']);
    // 'a' stops matching and its number goes to 'z'; the sorted order itself is unchanged.
    r.onPolicyMatchStopped('ep1', 0);
    r.onPolicyMatch('z', 'ep1', 0);
    assert.deepEqual(flush().get('ep1')?.tiers[0]?.ingressPolicies, ['m', 'z']);
  });

  it('host endpoint tiers split untracked, pre-DNAT and forward policies', () => {
    const { sorter, r, flush } = setup();
    sorter.onPolicyUpdate('u', 'default', meta('u', 1, { doNotTrack: true, applyOnForward: true }));
    sorter.onPolicyUpdate('p', 'default', meta('p', 2, { preDNAT: true, applyOnForward: true, egress: false }));
    sorter.onPolicyUpdate('f', 'default', meta('f', 3, { applyOnForward: true }));
    sorter.onPolicyUpdate('n', 'default', meta('n', 4));
    r.onEndpointUpdate('hep', true);
    ['u', 'p', 'f', 'n'].forEach((p, num) => r.onPolicyMatch(p, 'hep', num));
    const t = flush().get('hep');
    assert.deepEqual(
      t?.untrackedTiers.map((x) => x.ingressPolicies),
      [['u']],
    );
    assert.deepEqual(
      t?.preDnatTiers.map((x) => x.ingressPolicies),
      [['p']],
    );
    assert.deepEqual(
      t?.forwardTiers.map((x) => x.ingressPolicies),
      [['f']],
    );
    assert.deepEqual(
      t?.tiers.map((x) => x.ingressPolicies),
      [['f', 'n']],
    );
  });
});
