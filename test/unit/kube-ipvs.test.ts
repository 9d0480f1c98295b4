// kube-proxy IPVS support (render/kube-ipvs.ts, render/endpoint-marks.ts): Felix's mark
// bits, its endpoint numbering and the chains, and that they follow the endpoints.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { resolveKubeIpvs, kubeIpvsChanged } from '../../src/agent/kube-proxy-ipvs.js';
import { EndpointMarkMapper, fnv1_32, numberToMark } from '../../src/dataplane/render/endpoint-marks.js';
import { allocateMarks, MarkMaskError } from '../../src/dataplane/render/marks.js';
import { PARAMS } from '../../src/config/params.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { config as loadConfig } from '../helpers/render-fixtures.js';

describe('kube-proxy IPVS: marks', () => {
  it("takes Felix's endpoint bits: what the mask leaves, its lowest the non-Calico mark", () => {
    const m = allocateMarks(0xffff0000, false, true);
    assert.equal(m.endpoint, 0xffe00000);
    assert.equal(m.nonCaliEndpoint, 0x200000);
    const wg = allocateMarks(0xffff0000, true, true);
    assert.equal(wg.endpoint, 0xffc00000);
    assert.equal(wg.nonCaliEndpoint, 0x400000);
    assert.equal(allocateMarks(0xffff0000).nonCaliEndpoint, 0, 'no non-Calico mark without IPVS');
    assert.throws(
      () => allocateMarks(0x1f0000, false, true),
      (e) => e instanceof MarkMaskError && /no bit for the endpoint mark/.test(e.message),
    );
  });

  it("numbers endpoints as Felix's mapper: FNV-1 of the name, past 0 and the reserved 1, stable until released", () => {
    assert.equal(fnv1_32(''), 0x811c9dc5);
    assert.equal(fnv1_32('a'), 0x050c5d7e, 'FNV-1, not FNV-1a');
    assert.equal(numberToMark(0xffe00000, 1), 0x200000);
    assert.equal(numberToMark(0xffe00000, 3), 0x600000);
    assert.equal(numberToMark(0xf0f00000, 0x1f), 0x10f00000);
    const mapper = new EndpointMarkMapper(0xffe00000);
    const mark = mapper.markOf('cali1234') as number;
    assert.equal(mark, numberToMark(0xffe00000, fnv1_32('cali1234') % 2048));
    assert.equal(mapper.markOf('cali1234'), mark, 'stable');
    // Two bits: numbers 0 (never), 1 (non-Calico), 2 and 3; a third endpoint gets none.
    const small = new EndpointMarkMapper(0x3);
    const a = small.markOf('a');
    const b = small.markOf('b');
    assert.deepEqual(new Set([a, b]), new Set([2, 3]));
    assert.equal(small.markOf('c'), undefined);
    small.retain(new Set(['b']));
    assert.equal(small.markOf('c'), a, 'a released number is taken again');
  });
});

describe('kube-proxy IPVS: the agent follows the device (Felix restarts on a change)', () => {
  it('resolves Auto from kube-ipvs0 and sees a change', () => {
    assert.equal(resolveKubeIpvs({ KubeIPVSSupport: 'Auto' }, true).KubeIPVSSupport, 'Enabled');
    assert.equal(resolveKubeIpvs({ KubeIPVSSupport: 'Auto' }, false).KubeIPVSSupport, 'Auto');
    assert.equal(kubeIpvsChanged({ KubeIPVSSupport: 'Enabled' }, { KubeIPVSSupport: 'Auto' }, false), true);
    assert.equal(kubeIpvsChanged({ KubeIPVSSupport: 'Auto' }, { KubeIPVSSupport: 'Auto' }, true), true);
    assert.equal(kubeIpvsChanged({ KubeIPVSSupport: 'Enabled' }, { KubeIPVSSupport: 'Auto' }, true), false);
    assert.equal(kubeIpvsChanged({ KubeIPVSSupport: 'Enabled' }, { KubeIPVSSupport: 'Enabled' }, false), false);
  });
});

