// Felix's ServiceLoopPrevention (cali-cidr-block from the default BGPConfiguration's
// service CIDRs) and its outgoing-NAT options (NATPortRange, NATOutgoingExclusions,
// IptablesNATOutgoingInterfaceFilter, NATOutgoingAddress and palisade's range of it), as
// felix/rules/nat.go and static.go lay them out at v3.31.7.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { renderIptables } from '../../src/dataplane/backends/iptables/text.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import type { Family } from '../../src/dataplane/render/model.js';
import { config, stateOf } from '../helpers/render-fixtures.js';

const V3 = 'projectcalico.org/v3';
const bgp = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: V3,
  kind: 'BGPConfiguration',
  metadata: { name },
  spec,
});
const pool = {
  apiVersion: V3,
  kind: 'IPPool',
  metadata: { name: 'p' },
  spec: { cidr: '10.65.0.0/16', natOutgoing: true },
};
const node2 = {
  apiVersion: V3,
  kind: 'Node',
  metadata: { name: 'node2' },
  spec: { bgp: { ipv4Address: '10.99.0.12/24', ipv6Address: 'fd99::12/64' } },
};

/** A chain's rules as iptables-save prints them, hash comments left out. */
function chainLines(state: DesiredState, cfg: ReturnType<typeof config>, family: Family, chain: string): string[] {
  return renderIptables(renderRuleset(state, cfg, family, 'iptables'))
    .split('\n')
    .filter((l) => l.startsWith(`-A ${chain} `))
    .map((l) => l.replace(/ -m comment --comment "cali:[\w-]{16}"/, '').slice(`-A ${chain} `.length));
}

describe('ServiceLoopPrevention: cali-cidr-block', () => {
  const state = () =>
    stateOf(
      bgp('default', {
        serviceClusterIPs: [{ cidr: '10.96.0.0/12' }, { cidr: 'fd00:96::/112' }, {}],
        serviceExternalIPs: [{ cidr: '192.0.2.7/24' }],
        serviceLoadBalancerIPs: [{ cidr: '198.51.100.0/24' }],
      }),
      bgp('node.node1', { serviceClusterIPs: [{ cidr: '10.200.0.0/16' }] }),
    );

  it('drops (Felix default) forwarded traffic to every service CIDR of the family, sorted as Felix sorts them, normalised', () => {
    assert.deepEqual(chainLines(state(), config(), 4, 'cali-cidr-block'), [
      '--destination 10.96.0.0/12 -j DROP',
      '--destination 192.0.2.0/24 -j DROP',
      '--destination 198.51.100.0/24 -j DROP',
    ]);
    assert.deepEqual(chainLines(state(), config(), 6, 'cali-cidr-block'), ['--destination fd00:96::/112 -j DROP']);
    // Last in cali-FORWARD, after the forward host-endpoint dispatch.
    assert.deepEqual(chainLines(state(), config(), 4, 'cali-FORWARD').slice(-2), [
      '-j cali-to-hep-forward',
      '-j cali-cidr-block',
    ]);
  });

  it('rejects with Reject; with Disabled, and with no BGPConfiguration, the chain is there and empty, as Felix has it', () => {
    const reject = { ...config(), ServiceLoopPrevention: 'Reject' as const };
    assert.ok(chainLines(state(), reject, 4, 'cali-cidr-block').every((l) => l.endsWith('-j REJECT')));
    const disabled = { ...config(), ServiceLoopPrevention: 'Disabled' as const };
    assert.deepEqual(chainLines(state(), disabled, 4, 'cali-cidr-block'), []);
    const text = renderIptables(renderRuleset(stateOf(pool), config(), 4, 'iptables'));
    assert.match(text, /^:cali-cidr-block - /m);
    assert.match(text, /^-A cali-FORWARD .*-j cali-cidr-block$/m);
  });

  it('a change of the CIDRs marks cali-cidr-block dirty; the same CIDRs again mark nothing', () => {
    const s = new DesiredState();
    const msg = (c: string[]) => ({
      type: 'GlobalBGPConfigUpdate' as const,
      config: { serviceClusterCidrs: c, serviceExternalCidrs: [], serviceLoadbalancerCidrs: [] },
    });
    s.apply([msg(['10.96.0.0/12'])]);
    assert.deepEqual([...s.takeDirty().keys()], ['cidrBlock']);
    s.apply([msg(['10.96.0.0/12'])]);
    assert.deepEqual([...s.takeDirty().keys()], []);
    s.apply([msg([])]);
    assert.deepEqual([...s.takeDirty().keys()], ['cidrBlock']);
    assert.deepEqual(s.serviceCidrs, []);
  });
});

