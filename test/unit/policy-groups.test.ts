// Felix's policy groups: consecutive policies with one selector share a chain that
// endpoint chains jump to, kept while any endpoint uses it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { IptablesDesiredBuilder } from '../../src/dataplane/backends/iptables/desired-builder.js';
import { NftDesiredBuilder } from '../../src/dataplane/backends/nft/desired-builder.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { allocateMarks } from '../../src/dataplane/render/marks.js';
import type { Rule } from '../../src/dataplane/render/model.js';
import {
  groupChainName,
  groupChainRules,
  groupPolicies,
  groupUid,
  inlined,
  policyIdString,
} from '../../src/dataplane/render/policy-groups.js';
import { policyChain } from '../../src/dataplane/render/names.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { Harness, np, wep } from '../helpers/calc-fixtures.js';
import { config } from '../helpers/render-fixtures.js';

const marks = allocateMarks(0xffff0000);

describe('policy groups: names and rules', () => {
  it("spells policy IDs as Felix's PolicyID.String()", () => {
    assert.equal(policyIdString('np/prod/allow'), '{Name: allow, Namespace: prod, Kind: NetworkPolicy}');
    assert.equal(policyIdString('gnp/t1.deny'), '{Name: t1.deny, Namespace: , Kind: GlobalNetworkPolicy}');
    assert.equal(policyIdString('knp/default/a'), '{Name: a, Namespace: default, Kind: KubernetesNetworkPolicy}');
    assert.equal(policyIdString('kcnp/c'), '{Name: c, Namespace: , Kind: KubernetesClusterNetworkPolicy}');
  });

  it("hashes a group as Felix's UniqueID (sha3-224 vectors from Python's hashlib)", () => {
    // hashlib.sha3_224 over "<selector>\n<direction>\n<count>\n" and each "<PolicyID.String()>\n",
    // base64url without padding, cut to 20: Felix's MaxPolicyGroupUIDLength.
    const out = { dir: 'out' as const, selector: 'has(app)', policies: ['np/ns1/p1', 'gnp/g2'] };
    assert.equal(groupUid(out), 'bLjwxhEzFykR3bXlgxoX');
    assert.equal(groupChainName(out), 'cali-go-bLjwxhEzFykR3bXlgxoX');
    const inbound = {
      dir: 'in' as const,
      selector: "app == 'web'",
      policies: ['knp/prod/allow-a', 'knp/prod/allow-b', 'gnp/t1.deny'],
    };
    assert.equal(groupChainName(inbound), 'cali-gi-zCsdCmDTy-NRasQqwzv5');
    assert.equal(groupChainName(inbound).length, 28);
  });

  it("before Calico 3.32: the tier first, then each v1 name (vectors from Python's hashlib)", () => {
    // hashlib.sha3_224 over "<tier>\n<selector>\n<direction>\n<count>\n" and each "<v1 name>\n".
    const out = { dir: 'out' as const, tier: 'default', selector: 'has(app)', policies: ['np/ns1/p1', 'gnp/g2'] };
    assert.equal(groupUid(out, 'tiered'), 'YD9OJin4yTRn10emovJN');
    assert.notEqual(groupUid(out, 'tiered'), groupUid(out), 'not the cached 3.32 UID');
    const inbound = {
      dir: 'in' as const,
      tier: 'sec',
      selector: "app == 'web'",
      policies: ['knp/prod/allow-a', 'knp/prod/allow-b', 'gnp/sec.deny'],
    };
    assert.equal(groupChainName(inbound, 'tiered'), 'cali-gi-aZl7oSsf8W-8GDfTdLK_');
    assert.equal(groupUid({ ...inbound, tier: 'other' }, 'tiered') === groupUid(inbound, 'tiered'), false);
  });

  it('groups runs of one selector, in order, and inlines a group of one', () => {
    const sel: Record<string, string> = { a: 'x', b: 'x', c: 'y', d: 'x', e: 'x' };
    const groups = groupPolicies(['gnp/a', 'gnp/b', 'gnp/c', 'gnp/d', 'gnp/e'], 'in', (id) => sel[id.slice(4)] ?? '');
    assert.deepEqual(
      groups.map((g) => [g.selector, g.policies.join(','), inlined(g)]),
      [
        ['x', 'gnp/a,gnp/b', false],
        ['y', 'gnp/c', true],
        ['x', 'gnp/d,gnp/e', false],
      ],
    );
    // Unknown policies have the selector '' (Felix's map lookup), so they group together.
    assert.equal(groupPolicies(['gnp/u', 'gnp/v'], 'out', () => '').length, 1);
  });

  it("jumps to each policy while no verdict is set and returns on one every fifth (Felix's returnStride)", () => {
    const policies = Array.from({ length: 7 }, (_, i) => `gnp/p${i}`);
    const rules = groupChainRules({ dir: 'in', selector: 's', policies }, marks, false);
    const verdict = marks.accept | marks.pass;
    const jump = (i: number, first: boolean): Rule => ({
      match: first ? [] : [{ k: 'mark', value: 0, mask: verdict }],
      action: { k: 'jump', chain: `cali-pi-gnp/p${i}` },
    });
    assert.deepEqual(rules, [
      jump(0, true),
      jump(1, false),
      jump(2, false),
      jump(3, false),
      jump(4, false),
      {
        match: [{ k: 'mark', value: 0, mask: verdict, neg: true }],
        action: { k: 'return' },
        comment: 'Return on verdict',
      },
      jump(5, true),
      jump(6, false),
    ]);
  });
});

