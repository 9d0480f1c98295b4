// Rendering of the calc graph's output into Felix's rule model and its two syntaxes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';

import { coveringMembers } from '../../src/dataplane/render/cover.js';
import { workloadChains } from '../../src/dataplane/render/endpoints.js';
import { dispatchChains } from '../../src/dataplane/backends/iptables/dispatch.js';
import { iptablesRuleLines, renderIpsets, renderIptables } from '../../src/dataplane/backends/iptables/text.js';
import { allocateMarks } from '../../src/dataplane/render/marks.js';
import type { Rule, Ruleset } from '../../src/dataplane/render/model.js';
import { ipSetName, lengthLimitedId, policyChain, profileChain, ruleHashes } from '../../src/dataplane/render/names.js';
import { nftElement, renderNft } from '../../src/dataplane/backends/nft/text.js';
import { DEFAULT_ACTIONS, logPrefix, portChunks, renderProtoRule } from '../../src/dataplane/render/policy.js';
import { nftComment } from '../../src/dataplane/render/comments.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { NativeError } from '../../src/native/errors.js';
import { native } from '../../src/native/load.js';
import { type PolicyKind, policyId } from '../../src/model/names.js';
import type { WorkloadEndpoint } from '../../src/proto/messages.js';
import { gnp, gns, np, profile, tier, wep } from '../helpers/calc-fixtures.js';
import { config, poolRoute, protoRule, stateOf } from '../helpers/render-fixtures.js';

const marks = allocateMarks(0xffff0000);
const v4 = { family: 4 as const, marks, iptables: false, actions: DEFAULT_ACTIONS };
const v4ipt = { ...v4, iptables: true };

describe('dataplane render: names and marks', () => {
  // Vectors computed by Felix's own GetLengthLimitedID and PolicyID.ID() (libcalico-go
  // hash, felix/types), run on these inputs; the gnp "long-policy-name-that-gets-hashed"
  // one is also in Felix's rules/policy_test.go.
  const FELIX_VECTORS: Array<[PolicyKind, string, string, string, string]> = [
    ['NetworkPolicy', 'demo', 'backend', 'cali-pi-np/demo/backend', 'cali-po-np/demo/backend'],
    ['GlobalNetworkPolicy', '', 'security.block-bad', 'cali-pi-_vhyJ-5jCoE2GAxX2EMz', 'cali-po-gnp/security.block-bad'],
    ['StagedNetworkPolicy', 'prod', 'staged-allow', 'cali-pi-_UJHX9DlZWh91mldlp7e', 'cali-po-snp/prod/staged-allow'],
    ['StagedGlobalNetworkPolicy', '', 'staged-global', 'cali-pi-sgnp/staged-global', 'cali-po-sgnp/staged-global'],
    [
      'StagedKubernetesNetworkPolicy',
      'prod',
      'k8s-staged',
      'cali-pi-sknp/prod/k8s-staged',
      'cali-po-sknp/prod/k8s-staged',
    ],
    [
      'KubernetesNetworkPolicy',
      'default',
      'allow-frontend-to-backend-on-8080',
      'cali-pi-_hhV1dNVTfEgXY0qI4Wg',
      'cali-po-knp/default/allow-frontend-to-backend-on-8080',
    ],
    [
      'KubernetesClusterNetworkPolicy',
      '',
      'cluster-deny-all',
      'cali-pi-_BL8IDCtUBmDOIZM3iMH',
      'cali-po-kcnp/cluster-deny-all',
    ],
    [
      'GlobalNetworkPolicy',
      '',
      'long-policy-name-that-gets-hashed',
      'cali-pi-_PymyFHQQg3808jiz1OJ',
      'cali-po-gnp/long-policy-name-that-gets-hashed',
    ],
    ['NetworkPolicy', 'x', '_bcdefghijklm', 'cali-pi-np/x/_bcdefghijklm', 'cali-po-np/x/_bcdefghijklm'],
  ];

  it("names policy chains from Felix's PolicyID.ID(), hashed to 28 in iptables mode only (Felix's vectors)", () => {
    for (const [kind, ns, name, ipt, nft] of FELIX_VECTORS) {
      const id = policyId(kind, ns, name);
      assert.equal(policyChain('in', id, true), ipt, `${kind} ${ns}/${name} iptables`);
      assert.equal(policyChain('out', id, false), nft, `${kind} ${ns}/${name} nftables`);
    }
    assert.equal(profileChain('in', 'kns.demo', true), 'cali-pri-kns.demo');
    assert.equal(profileChain('in', 'ksa.demo.a-very-long-service-account-name', true), 'cali-pri-_47xxVCSGx8oY1MKMnP');
    assert.equal(
      profileChain('out', 'ksa.demo.a-very-long-service-account-name', false),
      'cali-pro-ksa.demo.a-very-long-service-account-name',
    );
  });

  it('limits names as Felix\'s GetLengthLimitedID: "_" names hashed only when they fill the limit exactly', () => {
    assert.equal(lengthLimitedId('cali-tw-', 'cali12345678901'), 'cali-tw-cali12345678901');
    assert.equal(lengthLimitedId('cali-pri-', '_x'), 'cali-pri-_x');
    assert.equal(lengthLimitedId('cali-pri-', ''), 'cali-pri-_');
    assert.equal(lengthLimitedId('cali-pi-', '_234567890123456789'), 'cali-pi-_234567890123456789');
    assert.equal(lengthLimitedId('cali-pi-', '_2345678901234567890'), 'cali-pi-_NRWGJbcgjLYWITkwn5H');
    assert.equal(ipSetName(4, 's:abcdefghijklmnopqrstuvwxyz0123456789'), 'cali40s:abcdefghijklmnopqrstuvw');
  });

  it("builds Log rules' prefixes as Felix's generateLogPrefix", () => {
    const owner = { kind: 'np', name: 'web', namespace: 'prod', tier: 'security' };
    assert.equal(logPrefix('', owner), 'calico-packet');
    assert.equal(logPrefix('drop-%t-%k-%n-%p', owner), 'drop-security-np-web-prod/web');
    assert.equal(logPrefix('%p %x', { ...owner, kind: 'gnp', namespace: '' }), 'web %x');
    const [rule] = renderProtoRule(protoRule({ action: 'log' }), {
      ...v4ipt,
      log: { prefix: 'p %k', rateLimit: '5/minute', burst: 0 },
      owner,
    });
    assert.match(
      iptablesRuleLines('cali-pi-x', [rule as Rule], 4)[0] ?? '',
      / -m limit --limit 5\/minute -j LOG --log-prefix "p np: " --log-level 5$/,
    );
  });

  it('allocates marks from the mask, lowest bits first, and refuses a mask too small', () => {
    assert.deepEqual(marks, {
      accept: 0x10000,
      pass: 0x20000,
      drop: 0x40000,
      scratch0: 0x80000,
      scratch1: 0x100000,
      all: 0x1b0000, // Felix's allCalicoMarkBits: not the drop bit (as Felix v3.31.7 programs it)
      wireguard: 0,
      endpoint: 0xffe00000, // Felix's MarkEndpoint: the rest (kube-ipvs.test.ts)
      nonCaliEndpoint: 0,
    });
    assert.equal(allocateMarks(0xf0f00000).scratch1, 0x10000000);
    assert.throws(() => allocateMarks(0xf000), /needs at least 5/);
    // With WireGuard on, the next bit is WireGuard's (Felix's markWireguard; not cleared with the rest).
    assert.deepEqual(
      [allocateMarks(0xffff0000, true).wireguard, allocateMarks(0xffff0000, true).all],
      [0x200000, 0x1b0000],
    );
    assert.throws(() => allocateMarks(0x1f0000, true), /needs at least 6 with WireGuard on/);
  });

  it('chains rule hashes: same rule, different position or chain, different hash', () => {
    const [a, b] = ruleHashes('c1', ['-j ACCEPT', '-j ACCEPT']);
    assert.notEqual(a, b);
    assert.notEqual(ruleHashes('c2', ['-j ACCEPT'])[0], a);
    assert.equal(ruleHashes('c1', ['-j ACCEPT'])[0], a);
    assert.match(a as string, /^[A-Za-z0-9_-]{16}$/);
    // Felix's definition, sha224 over the previous digest and the rule, for any text: long
    // ones (past the reused buffer) and multi-byte ones included.
    const felix = (chain: string, texts: string[]) => {
      let prev = createHash('sha224').update(chain).digest();
      return texts.map((t) => {
        prev = createHash('sha224').update(prev).update(t).digest();
        return prev.toString('base64url').slice(0, 16);
      });
    };
    const texts = ['-j ACCEPT', 'é'.repeat(40_000), 'x'.repeat(65_500), 'x'.repeat(70_000), '', 'ü-j DROP'];
    assert.deepEqual(ruleHashes('cali-tw-eth0', texts), felix('cali-tw-eth0', texts));
    // The native digest reads each text into a reused buffer of 256 bytes at first: texts
    // ending on and around that edge in one- to four-byte characters, an emoji's
    // surrogate pair, a lone surrogate (written as U+FFFD, as Node's crypto does).
    const edges: string[] = [];
    for (const ch of ['x', 'é', '€', '😀'])
      for (let n = 240; n < 270; n++) edges.push('a'.repeat(n - Buffer.byteLength(ch)) + ch);
    edges.push('\ud800 lone', '');
    assert.deepEqual(ruleHashes('', edges), felix('', edges));
    assert.deepEqual(ruleHashes('é'.repeat(300), edges), felix('é'.repeat(300), edges));
    assert.deepEqual(ruleHashes('c', []), []);
    // Random texts over all of ASCII and some beyond, in chains of 0-12 rules.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = [...' !"#$%&()*+,-./09:;<=>?@AZ[\\]^_`az{|}~', 'ü', '☃', '😀'];
    for (let t = 0; t < 300; t++) {
      const chain = Array.from({ length: rand(30) }, () => alphabet[rand(alphabet.length)]).join('');
      const rules = Array.from({ length: rand(13) }, () =>
        Array.from({ length: rand(400) }, () => alphabet[rand(alphabet.length)]).join(''),
      );
      assert.deepEqual(ruleHashes(chain, rules), felix(chain, rules), `chain ${JSON.stringify(chain)}`);
    }
  });

  it('the native rule hashes refuse what is not a seed and a list of strings, with EINVAL', () => {
    const refused = (f: () => unknown) =>
      assert.throws(f, (e: unknown) => e instanceof NativeError && e.code === 'EINVAL' && e.op === 'ruleHashes');
    const raw = native as unknown as { ruleHashes: (...args: unknown[]) => string };
    refused(() => raw.ruleHashes());
    refused(() => raw.ruleHashes(1, []));
    refused(() => raw.ruleHashes('c', 'not a list'));
    refused(() => raw.ruleHashes('c', ['ok', 2]));
  });
});

