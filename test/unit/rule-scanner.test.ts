// The RuleScanner against Felix's rule_scanner.go behaviour.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseSelector } from 'palisade';

import { matchAllRule } from '../../src/model/convert.js';
import type { InternalPolicy, InternalRule } from '../../src/model/internal.js';
import { type IPSetData, RuleScanner } from '../../src/calc/rule-scanner.js';
import { makeUniqueId } from '../../src/calc/unique-id.js';

function rule(over: Partial<InternalRule>): InternalRule {
  return { ...matchAllRule('allow'), ...over };
}

function policy(inbound: InternalRule[], outbound: InternalRule[] = []): InternalPolicy {
  return {
    key: { tier: 'default', name: 'gnp/p', sortKey: 'p//GlobalNetworkPolicy' },
    namespace: '',
    selector: "app == 'web'",
    inboundRules: inbound,
    outboundRules: outbound,
    types: ['ingress'],
    doNotTrack: false,
    preDNAT: false,
    applyOnForward: false,
  };
}

function scanner() {
  const rs = new RuleScanner();
  const events: string[] = [];
  rs.onIPSetActive = (s: IPSetData) => events.push(`+${s.uid}`);
  rs.onIPSetInactive = (s: IPSetData) => events.push(`-${s.uid}`);
  return { rs, events };
}

const uid = (s: string) => parseSelector(s).uid;

describe('RuleScanner', () => {
  it('replaces selectors by IP-set IDs and counts users across policies', () => {
    const { rs, events } = scanner();
    const r = rule({ srcSelector: "role == 'fe'" });
    const parsed = rs.onPolicyActive('a', policy([r]));
    assert.deepEqual(parsed.inboundRules[0]?.srcIpSetIds, [uid("role == 'fe'")]);
    assert.equal(parsed.originalSelector, 'app == "web"');
    rs.onPolicyActive('b', policy([], [r]));
    assert.deepEqual(events, [`+${uid("role == 'fe'")}`], 'second user: no new event');
    rs.onPolicyInactive('a');
    assert.equal(events.length, 1);
    rs.onPolicyInactive('b');
    assert.deepEqual(events, [`+${uid("role == 'fe'")}`, `-${uid("role == 'fe'")}`]);
    assert.equal(rs.activeIPSets.size, 0);
  });

  it('folds a negated selector into the positive one', () => {
    const { rs } = scanner();
    const p = rs.onPolicyActive('a', policy([rule({ srcSelector: "role == 'fe'", notSrcSelector: "env == 'dev'" })]));
    const r = p.inboundRules[0];
    assert.deepEqual(r?.srcIpSetIds, [uid(`(role == 'fe') && (!(env == 'dev'))`)]);
    assert.deepEqual(r?.notSrcIpSetIds, []);
    assert.equal(rs.activeIPSets.size, 1);
  });

  it('keeps a lone negated selector as its own set', () => {
    const { rs } = scanner();
    const p = rs.onPolicyActive('a', policy([rule({ notDstSelector: "env == 'dev'" })]));
    assert.deepEqual(p.inboundRules[0]?.notDstIpSetIds, [uid("env == 'dev'")]);
    assert.deepEqual(p.inboundRules[0]?.dstIpSetIds, []);
  });

  it('turns named ports into IP-and-port sets filtered by the positive selector', () => {
    const { rs } = scanner();
    const sel = "app == 'db'";
    const both = rs.onPolicyActive(
      'a',
      policy([rule({ protocol: 'tcp', dstSelector: sel, dstPorts: [{ first: 80, last: 80 }, { name: 'http' }] })]),
    );
    const r = both.inboundRules[0];
    const np = makeUniqueId('n', `${uid(sel)},tcp,http`);
    assert.deepEqual(r?.dstNamedPortIpSetIds, [np]);
    assert.deepEqual(r?.dstIpSetIds, [uid(sel)], 'numeric ports still need the selector set');
    assert.deepEqual(r?.dstPorts, [{ first: 80, last: 80 }]);
    assert.equal(rs.activeIPSets.get(np)?.type, 'IP_AND_PORT');
    assert.equal(rs.activeIPSets.get(np)?.namedPort, 'http');

    const onlyNamed = rs.onPolicyActive(
      'a',
      policy([rule({ protocol: 'udp', dstSelector: sel, dstPorts: [{ name: 'dns' }] })]),
    );
    assert.deepEqual(onlyNamed.inboundRules[0]?.dstIpSetIds, [], 'covered by the named-port set');
    assert.deepEqual(onlyNamed.inboundRules[0]?.dstNamedPortIpSetIds, [makeUniqueId('n', `${uid(sel)},udp,dns`)]);

    const noSel = rs.onPolicyActive('c', policy([rule({ dstPorts: [{ name: 'http' }] })]));
    assert.deepEqual(noSel.inboundRules[0]?.dstNamedPortIpSetIds, [makeUniqueId('n', `${uid('all()')},tcp,http`)]);
  });

  it('services become svc / svcnoport sets', () => {
    const { rs } = scanner();
    const p = rs.onPolicyActive(
      'a',
      policy([
        rule({ dstService: { name: 'web', namespace: 'prod' }, srcService: { name: 'cli', namespace: 'prod' } }),
      ]),
    );
    const r = p.inboundRules[0];
    assert.deepEqual(r?.dstIpPortSetIds, [makeUniqueId('svc', 'prod/web')]);
    assert.deepEqual(r?.srcIpSetIds, [makeUniqueId('svcnoport', 'prod/cli')]);
    assert.equal(rs.activeIPSets.get(makeUniqueId('svc', 'prod/web'))?.type, 'IP_AND_PORT');
    assert.equal(rs.activeIPSets.get(makeUniqueId('svcnoport', 'prod/cli'))?.type, 'NET');
  });

  it('a rule change swaps sets: new ones first, then the old ones go', () => {
    const { rs, events } = scanner();
    rs.onPolicyActive('a', policy([rule({ srcSelector: 'has(x)' })]));
    rs.onPolicyActive('a', policy([rule({ srcSelector: 'has(y)' })]));
    assert.deepEqual(events, [`+${uid('has(x)')}`, `+${uid('has(y)')}`, `-${uid('has(x)')}`]);
  });

  it('passes protocol, ICMP, nets and ports through in dataplane form', () => {
    const { rs } = scanner();
    const p = rs.onProfileActive('profile:p', {
      inboundRules: [
        rule({
          action: 'deny',
          protocol: 'icmp',
          icmpType: 8,
          icmpCode: 0,
          srcNets: ['10.0.0.0/8'],
          notProtocol: 6,
          ipVersion: 4,
        }),
      ],
      outboundRules: [],
    });
    const r = p.inboundRules[0];
    assert.deepEqual(r?.protocol, { name: 'icmp' });
    assert.deepEqual(r?.notProtocol, { number: 6 });
    assert.equal(r?.icmpType, 8);
    assert.equal(r?.icmpCode, 0);
    assert.deepEqual(r?.srcNet, ['10.0.0.0/8']);
    assert.equal(r?.ipVersion, 4);
    assert.equal(r?.action, 'deny');
  });
});