// Three policies in one tier: two with the workloads' selector, then one with another.
const resources = (thirdSelector: string) => [
  np('a-web', { selector: "app == 'web'", ingress: [{ action: 'Allow' }] }),
  np('b-web', { selector: "app == 'web'", ingress: [{ action: 'Allow' }] }),
  np('c-other', { selector: thirdSelector, ingress: [{ action: 'Allow' }] }),
];
const workload = (name: string, ip: string) => wep(name, 'node1', ip, { app: 'web', tier: 'front' });

function chainNames(rs: ReturnType<typeof renderRuleset>): string[] {
  return [...rs.tables.filter.keys()].filter((n) => n.startsWith('cali-g')).sort();
}

describe('policy groups: rendering', () => {
  it("makes workload chains jump to the group's chain, and the group's chain to each policy", () => {
    const h = new Harness();
    h.put(...resources("tier == 'front'"), workload('w1', '10.65.0.2'));
    const state = new DesiredState();
    state.apply(h.flush());
    for (const style of ['nftables', 'iptables'] as const) {
      const rs = renderRuleset(state, config(), 4, style);
      const groups = chainNames(rs);
      assert.equal(groups.length, 1, style);
      const group = groups[0] as string;
      assert.match(group, /^cali-gi-[A-Za-z0-9_-]{20}$/);
      const jumps = (chain: string) =>
        (rs.tables.filter.get(chain)?.rules ?? []).flatMap((r) => (r.action.k === 'jump' ? [r.action.chain] : []));
      const tw = [...rs.tables.filter.keys()].find((n) => n.startsWith('cali-tw-')) as string;
      assert.deepEqual(
        jumps(tw).filter((c) => c.startsWith('cali-p') || c.startsWith('cali-g')),
        [group, 'cali-pi-np/prod/c-other', 'cali-pri-kns.prod'],
        style,
      );
      assert.deepEqual(jumps(group), ['cali-pi-np/prod/a-web', 'cali-pi-np/prod/b-web'], style);
    }
  });

  it('on Calico 3.31 the chains are named as its Felix names them: "<tier>/<v1 name>" (issue 52)', () => {
    const h = new Harness();
    h.put(...resources("tier == 'front'"), workload('w1', '10.65.0.2'));
    const state = new DesiredState();
    state.apply(h.flush());
    const rs = renderRuleset(state, { ...config(), CalicoVersion: 'v3.31.7' }, 4, 'nftables');
    const jumps = (chain: string) =>
      (rs.tables.filter.get(chain)?.rules ?? []).flatMap((r) => (r.action.k === 'jump' ? [r.action.chain] : []));
    const tw = [...rs.tables.filter.keys()].find((n) => n.startsWith('cali-tw-')) as string;
    const group = chainNames(rs)[0] as string;
    assert.deepEqual(
      jumps(tw).filter((c) => c.startsWith('cali-p') || c.startsWith('cali-g')),
      [group, 'cali-pi-default/prod/default.c-other', 'cali-pri-kns.prod'],
    );
    assert.deepEqual(jumps(group), ['cali-pi-default/prod/default.a-web', 'cali-pi-default/prod/default.b-web']);
    for (const c of ['cali-pi-default/prod/default.a-web', 'cali-po-default/prod/default.c-other'])
      assert.ok(rs.tables.filter.has(c), c);
    assert.ok(![...rs.tables.filter.keys()].some((n) => n.startsWith('cali-pi-np/')), 'no 3.32 names');
    const modern = chainNames(renderRuleset(state, config(), 4, 'nftables'))[0];
    assert.notEqual(group, modern, "the group's UID has the tier in it");
    // iptables' 28 characters: hashed as Felix hashes a long name.
    const ipt = renderRuleset(state, { ...config(), CalicoVersion: 'v3.31.7' }, 4, 'iptables');
    assert.ok(ipt.tables.filter.has(policyChain('in', 'default/prod/default.a-web', true)));
    assert.match(policyChain('in', 'default/prod/default.a-web', true), /^cali-pi-_[A-Za-z0-9_-]{19}$/);
  });

  for (const style of ['nftables', 'iptables'] as const) {
    it(`keeps a group's chain while any endpoint uses it, and regroups on a selector change (${style})`, () => {
      const h = new Harness();
      const state = new DesiredState();
      const builder =
        style === 'nftables' ? new NftDesiredBuilder(config(), 4) : new IptablesDesiredBuilder(config(), 4);
      const groupsBuilt = () =>
        style === 'nftables'
          ? [...(builder as NftDesiredBuilder).desired.chains.keys()]
              .filter((n) => n.startsWith('filter-cali-g'))
              .map((n) => n.slice('filter-'.length))
              .sort()
          : [...((builder as IptablesDesiredBuilder).desired.chains.get('filter')?.keys() ?? [])]
              .filter((n) => n.startsWith('cali-g'))
              .sort();
      const step = () => {
        state.apply(h.flush());
        builder.update(state, state.takeDirty());
        const full = chainNames(renderRuleset(state, config(), 4, style));
        if (style === 'iptables') (builder as IptablesDesiredBuilder).render();
        assert.deepEqual(groupsBuilt(), full);
        return full;
      };
      builder.rebuild(state);
      h.put(...resources("tier == 'front'"), workload('w1', '10.65.0.2'), workload('w2', '10.65.0.3'));
      const [first] = step();
      assert.ok(first);
      h.del(workload('w1', '10.65.0.2'));
      assert.deepEqual(step(), [first], 'w2 still uses the group');
      // The third policy now has the group's selector: one group of three, under a new name.
      h.put(...resources("app == 'web'"));
      const regrouped = step();
      assert.equal(regrouped.length, 1);
      assert.notEqual(regrouped[0], first);
      h.del(workload('w2', '10.65.0.3'));
      assert.deepEqual(step(), [], 'no endpoint uses a group');
    });
  }
});