describe('dataplane render: policy rules', () => {
  it('renders allow as set-accept-mark then return (one nft rule, two iptables rules), deny as drop, pass as the pass mark', () => {
    const allow = protoRule({ action: 'allow', protocol: { name: 'tcp' }, dstPorts: [{ first: 80, last: 80 }] });
    const match = [
      { k: 'proto', proto: 6 },
      { k: 'ports', dir: 'dst', ranges: [{ first: 80, last: 80 }] },
    ];
    assert.deepEqual(renderProtoRule(allow, v4), [
      { match, action: { k: 'setMark', mark: 0x10000, mask: 0x10000, then: { k: 'return' } } },
    ]);
    assert.deepEqual(renderProtoRule(allow, v4ipt), [
      { match, action: { k: 'setMark', mark: 0x10000, mask: 0x10000 } },
      {
        match: [{ k: 'mark', value: 0x10000, mask: 0x10000 }],
        action: { k: 'return' },
        comment: 'Return if policy accepted',
      },
    ]);
    assert.deepEqual(renderProtoRule(protoRule({ action: 'deny' }), v4), [{ match: [], action: { k: 'drop' } }]);
    assert.deepEqual(renderProtoRule(protoRule({ action: 'next-tier' }), v4)[0]?.action, {
      k: 'setMark',
      mark: 0x20000,
      mask: 0x20000,
      then: { k: 'return' },
    });
  });

  it('drops a rule whose negated CIDRs are all of the other family, or a catch-all, as Felix', () => {
    for (const notDstNet of [['fd00::/8'], ['0.0.0.0/0'], ['10.0.0.0/8', '0.0.0.0/0']])
      assert.deepEqual(renderProtoRule(protoRule({ action: 'allow', notDstNet }), v4), [], notDstNet.join());
    assert.notDeepEqual(renderProtoRule(protoRule({ action: 'allow', notDstNet: ['fd00::/8', '10.0.0.0/8'] }), v4), []);
  });

  it('leaves out rules of the other IP version, or whose CIDRs are all of the other version', () => {
    assert.deepEqual(renderProtoRule(protoRule({ ipVersion: 6 }), v4), []);
    assert.deepEqual(renderProtoRule(protoRule({ srcNet: ['fd00::/64'] }), v4), []);
    assert.deepEqual(renderProtoRule(protoRule({ protocol: { name: 'icmpv6' } }), v4), []);
    const mixed = renderProtoRule(protoRule({ action: 'deny', srcNet: ['fd00::/64', '10.0.0.0/8'] }), v4);
    assert.deepEqual(mixed, [{ match: [{ k: 'net', dir: 'src', nets: ['10.0.0.0/8'] }], action: { k: 'drop' } }]);
    // Negated CIDRs all of the other version drop the rule too (Felix's filterNets).
    const negated = protoRule({ action: 'deny', srcNet: ['10.0.0.0/8'], notDstNet: ['fd00::1/128'] });
    assert.deepEqual(renderProtoRule(negated, v4), []);
  });

  it("ORs numeric ports with named ports through the scratch marks, the numeric ones with their protocol (as Felix's AppendPortMatchBlock)", () => {
    const rules = renderProtoRule(
      protoRule({
        action: 'deny',
        protocol: { name: 'tcp' },
        dstPorts: [{ first: 80, last: 81 }],
        dstNamedPortIpSetIds: ['n:abc'],
      }),
      v4,
    );
    assert.deepEqual(rules, [
      { match: [], action: { k: 'setMark', mark: 0x80000, mask: 0x180000 } },
      {
        match: [
          { k: 'mark', value: 0x80000, mask: 0x80000 },
          { k: 'proto', proto: 6 },
          { k: 'ports', dir: 'dst', ranges: [{ first: 80, last: 81 }] },
        ],
        action: { k: 'setMark', mark: 0x100000, mask: 0x100000 },
      },
      {
        match: [
          { k: 'mark', value: 0x80000, mask: 0x80000 },
          { k: 'ipPortSet', dir: 'dst', set: 'cali40n:abc' },
        ],
        action: { k: 'setMark', mark: 0x100000, mask: 0x100000 },
      },
      { match: [{ k: 'mark', value: 0, mask: 0x100000 }], action: { k: 'setMark', mark: 0, mask: 0x80000 } },
      { match: [], action: { k: 'setMark', mark: 0, mask: 0x100000 } },
      {
        match: [
          { k: 'mark', value: 0x80000, mask: 0x80000 },
          { k: 'proto', proto: 6 },
        ],
        action: { k: 'drop' },
      },
    ]);
  });

  it('iptables style: several CIDRs become a block, several negated CIDRs one block each, ports in multiport chunks', () => {
    const ipt = renderProtoRule(
      protoRule({
        action: 'deny',
        srcNet: ['10.0.0.0/8', '192.168.0.0/16'],
        notDstNet: ['10.1.0.0/16', '10.2.0.0/16'],
      }),
      v4ipt,
    );
    const setsOne = ipt.filter((r) => r.action.k === 'setMark' && r.action.mark === marks.scratch1);
    assert.equal(setsOne.length, 4);
    assert.equal(ipt.at(-1)?.action.k, 'drop');
    // One CIDR and one negated CIDR of the same direction: iptables takes one -s per rule, so
    // the negated one is a block (rendered into one rule, it lost the positive CIDR).
    const both = renderProtoRule(
      protoRule({ action: 'allow', srcNet: ['10.0.0.0/8'], notSrcNet: ['10.1.0.0/16'] }),
      v4ipt,
    );
    for (const r of both) assert.ok(r.match.filter((m) => m.k === 'net' && m.dir === 'src').length <= 1);
    const final = both.find((r) => r.action.k === 'setMark' && r.action.mark === marks.accept);
    assert.deepEqual(
      final?.match.filter((m) => m.k === 'net'),
      [{ k: 'net', dir: 'src', nets: ['10.0.0.0/8'] }],
    );
    assert.ok(both.some((r) => r.match.some((m) => m.k === 'net' && m.neg && m.nets[0] === '10.1.0.0/16')));
    // nftables splits short disjoint lists into one rule each (no anonymous set), keeps
    // overlapping ones as a set, and turns a negated list into one negated match per value.
    const nft = renderProtoRule(protoRule({ action: 'deny', srcNet: ['10.0.0.0/8', '192.168.0.0/16'] }), v4);
    assert.deepEqual(
      nft.map((r) => r.match),
      [[{ k: 'net', dir: 'src', nets: ['10.0.0.0/8'] }], [{ k: 'net', dir: 'src', nets: ['192.168.0.0/16'] }]],
    );
    assert.equal(
      renderProtoRule(
        protoRule({
          action: 'deny',
          protocol: { name: 'tcp' },
          dstPorts: [
            { first: 80, last: 90 },
            { first: 85, last: 85 },
          ],
        }),
        v4,
      ).length,
      1,
    );
    assert.deepEqual(
      renderProtoRule(protoRule({ action: 'deny', notSrcNet: ['10.0.0.0/8', '11.0.0.0/8'] }), v4)[0]?.match,
      [
        { k: 'net', dir: 'src', nets: ['10.0.0.0/8'], neg: true },
        { k: 'net', dir: 'src', nets: ['11.0.0.0/8'], neg: true },
      ],
    );
    const many = Array.from({ length: 9 }, (_, i) => ({ first: 1000 + i, last: 1000 + i }));
    assert.equal(
      renderProtoRule(protoRule({ action: 'deny', protocol: { name: 'tcp' }, dstPorts: many }), v4).length,
      1,
      'long lists stay one rule with a set',
    );
    const ports = Array.from({ length: 20 }, (_, i) => ({ first: 1000 + i * 10, last: 1000 + i * 10 + (i % 2) }));
    const chunks = portChunks(ports);
    assert.ok(chunks.every((c) => c.reduce((n, r) => n + (r.first === r.last ? 1 : 2), 0) <= 15));
    assert.deepEqual(chunks.flat(), ports);
  });
});