describe("outgoing NAT: Felix's NATOutgoingChain", () => {
  const SRC = '-m set --match-set cali40masq-ipam-pools src -m set ! --match-set cali40network-ip-pools dst';

  it('no rule while the family has no natOutgoing pool, as Felix (D11): the chain is there, empty', () => {
    const plain = { ...pool, spec: { cidr: '10.65.0.0/16', natOutgoing: false } };
    assert.deepEqual(chainLines(stateOf(plain), config(), 4, 'cali-nat-outgoing'), []);
    assert.deepEqual(chainLines(stateOf(pool), config(), 6, 'cali-nat-outgoing'), [], 'an IPv4 pool only');
    assert.match(renderIptables(renderRuleset(stateOf(plain), config(), 4, 'iptables')), /^:cali-nat-outgoing - /m);
  });

  it('one masquerade rule by default', () => {
    assert.deepEqual(chainLines(stateOf(pool), config(), 4, 'cali-nat-outgoing'), [
      `${SRC} -j MASQUERADE --random-fully`,
    ]);
  });

  it('NATPortRange: TCP and UDP translated to the ports and returned, the rest without them', () => {
    const cfg = { ...config(), NATPortRange: { first: 32768, last: 65000 } };
    assert.deepEqual(chainLines(stateOf(pool), cfg, 4, 'cali-nat-outgoing'), [
      `${SRC} -p tcp -j MASQUERADE --to-ports 32768-65000 --random-fully`,
      `${SRC} -p tcp -j RETURN`,
      `${SRC} -p udp -j MASQUERADE --to-ports 32768-65000 --random-fully`,
      `${SRC} -p udp -j RETURN`,
      `${SRC} -j MASQUERADE --random-fully`,
    ]);
  });

  it('NATOutgoingAddress (one, or a range) with ports is SNAT to address:ports; IPv6 still masquerades', () => {
    const cfg = { ...config(), NATPortRange: { first: 40000, last: 40000 }, NATOutgoingAddress: '192.0.2.1-192.0.2.3' };
    const lines = chainLines(stateOf(pool), cfg, 4, 'cali-nat-outgoing');
    assert.equal(lines[0], `${SRC} -p tcp -j SNAT --to-source 192.0.2.1-192.0.2.3:40000-40000 --random-fully`);
    assert.equal(lines.at(-1), `${SRC} -j SNAT --to-source 192.0.2.1-192.0.2.3 --random-fully`);
    const one = { ...config(), NATOutgoingAddress: '192.0.2.1' };
    assert.deepEqual(chainLines(stateOf(pool), one, 4, 'cali-nat-outgoing'), [
      `${SRC} -j SNAT --to-source 192.0.2.1 --random-fully`,
    ]);
    const pool6 = { ...pool, metadata: { name: 'p6' }, spec: { cidr: 'fd00:65::/48', natOutgoing: true } };
    assert.match(chainLines(stateOf(pool6), one, 6, 'cali-nat-outgoing')[0] ?? '', /-j MASQUERADE --random-fully$/);
  });

  it("IPPoolsAndHostIPs leaves every node's address alone: all-hosts-net is kept (IPv6 too) without IPIP", () => {
    const cfg = { ...config(), NATOutgoingExclusions: 'IPPoolsAndHostIPs' as const, Ipv6Support: true };
    const state = stateOf(pool, node2);
    assert.deepEqual(chainLines(state, cfg, 4, 'cali-nat-outgoing'), [
      `${SRC} -m set ! --match-set cali40all-hosts-net dst -j MASQUERADE --random-fully`,
    ]);
    const v4 = renderRuleset(state, cfg, 4, 'iptables');
    assert.deepEqual(v4.sets.get('cali40all-hosts-net')?.members, ['10.99.0.12']);
    const v6 = renderRuleset(state, cfg, 6, 'iptables');
    assert.deepEqual(v6.sets.get('cali60all-hosts-net')?.members, ['fd99::12']);
    assert.equal(renderRuleset(state, config(), 4, 'iptables').sets.get('cali40all-hosts-net'), undefined);
  });

  it('IptablesNATOutgoingInterfaceFilter: only what leaves by that interface (in nftables mode too)', () => {
    const cfg = { ...config(), IptablesNATOutgoingInterfaceFilter: 'eth+' };
    assert.deepEqual(chainLines(stateOf(pool), cfg, 4, 'cali-nat-outgoing'), [
      `${SRC} -o eth+ -j MASQUERADE --random-fully`,
    ]);
    const nft = renderRuleset(stateOf(pool), cfg, 4, 'nftables');
    const rule = nft.tables.nat.get('cali-nat-outgoing')?.rules[0];
    assert.deepEqual(rule?.match.at(-1), { k: 'iface', dir: 'out', name: 'eth+' });
  });
});