function state(): DesiredState {
  const s = new DesiredState();
  const wep = (n: number) => ({
    type: 'WorkloadEndpointUpdate' as const,
    id: { orchestratorId: 'k8s', workloadId: `default/pod${n}`, endpointId: 'eth0' },
    endpoint: {
      state: 'active',
      name: `cali${n}`,
      mac: '',
      profileIds: [],
      tiers: [],
      ipv4Nets: [`10.65.0.${n}/32`],
      ipv6Nets: [],
      ipv4Nat: [],
      ipv6Nat: [],
      allowSpoofedSourcePrefixes: [],
    },
  });
  s.apply([wep(1), wep(2)] as never);
  s.setHostInterfaces(
    new Map([
      ['eth0', ['192.168.9.1/24', 'fd00::1/64']],
      ['lo', ['127.0.0.1/8']],
    ]),
  );
  return s;
}

describe('kube-proxy IPVS: chains', () => {
  it("renders Felix's chains, this-host and a mark per endpoint only with IPVS support", () => {
    const on = renderRuleset(state(), { ...loadConfig(), KubeIPVSSupport: 'Enabled' }, 4, 'iptables');
    const filter = on.tables.filter;
    for (const c of [
      'cali-forward-check',
      'cali-forward-endpoint-mark',
      'cali-set-endpoint-mark',
      'cali-from-endpoint-mark',
    ])
      assert.ok(filter.has(c), c);
    assert.deepEqual(on.sets.get('cali40this-host')?.members, ['127.0.0.1', '192.168.9.1']);
    assert.equal(on.sets.get('cali40this-host')?.kind, 'ip');
    const input = filter.get('cali-INPUT')?.rules ?? [];
    assert.ok(input.some((r) => r.action.k === 'jump' && r.action.chain === 'cali-forward-check'));
    const from = filter.get('cali-from-endpoint-mark')?.rules ?? [];
    assert.deepEqual(
      from.map((r) => (r.action.k === 'goto' ? r.action.chain : r.action.k)),
      ['cali-fw-cali1', 'cali-fw-cali2', 'drop'],
    );
    const sm = filter.get('cali-sm-cali1')?.rules[0]?.action;
    const mark = from[0]?.match[0];
    assert.ok(sm?.k === 'setMark' && mark?.k === 'mark' && sm.mark === mark.value, 'the set and the dispatch agree');
    assert.equal(on.maps.find((m) => m.name === 'cali-set-endpoint-mark')?.entries.size, 2);
    const post = on.tables.mangle.get('cali-POSTROUTING')?.rules ?? [];
    assert.ok(post.some((r) => r.match[0]?.k === 'mark' && r.match[0].mask === 0xffe00000 && r.match[0].neg));

    const off = renderRuleset(state(), loadConfig(), 4, 'iptables');
    assert.ok(!off.tables.filter.has('cali-forward-check'));
    assert.ok(!off.tables.filter.has('cali-sm-cali1'));
    assert.ok(!off.sets.has('cali40this-host'));
  });
});

describe('kube-proxy IPVS: its parameters refuse garbage', () => {
  it('KubeIPVSSupport and KubeNodePortRanges', () => {
    assert.equal(PARAMS.KubeIPVSSupport.parse('enabled'), 'Enabled');
    assert.throws(() => PARAMS.KubeIPVSSupport.parse('Disabled'), /unknown option|one of/);
    assert.throws(() => PARAMS.KubeIPVSSupport.parse('\u0000'), /unknown option|one of/);
    assert.deepEqual(PARAMS.KubeNodePortRanges.parse('30000:32767,80'), [
      { first: 30000, last: 32767 },
      { first: 80, last: 80 },
    ]);
    for (const bad of ['x:y', '30000:20000', '70000', '1:2:3', ''])
      assert.throws(() => PARAMS.KubeNodePortRanges.parse(bad), /not a valid port range/, bad);
  });
});