describe('dataplane render: endpoints and dispatch', () => {
  const ep: WorkloadEndpoint = {
    state: 'active',
    name: 'cali0123456789a',
    mac: '',
    profileIds: ['kns.prod'],
    ipv4Nets: ['10.0.0.1/32'],
    ipv6Nets: [],
    ipv4Nat: [],
    ipv6Nat: [],
    allowSpoofedSourcePrefixes: [],
    tiers: [
      { name: 'security', ingressPolicies: ['gnp/security.a'], egressPolicies: [], defaultAction: 'Pass' },
      {
        name: 'default',
        ingressPolicies: ['np/prod/b', 'np/prod/c'],
        egressPolicies: ['np/prod/c'],
        defaultAction: 'Deny',
      },
    ],
  };

  it('lays out tiers in order, end-of-tier drop unless the tier passes, then profiles, then drop', () => {
    const [tw, fw] = workloadChains(ep, v4ipt);
    const matchOf = (m: Rule['match'][number]) =>
      m.k === 'mark' ? `mark&${m.mask.toString(16)}==${m.value.toString(16)}` : m.k;
    const brief = (r: Rule) =>
      `${r.match.map(matchOf).join(',')} -> ${r.action.k}${'chain' in r.action ? ` ${r.action.chain}` : ''}`;
    assert.equal(tw?.name, 'cali-tw-cali0123456789a');
    assert.deepEqual(tw?.rules.map(brief), [
      'ct -> accept',
      'ct -> drop',
      ' -> setMark',
      ' -> setMark',
      'mark&20000==0 -> jump cali-pi-gnp/security.a',
      'mark&10000==10000 -> return',
      ' -> setMark',
      'mark&20000==0 -> jump cali-pi-np/prod/b',
      'mark&10000==10000 -> return',
      'mark&20000==0 -> jump cali-pi-np/prod/c',
      'mark&10000==10000 -> return',
      'mark&20000==0 -> drop',
      ' -> jump cali-pri-kns.prod',
      'mark&10000==10000 -> return',
      ' -> drop',
    ]);
    assert.ok(fw?.rules.some((r) => r.comment?.startsWith('Drop VXLAN')));
    assert.deepEqual(
      workloadChains({ ...ep, state: 'down' }, v4ipt).map((c) => c.rules.map((r) => r.action.k)),
      [['drop'], ['drop']],
    );
  });

  it('dispatches by verdict map in nftables and by one goto per interface in iptables, both failing closed', () => {
    const state = stateOf(
      profile('kns.prod', {}),
      wep('a', 'node1', '10.0.0.1', {}),
      wep('b', 'node1', '10.0.0.2', {}),
      wep('r', 'node2', '10.0.1.1', {}),
    );
    const nft = renderNft(renderRuleset(state, config(), 4, 'nftables'));
    assert.match(
      nft,
      /map filter-cali-to-wl-dispatch \{ type ifname : verdict; elements = \{ "calia0000000000" : goto filter-cali-tw-calia0000000000, "calib0000000000" : goto filter-cali-tw-calib0000000000 \}; \}/,
    );
    assert.match(
      nft,
      /chain filter-cali-to-wl-dispatch \{\n\t\tcounter oifname vmap @filter-cali-to-wl-dispatch comment "cali:[^"]+"\n\t\tcounter drop comment "cali:[^"]+"\n\t\}/,
    );
    assert.doesNotMatch(nft, /calir/);
    const rs = renderRuleset(state, config(), 4, 'iptables');
    const ipt = renderIptables(rs);
    const dispatch = ipt.split('\n').filter((l) => l.startsWith('-A cali-to-wl-dispatch '));
    assert.equal(dispatch.length, 3);
    assert.match(dispatch[0] as string, /-o calia0000000000 -g cali-tw-calia0000000000$/);
    assert.match(dispatch[2] as string, /-m comment --comment "Unknown interface" -j DROP$/);
    assert.match(ipt, /^-I FORWARD 1 -m comment --comment "cali:[\w-]{16}" -j cali-FORWARD$/m);
    assert.match(renderIptables(rs, 'Append'), /^-A FORWARD -m comment --comment "cali:[\w-]{16}" -j cali-FORWARD$/m);
    // As Felix v3.31.7 programs them (diffed in docs/compatibility.md): the top-level chains
    // clear accept, pass and the scratch bits (not the drop bit); cali-FORWARD keeps the
    // accept bit a pre-DNAT or untracked policy set, so such a packet skips the forward
    // host-endpoint policy.
    assert.match(ipt, /^-A cali-INPUT -m comment --comment "cali:[\w-]{16}" -j MARK --set-xmark 0x0\/0x1b0000$/m);
    const fwd = ipt.split('\n').filter((l) => l.startsWith('-A cali-FORWARD '));
    assert.match(fwd[0] as string, /-j MARK --set-xmark 0x0\/0x1a0000$/);
    assert.match(fwd[1] as string, /-m mark --mark 0x0\/0x10000 -j cali-from-hep-forward$/);
    assert.match(nft, /chain filter-cali-FORWARD \{\n\t\tcounter meta mark set meta mark & 0xffe5ffff /);
    // D4: what policy allowed is accepted at the end of FORWARD (after kube-proxy's and
    // Docker's rules), not in cali-FORWARD, and the rest carries the accept bit past mangle
    // cali-POSTROUTING; in nftables the base chain is ours and the rules follow the jump.
    assert.match(fwd.at(-2) as string, /-j cali-to-hep-forward$/);
    assert.match(fwd.at(-1) as string, /-j cali-cidr-block$/, 'as Felix: ServiceLoopPrevention last');
    const base = ipt.split('\n').filter((l) => / FORWARD /.test(l) && !l.startsWith('-A cali-'));
    assert.deepEqual(
      base.map((l) => l.replace(/"cali:[\w-]{16}"/, 'H')),
      [
        '-I FORWARD 1 -m comment --comment H -j cali-FORWARD',
        '-A FORWARD -m comment --comment H -m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT',
        '-A FORWARD -m comment --comment H -j MARK --set-xmark 0x10000/0x10000',
      ],
    );
    assert.match(
      nft,
      /chain filter-FORWARD \{\n.*\n\t\tcounter jump filter-cali-FORWARD [^\n]+\n\t\tmeta mark & 0x00010000 == 0x00010000 counter accept [^\n]+\n\t\tcounter meta mark set meta mark & 0xfffeffff \| 0x00010000 /,
    );
    // D3: host egress policy for DNATed traffic runs in mangle cali-POSTROUTING instead.
    assert.match(
      ipt,
      /^-A cali-OUTPUT -m comment --comment "cali:[\w-]{16}" -m conntrack ! --ctstate DNAT -j cali-to-host-endpoint$/m,
    );
    const post = ipt
      .split('\n')
      .filter((l) => l.startsWith('-A cali-POSTROUTING ') && l.includes('cali-to-host-endpoint'));
    assert.match(post[0] as string, /-m conntrack --ctstate DNAT -j cali-to-host-endpoint$/);
    assert.match(ipt, /^-I POSTROUTING 1 -m comment --comment "cali:[\w-]{16}" -j cali-POSTROUTING$/m);
    assert.match(nft, /ct status & dnat == 0 counter jump filter-cali-to-host-endpoint/);
    assert.match(nft, /ct status dnat counter jump mangle-cali-to-host-endpoint/);
  });
});

describe('dataplane render: RETURN as the allow action', () => {
  // Felix v3.31.7 with IptablesFilterAllowAction/MangleAllowAction RETURN: failsafes still
  // accept (a RETURN would carry on into the host-endpoint policy they bypass), and an
  // established flow's RETURN sets the accept bit first so the caller still lets it through.
  it('keeps failsafes accepting and marks established flows before returning', () => {
    const cfg = {
      ...config(),
      IptablesFilterAllowAction: 'RETURN' as const,
      IptablesMangleAllowAction: 'RETURN' as const,
    };
    const state = stateOf(
      wep('a', 'node1', '10.65.0.2', { app: 'web' }),
      np('web', { selector: 'all()', ingress: [{ action: 'Allow' }] }),
    );
    const rs = renderRuleset(state, cfg, 4, 'iptables');
    for (const table of ['filter', 'raw', 'mangle'] as const)
      for (const chain of ['cali-failsafe-in', 'cali-failsafe-out'])
        for (const r of rs.tables[table].get(chain)?.rules ?? [])
          assert.equal(r.action.k, 'accept', `${table} ${chain}`);
    const ipt = renderIptables(rs).split('\n');
    const est = ipt.filter((l) => l.includes('--ctstate RELATED,ESTABLISHED') && l.startsWith('-A cali-tw-'));
    assert.equal(est.length, 2, est.join('\n'));
    assert.match(est[0] as string, /-j MARK --set-xmark 0x10000\/0x10000$/);
    assert.match(est[1] as string, /-j RETURN$/);
  });
});

describe("iptables mode: Felix's dispatch tree", () => {
  it('bins interfaces by the character after their common prefix: one per bin in the root chain, several in a child chain with the end rules again', () => {
    const goto = (n: string) => ({ k: 'goto' as const, chain: `cali-tw-${n}` });
    const entries = new Map(['calia1', 'calib1', 'calia2', 'calic1', 'calia3'].map((n) => [n, goto(n)]));
    const drop: Rule = { match: [], action: { k: 'drop' }, comment: 'Unknown interface' };
    const chains = dispatchChains(
      'cali-to-wl-dispatch',
      [{ match: [], action: { k: 'vmap', iface: 'out', map: 'm' } }, drop],
      new Map([['m', { name: 'm', table: 'filter', entries }]]),
    );
    const show = (r: Rule) =>
      `${r.match.map((m) => (m.k === 'iface' ? `${m.dir}:${m.name}` : m.k)).join(' ')} -> ${r.action.k === 'goto' ? r.action.chain : r.action.k}`;
    assert.deepEqual(
      chains.map((c) => [c.name, c.rules.map(show)]),
      [
        [
          'cali-to-wl-dispatch-a',
          ['out:calia1 -> cali-tw-calia1', 'out:calia2 -> cali-tw-calia2', 'out:calia3 -> cali-tw-calia3', ' -> drop'],
        ],
        [
          'cali-to-wl-dispatch',
          [
            'out:calia+ -> cali-to-wl-dispatch-a',
            'out:calib1 -> cali-tw-calib1',
            'out:calic1 -> cali-tw-calic1',
            ' -> drop',
          ],
        ],
      ],
    );
    // One name: its common prefix is itself, one bin; none: the end rules alone.
    assert.deepEqual(
      dispatchChains(
        'd',
        [{ match: [], action: { k: 'vmap', iface: 'in', map: 'm' } }, drop],
        new Map([['m', { name: 'm', table: 'filter', entries: new Map([['calix', goto('calix')]]) }]]),
      ).map((c) => c.rules.map(show)),
      [['in:calix -> cali-tw-calix', ' -> drop']],
    );
    assert.deepEqual(
      dispatchChains('d', [{ match: [], action: { k: 'vmap', iface: 'in', map: 'm' } }, drop], new Map()).map((c) =>
        c.rules.map(show),
      ),
      [[' -> drop']],
    );
  });
});

describe('dataplane render: whole rulesets', () => {
  const resources = [
    tier('security', 100),
    profile('kns.prod', {}, { ingress: [{ action: 'Allow', source: { nets: ['10.0.0.0/8', 'fd00::/8'] } }] }),
    wep(
      'web',
      'node1',
      '10.65.0.10',
      { app: 'web' },
      { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }], ipNetworks: ['10.65.0.10/32', 'fd65::10/128'] },
    ),
    wep('api', 'node2', '10.65.1.10', { app: 'api' }),
    gns('bad', ['192.0.2.0/24', '192.0.2.7/32', '2001:db8::/32'], { feed: 'bad' }),
    gnp('security.block', {
      tier: 'security',
      order: 1,
      selector: 'all()',
      ingress: [{ action: 'Deny', source: { selector: "feed == 'bad'" } }, { action: 'Pass' }],
    }),
    np('web', {
      selector: "app == 'web'",
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: "app == 'api'" },
          destination: { ports: ['http', 443] },
        },
      ],
    }),
  ];

  it('splits IP-set members by family and keeps only covering CIDRs in nftables interval sets', () => {
    const state = stateOf(...resources);
    const r4 = renderRuleset(state, config(), 4, 'nftables');
    const r6 = renderRuleset(state, config(), 6, 'nftables');
    const bad4 = [...r4.sets.values()].find((s) => s.members.includes('192.0.2.0/24'));
    assert.deepEqual(bad4?.members.sort(), ['192.0.2.0/24', '192.0.2.7/32']);
    assert.ok([...r6.sets.values()].some((s) => s.members.includes('2001:db8::/32')));
    const nft = renderNft(r4);
    assert.match(nft, /elements = \{ 192\.0\.2\.0\/24 \}/);
    assert.match(nft, /type ipv4_addr \. inet_proto \. inet_service; elements = \{ 10\.65\.0\.10 \. tcp \. 8080 \}/);
    assert.match(renderNft(r6), /^table ip6 calico \{$/m);
  });

  it('writes ipset restore input with the right types and families', () => {
    const state = stateOf(...resources);
    const text = renderIpsets(renderRuleset(state, config(), 4, 'iptables'));
    assert.match(text, /^create cali40n:\S+ hash:ip,port family inet maxelem 1048576 -exist$/m);
    assert.match(text, /^add cali40n:\S+ 10\.65\.0\.10,tcp:8080$/m);
    assert.match(text, /^create cali40network-ip-pools hash:net family inet maxelem 1048576 -exist$/m);
    assert.doesNotMatch(text, /2001:db8/);
  });

  it("comments rules as Felix: the cali: hash first, then the rule's comments and annotations, escaped", () => {
    const lines = iptablesRuleLines(
      'cali-x',
      [{ match: [{ k: 'proto', proto: 6 }], action: { k: 'accept' }, comment: 'why', annotations: ['team=web "ops"'] }],
      4,
    );
    assert.match(
      lines[0] as string,
      /^-A cali-x -m comment --comment "cali:[\w-]{16}" -m comment --comment "why" -m comment --comment "team=web _ops_" -p tcp -j ACCEPT$/,
    );
    assert.equal(nftComment('abc', { match: [], action: { k: 'drop' } }), 'cali:abc;');
    assert.equal(
      nftComment('abc', { match: [], action: { k: 'drop' }, comment: 'Drop if no profiles matched' }),
      'cali:abc; Drop if no profiles matched',
    );
    const long = nftComment('h'.repeat(16), {
      match: [],
      action: { k: 'drop' },
      annotations: ['a='.padEnd(100, 'x'), 'b='.padEnd(100, 'y')],
    });
    assert.ok(long.length <= 128, 'nftables comments stay within 128 bytes');
    assert.match(long, /^cali:h{16}; a=x+ b=y+$/);
    // Annotations reach every rule a proto rule becomes, sorted.
    const rules = renderProtoRule(protoRule({ action: 'allow', annotations: { z: '1', a: '2' } }), v4ipt);
    assert.ok(rules.every((r) => JSON.stringify(r.annotations) === JSON.stringify(['a=2', 'z=1'])));
  });

  it("lets replies to the other direction's failsafe traffic through in raw only, as Felix", () => {
    const cfg = {
      ...config(),
      FailsafeInboundHostPorts: [{ protocol: 'tcp' as const, port: 22 }],
      FailsafeOutboundHostPorts: [{ protocol: 'udp' as const, port: 53, net: '10.0.0.0/8' }],
    };
    const rs = renderRuleset(stateOf(), cfg, 4, 'nftables');
    const ports = (table: 'raw' | 'filter', chain: string) =>
      rs.tables[table]
        .get(chain)
        ?.rules.map((r) =>
          r.match
            .map((m) =>
              m.k === 'ports' ? `${m.dir}:${m.ranges[0]?.first}` : m.k === 'net' ? `${m.dir}net:${m.nets[0]}` : m.k,
            )
            .join(' '),
        );
    assert.deepEqual(ports('raw', 'cali-failsafe-in'), ['proto dst:22', 'proto src:53 srcnet:10.0.0.0/8']);
    assert.deepEqual(ports('raw', 'cali-failsafe-out'), ['proto dst:53 dstnet:10.0.0.0/8', 'proto src:22']);
    assert.deepEqual(ports('filter', 'cali-failsafe-in'), ['proto dst:22']);
  });

  it('renders the same state identically twice (stable output)', () => {
    const a: Ruleset = renderRuleset(stateOf(...resources), config(), 4, 'nftables');
    const b: Ruleset = renderRuleset(stateOf(...[...resources].reverse()), config(), 4, 'nftables');
    assert.equal(renderNft(a).split('\n').sort().join('\n'), renderNft(b).split('\n').sort().join('\n'));
  });

  it('covers CIDRs and writes nft elements', () => {
    assert.deepEqual(
      coveringMembers(['10.0.0.1/32', '10.0.0.0/8', '11.0.0.0/8', '10.0.0.0/8', 'fd00::1/128', 'fd00::/8']),
      ['10.0.0.0/8', '11.0.0.0/8', 'fd00::/8'],
    );
    assert.equal(nftElement('10.0.0.1,udp:53'), '10.0.0.1 . udp . 53');
  });
});

describe("dataplane render: the overlay's static rules", () => {
  const vxlanPool = poolRoute('10.65.0.0/16', 'VXLAN');
  const vtep = (node: string, parent: string) => ({
    type: 'VXLANTunnelEndpointUpdate' as const,
    vtep: {
      node,
      mac: '66:00:00:00:00:01',
      ipv4Addr: '10.65.9.0',
      parentDeviceIp: parent,
      macV6: '',
      ipv6Addr: '',
      parentDeviceIpv6: '',
    },
  });
  const input = (rs: Ruleset) =>
    iptablesRuleLines('cali-INPUT', rs.tables.filter.get('cali-INPUT')?.rules ?? [], 4).map((l) =>
      l.replace(/-m comment --comment "cali:[\w-]{16}" /, ''),
    );

  it("accepts VXLAN to a local address only from known VTEPs, and lets it out to them, while a pool uses VXLAN (Felix's filterInputChain)", () => {
    const state = new DesiredState();
    // This node's own VTEP is not a source VXLAN is taken from (Felix keeps it apart from the others).
    state.apply([vxlanPool, vtep('node2', '10.99.0.12'), vtep('node3', '10.99.1.13'), vtep('node1', '10.99.2.1')]);
    const rs = renderRuleset(state, { ...config(), FelixHostname: 'node1' }, 4, 'iptables');
    assert.deepEqual(input(rs).slice(0, 2), [
      '-A cali-INPUT -m comment --comment "Allow IPv4 VXLAN packets from allowed hosts" -p udp -m multiport --destination-ports 4789 -m set --match-set cali40all-vxlan-net src -m addrtype --dst-type LOCAL -j ACCEPT',
      '-A cali-INPUT -m comment --comment "Drop IPv4 VXLAN packets from non-allowed hosts" -p udp -m multiport --destination-ports 4789 -m addrtype --dst-type LOCAL -j DROP',
    ]);
    assert.deepEqual(rs.sets.get('cali40all-vxlan-net')?.members, ['10.99.0.12', '10.99.1.13']);
    const output = rs.tables.filter.get('cali-OUTPUT')?.rules.map((r) => r.comment ?? '');
    assert.ok(output?.includes('Allow IPv4 VXLAN packets to other allowed hosts'));
    // IPv6 VXLAN is not programmed: no rules for it.
    assert.equal(renderRuleset(state, config(), 6, 'iptables').sets.has('cali60all-vxlan-net'), false);
    // VXLAN is not tracked (Felix: other source ports each way leave unreplied flows):
    // raw, before the workload mark and after the untracked host-endpoint egress policy.
    const raw = (chain: string, r: Ruleset) => r.tables.raw.get(chain)?.rules.map((x) => x.action.k);
    assert.deepEqual(raw('cali-PREROUTING', rs)?.slice(0, 3), ['setMark', 'notrack', 'setMark']);
    assert.deepEqual(raw('cali-OUTPUT', rs), ['setMark', 'jump', 'notrack', 'accept']);
    assert.ok(!raw('cali-OUTPUT', renderRuleset(new DesiredState(), config(), 4, 'iptables'))?.includes('notrack'));
  });

  it('has neither the rules nor the set without VXLAN, and VXLANEnabled overrides the pools', () => {
    const state = new DesiredState();
    state.apply([vtep('node2', '10.99.0.12')]);
    assert.match(input(renderRuleset(state, config(), 4, 'iptables'))[0] as string, /-i cali\+ -g cali-wl-to-host/);
    assert.equal(renderRuleset(state, config(), 4, 'iptables').sets.has('cali40all-vxlan-net'), false);
    const on = renderRuleset(state, { ...config(), VXLANEnabled: true, VXLANPort: 8472 }, 4, 'iptables');
    assert.match(input(on)[0] as string, /--destination-ports 8472 .*-j ACCEPT$/);
    state.apply([vxlanPool]);
    assert.equal(
      renderRuleset(state, { ...config(), VXLANEnabled: false }, 4, 'iptables').sets.has('cali40all-vxlan-net'),
      false,
    );
  });

  it('IPv6 VXLAN by the IPv6 pools only (Felix has no setting for it): ip6 rules, cali60all-vxlan-net, the deny action', () => {
    const pool6 = { ...vxlanPool, route: { ...vxlanPool.route, dst: 'fd68::/48' } };
    const vtep6 = (node: string, parent6: string) => {
      const v = vtep(node, '10.99.0.12');
      return { ...v, vtep: { ...v.vtep, macV6: '66:00:00:00:00:02', ipv6Addr: 'fd68::9', parentDeviceIpv6: parent6 } };
    };
    const input6 = (rs: Ruleset) =>
      iptablesRuleLines('cali-INPUT', rs.tables.filter.get('cali-INPUT')?.rules ?? [], 6).map((l) =>
        l.replace(/-m comment --comment "cali:[\w-]{16}" /, ''),
      );
    const state = new DesiredState();
    state.apply([vxlanPool, vtep6('node2', 'fd99::12'), vtep6('node1', 'fd99::11')]);
    const v6Off = renderRuleset(state, config(), 6, 'iptables');
    assert.equal(v6Off.sets.has('cali60all-vxlan-net'), false, 'an IPv4 VXLAN pool turns on IPv4 VXLAN only');
    assert.equal(renderRuleset(state, { ...config(), VXLANEnabled: true }, 6, 'iptables').sets.size, v6Off.sets.size);
    state.apply([pool6]);
    const rs = renderRuleset(
      state,
      { ...config(), FelixHostname: 'node1', IptablesFilterDenyAction: 'REJECT' },
      6,
      'iptables',
    );
    assert.deepEqual(rs.sets.get('cali60all-vxlan-net')?.members, ['fd99::12'], "other nodes' VTEPs only");
    assert.deepEqual(input6(rs).slice(0, 2), [
      '-A cali-INPUT -m comment --comment "Allow IPv6 VXLAN packets from allowed hosts" -p udp -m multiport --destination-ports 4789 -m set --match-set cali60all-vxlan-net src -m addrtype --dst-type LOCAL -j ACCEPT',
      '-A cali-INPUT -m comment --comment "Reject IPv6 VXLAN packets from non-allowed hosts" -p udp -m multiport --destination-ports 4789 -m addrtype --dst-type LOCAL -j REJECT',
    ]);
    assert.ok(
      rs.tables.filter
        .get('cali-OUTPUT')
        ?.rules.some((r) => r.comment === 'Allow IPv6 VXLAN packets to other allowed hosts'),
    );
    state.apply([{ type: 'RouteRemove', dst: '10.65.0.0/16' }]);
    assert.equal(renderRuleset(state, config(), 4, 'iptables').sets.has('cali40all-vxlan-net'), false, 'v4 off');
    assert.equal(renderRuleset(state, { ...config(), Ipv6Support: false }, 6, 'iptables').sets.size, v6Off.sets.size);
  });

  it("WireGuard: its port let in and out whatever host policy says, after VXLAN (Felix's FilterInputChainAllowWG); host encryption marks incoming packets in raw", () => {
    const state = new DesiredState();
    state.apply([vxlanPool, vtep('node2', '10.99.0.12')]);
    const cfg = { ...config(), FelixHostname: 'node1', WireguardEnabled: true, WireguardListeningPort: 51820 };
    const rs = renderRuleset(state, cfg, 4, 'iptables');
    assert.deepEqual(input(rs).slice(2, 3), [
      '-A cali-INPUT -m comment --comment "Allow incoming IPv4 Wireguard packets" -p udp -m multiport --destination-ports 51820 -m addrtype --dst-type LOCAL -j ACCEPT',
    ]);
    const out = iptablesRuleLines('cali-OUTPUT', rs.tables.filter.get('cali-OUTPUT')?.rules ?? [], 4).map((l) =>
      l.replace(/-m comment --comment "cali:[\w-]{16}" /, ''),
    );
    assert.ok(
      out.includes(
        '-A cali-OUTPUT -m comment --comment "Allow outgoing IPv4 Wireguard packets" -p udp -m multiport --destination-ports 51820 -m addrtype --src-type LOCAL -j ACCEPT',
      ),
      out.join('\n'),
    );
    assert.equal(rs.tables.raw.has('cali-wireguard-incoming-mark'), false, 'no host encryption: no mark chain');
    // IPv6 follows WireguardEnabledV6 only.
    const v6 = renderRuleset(state, { ...cfg, WireguardListeningPortV6: 51821 }, 6, 'iptables');
    assert.ok(!v6.tables.filter.get('cali-INPUT')?.rules.some((r) => /Wireguard/.test(r.comment ?? '')));
    const v6on = renderRuleset(
      state,
      { ...cfg, WireguardEnabledV6: true, WireguardListeningPortV6: 51821 },
      6,
      'iptables',
    );
    assert.ok(
      v6on.tables.filter.get('cali-INPUT')?.rules.some((r) => r.comment === 'Allow incoming IPv6 Wireguard packets'),
    );

    const host = renderRuleset(
      state,
      {
        ...cfg,
        WireguardHostEncryptionEnabled: true,
        WireguardInterfaceName: 'wireguard.cali',
        WireguardInterfaceNameV6: 'wg-v6.cali',
      },
      4,
      'iptables',
    );
    const mark = (n: string) =>
      iptablesRuleLines(n, host.tables.raw.get(n)?.rules ?? [], 4).map((l) =>
        l.replace(/-m comment --comment "cali:[\w-]{16}" /, ''),
      );
    assert.deepEqual(mark('cali-wireguard-incoming-mark'), [
      '-A cali-wireguard-incoming-mark -i lo -j RETURN',
      '-A cali-wireguard-incoming-mark -i wireguard.cali -j RETURN',
      '-A cali-wireguard-incoming-mark -i wg-v6.cali -j RETURN',
      '-A cali-wireguard-incoming-mark -i cali+ -j RETURN',
      '-A cali-wireguard-incoming-mark -j MARK --set-xmark 0x200000/0x200000',
    ]);
    assert.equal(mark('cali-PREROUTING')[1], '-A cali-PREROUTING -j cali-wireguard-incoming-mark');
  });

  it("masquerades host traffic leaving by a tunnel from a local address not the tunnel's own (Felix's StaticNATPostroutingChains): IPIP and VXLAN once this node has their tunnel address, WireGuard while on, in Felix's order and both syntaxes", () => {
    const ipipPool = { ...vxlanPool, route: { ...vxlanPool.route, ipPoolType: 'IPIP' as const, dst: '10.70.0.0/16' } };
    const v6Pool = { ...vxlanPool, route: { ...vxlanPool.route, dst: 'fd00:65::/48' } };
    const state = new DesiredState();
    state.apply([ipipPool, vxlanPool, v6Pool]);
    const post = (rs: Ruleset) => rs.tables.nat.get('cali-POSTROUTING')?.rules ?? [];
    const ipt = (rs: Ruleset) =>
      iptablesRuleLines('cali-POSTROUTING', post(rs), rs.family).map((l) =>
        l.replace(/-m comment --comment "cali:[\w-]{16}" /, ''),
      );
    // No tunnel address yet (calico-node has not allocated one): only the two jumps, as Felix.
    assert.deepEqual(ipt(renderRuleset(state, config(), 4, 'iptables')), [
      '-A cali-POSTROUTING -j cali-fip-snat',
      '-A cali-POSTROUTING -j cali-nat-outgoing',
    ]);
    const cfg = {
      ...config(),
      Ipv6Support: true,
      IpInIpTunnelAddr: '10.70.0.1',
      IPv4VXLANTunnelAddr: '10.65.0.1',
      IPv6VXLANTunnelAddr: 'fd00:65::1',
      WireguardEnabled: true,
      WireguardEnabledV6: true,
      WireguardInterfaceName: 'wireguard.cali',
      WireguardInterfaceNameV6: 'wg-v6.cali',
    };
    const masq = (dev: string) =>
      `-A cali-POSTROUTING -o ${dev} -m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --src-type LOCAL -j MASQUERADE --random-fully`;
    assert.deepEqual(ipt(renderRuleset(state, cfg, 4, 'iptables')).slice(2), [
      masq('tunl0'),
      masq('vxlan.calico'),
      masq('wireguard.cali'),
    ]);
    assert.deepEqual(ipt(renderRuleset(state, cfg, 6, 'iptables')).slice(2), [
      masq('vxlan-v6.calico'),
      masq('wg-v6.cali'),
    ]);
    // nftables mode: Felix's nftables match builder's spelling.
    const nft = renderRuleset(state, cfg, 4, 'nftables');
    assert.match(renderNft(nft), /oifname "tunl0" fib saddr \. oif type != local fib saddr type local .*masquerade/);
    // An overlay that is off has no rule, whatever its address says; nor WireGuard when off.
    const off = renderRuleset(state, { ...cfg, IpInIpEnabled: false, WireguardEnabled: false }, 4, 'iptables');
    assert.deepEqual(ipt(off).slice(2), [masq('vxlan.calico')]);
  });

  it('accepts IPIP only from Calico hosts (all-hosts-net: node addresses and ExternalNodesCIDRList) while a pool uses IPIP, before the VXLAN rules', () => {
    const ipipPool = { ...vxlanPool, route: { ...vxlanPool.route, ipPoolType: 'IPIP' as const, dst: '10.70.0.0/16' } };
    const host = (hostname: string, ipv4Addr: string) => ({ type: 'HostMetadataUpdate' as const, hostname, ipv4Addr });
    const state = new DesiredState();
    state.apply([
      ipipPool,
      vxlanPool,
      host('node1', '10.99.0.11'),
      host('node2', '10.99.0.12'),
      vtep('node2', '10.99.0.12'),
    ]);
    const cfg = { ...config(), ExternalNodesCIDRList: ['192.0.2.0/24', 'fd00::/64'] };
    const rs = renderRuleset(state, cfg, 4, 'iptables');
    assert.deepEqual(input(rs).slice(0, 3), [
      '-A cali-INPUT -m comment --comment "Allow IPIP packets from Calico hosts" -p 4 -m set --match-set cali40all-hosts-net src -m addrtype --dst-type LOCAL -j ACCEPT',
      '-A cali-INPUT -m comment --comment "Drop IPIP packets from non-Calico hosts" -p 4 -j DROP',
      '-A cali-INPUT -m comment --comment "Allow IPv4 VXLAN packets from allowed hosts" -p udp -m multiport --destination-ports 4789 -m set --match-set cali40all-vxlan-net src -m addrtype --dst-type LOCAL -j ACCEPT',
    ]);
    assert.deepEqual(rs.sets.get('cali40all-hosts-net')?.members, ['10.99.0.11', '10.99.0.12', '192.0.2.0/24']);
    const output = rs.tables.filter.get('cali-OUTPUT')?.rules.map((r) => r.comment ?? '');
    assert.ok(
      output?.indexOf('Allow IPIP packets to other Calico hosts') ===
        (output?.indexOf('Allow IPv4 VXLAN packets to other allowed hosts') ?? 0) - 1,
    );
    // IpInIpEnabled false wins over the pool; and without the pool the set goes.
    assert.equal(
      renderRuleset(state, { ...cfg, IpInIpEnabled: false }, 4, 'iptables').sets.has('cali40all-hosts-net'),
      false,
    );
    state.apply([{ type: 'RouteRemove', dst: '10.70.0.0/16' }]);
    assert.equal(renderRuleset(state, cfg, 4, 'iptables').sets.has('cali40all-hosts-net'), false);
  });

  it('drops VXLAN (to VXLANPort) and IPIP from workloads unless Allow*PacketsFromWorkloads', () => {
    const ep = stateOf(wep('web', 'node1', '10.65.0.10', { app: 'web' }))
      .weps.values()
      .next().value as WorkloadEndpoint;
    const comments = (cfg: ReturnType<typeof config>) => {
      const rs = renderRuleset(stateOf(wep('web', 'node1', '10.65.0.10', { app: 'web' })), cfg, 4, 'iptables');
      const chain = [...rs.tables.filter.values()].find(
        (c) => c.name.startsWith('cali-fw-') && c.name.endsWith(ep.name.slice(-4)),
      );
      return chain?.rules
        .filter((r) => r.comment?.includes('encapped'))
        .map((r) => `${r.comment} ${JSON.stringify(r.match.find((m) => m.k === 'ports') ?? '')}`);
    };
    const all = comments({ ...config(), VXLANPort: 8472 });
    assert.equal(all?.length, 2);
    assert.match(all?.[0] as string, /Drop VXLAN encapped packets originating in workloads .*8472/);
    assert.deepEqual(
      comments({ ...config(), AllowVXLANPacketsFromWorkloads: true })?.map((c) => c.split(' ')[1]),
      ['IPinIP'],
    );
    assert.deepEqual(
      comments({ ...config(), AllowVXLANPacketsFromWorkloads: true, AllowIPIPPacketsFromWorkloads: true }),
      [],
    );
  });
});
