// v3 -> internal conversion against the behaviour of Calico's syncer update processors.
import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { describe, it } from 'node:test';

import { model } from 'palisade';
import { isCanonicalV4Host } from '../../src/model/net.js';

function valid<T>(input: unknown): T {
  const r = model.validateResource(input);
  if (!r.ok) throw r.error;
  return r.resource as T;
}

const NP = (spec: Record<string, unknown>) =>
  valid<model.ResourceOf<'NetworkPolicy'>>({
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'prod' },
    spec,
  });
const GNP = (spec: Record<string, unknown>) =>
  valid<model.ResourceOf<'GlobalNetworkPolicy'>>({
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name: 'g' },
    spec,
  });

describe('model: CIDRs', () => {
  const cases: Array<[string, string | undefined]> = [
    ['10.0.0.5/8', '10.0.0.0/8'],
    ['10.1.2.3', '10.1.2.3/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8::1/32', '2001:db8::/32'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1/128'],
    ['::ffff:1.2.3.4/128', '::ffff:102:304/128'],
    ['::/0', '::/0'],
    ['10.0.0.0/33', undefined],
    ['1.2.3', undefined],
    ['fe80::1%eth0', undefined],
    ['10.0.0.0/x', undefined],
    ['10.0.0.1/32', '10.0.0.1/32'],
    ['1.2.3.4/032', '1.2.3.4/32'],
    ['010.0.0.1', undefined],
    ['256.1.1.1', undefined],
    ['1.2.3.4.5', undefined],
    ['1111.2.3.4', undefined],
    ['1.2.3.4/32x', undefined],
    ['1.2.3.4/', undefined],
    ['1.2.3.4 ', undefined],
  ];
  for (const [input, want] of cases) it(`${input} -> ${want}`, () => assert.equal(model.parseCidr(input)?.text, want));

  it('accepts exactly the addresses node:net accepts (the dotted-quad fast path)', () => {
    const parts = ['0', '1', '9', '10', '00', '01', '99', '100', '199', '255', '256', '300', '1000', '', 'a', ' 1'];
    let seed = 7;
    const pick = () => parts[(seed = (seed * 1103515245 + 12345) & 0x7fffffff) % parts.length] as string;
    for (let n = 0; n < 20000; n++) {
      const count = 3 + (n % 3);
      const text = Array.from({ length: count }, pick).join('.');
      assert.equal(model.parseCidr(text)?.version === 4, isIPv4(text), text);
      assert.equal(model.parseCidr(`${text}/32`)?.text, isIPv4(text) ? `${text}/32` : undefined, `${text}/32`);
      // The conversion's shortcut says "already canonical" exactly when parsing would agree.
      assert.equal(isCanonicalV4Host(`${text}/32`), isIPv4(text), `${text}/32`);
    }
    for (const text of ['10.0.0.1', '10.0.0.1/032', '10.0.0.1/31', '10.0.0.1/320', 'fd00::1/128', '/32'])
      assert.equal(isCanonicalV4Host(text), false, text);
  });
});

describe('model: NetworkPolicy conversion', () => {
  it('scopes the selector to the namespace', () => {
    const p = model.convertNetworkPolicy(NP({ selector: "app == 'web'" }));
    assert.equal(p.selector, "(app == 'web') && projectcalico.org/namespace == 'prod'");
    assert.deepEqual(p.key, { tier: 'default', name: 'np/prod/p', sortKey: 'p/prod/NetworkPolicy' });
    assert.equal(p.namespace, 'prod');
    assert.equal(p.applyOnForward, false, "as upstream's processor");
    assert.equal(model.convertNetworkPolicy(NP({})).selector, "projectcalico.org/namespace == 'prod'");
  });

  it('appends a pcsa.-prefixed service account selector', () => {
    const p = model.convertNetworkPolicy(NP({ selector: "app == 'web'", serviceAccountSelector: "role == 'x'" }));
    assert.equal(p.selector, `((app == 'web') && projectcalico.org/namespace == 'prod') && pcsa.role == "x"`);
  });

  it('scopes rule selectors, prefixes namespace selectors, maps Pass to next-tier', () => {
    const p = model.convertNetworkPolicy(
      NP({
        ingress: [
          { action: 'Allow', source: { selector: "role == 'fe'" } },
          { action: 'Pass', source: { namespaceSelector: "team == 'a'", selector: 'has(x)' } },
          { action: 'Deny', source: { namespaceSelector: 'all()' } },
          { action: 'Allow', source: { notSelector: "role == 'bad'" } },
          { action: 'Allow', source: { serviceAccounts: { names: ['b', 'a'] } } },
          { action: 'Allow', source: { nets: ['10.0.0.5/8'] } },
        ],
      }),
    );
    const r = p.inboundRules;
    assert.equal(r[0]?.action, 'allow');
    assert.equal(r[0]?.srcSelector, `(projectcalico.org/namespace == 'prod') && (role == 'fe')`);
    assert.equal(r[1]?.action, 'next-tier');
    assert.equal(r[1]?.srcSelector, `(pcns.team == "a") && (has(x))`);
    assert.equal(r[2]?.srcSelector, 'has(projectcalico.org/namespace)');
    assert.equal(r[3]?.srcSelector, "projectcalico.org/namespace == 'prod'");
    assert.equal(r[3]?.notSrcSelector, "role == 'bad'");
    assert.equal(
      r[4]?.srcSelector,
      `(projectcalico.org/namespace == 'prod') && (projectcalico.org/serviceaccount in {"a", "b"})`,
    );
    assert.equal(r[5]?.srcSelector, '', 'nets alone select no endpoints');
    assert.deepEqual(r[5]?.srcNets, ['10.0.0.0/8']);
    assert.deepEqual(p.types, ['ingress']);
  });

  it('defaults types from the rules present, as Calico does', () => {
    const e = { action: 'Allow' };
    assert.deepEqual(model.convertNetworkPolicy(NP({})).types, ['ingress']);
    assert.deepEqual(model.convertNetworkPolicy(NP({ egress: [e] })).types, ['egress']);
    assert.deepEqual(model.convertNetworkPolicy(NP({ ingress: [e], egress: [e] })).types, ['ingress', 'egress']);
    assert.deepEqual(model.convertNetworkPolicy(NP({ types: ['Egress'], ingress: [e] })).types, ['egress']);
  });

  it('converts ports, protocols and ICMP', () => {
    const p = model.convertNetworkPolicy(
      NP({
        tier: 'security',
        order: 5,
        ingress: [
          { action: 'Allow', protocol: 'TCP', destination: { ports: [80, '8000:8080', 'http', '443'] } },
          { action: 'Allow', protocol: 'ICMPv6', icmp: { type: 128 }, ipVersion: 6 },
          { action: 'Allow', protocol: 132 },
        ],
      }),
    );
    const [a, b, c] = p.inboundRules;
    assert.equal(a?.protocol, 'tcp');
    assert.deepEqual(a?.dstPorts, [
      { first: 80, last: 80 },
      { first: 8000, last: 8080 },
      { name: 'http' },
      { first: 443, last: 443 },
    ]);
    assert.equal(b?.protocol, 'icmpv6');
    assert.equal(b?.icmpType, 128);
    assert.equal(b?.icmpCode, undefined);
    assert.equal(c?.protocol, 132);
    assert.deepEqual(p.key, { tier: 'security', name: 'np/prod/p', sortKey: 'p/prod/NetworkPolicy' });
    assert.equal(p.order, 5);
  });
});

describe('model: GlobalNetworkPolicy conversion', () => {
  it('prefixes its namespace selector and rewrites all()', () => {
    assert.equal(
      model.convertGlobalNetworkPolicy(GNP({ namespaceSelector: 'all()' })).selector,
      'has(projectcalico.org/namespace)',
    );
    assert.equal(
      model.convertGlobalNetworkPolicy(GNP({ selector: "app == 'x'", namespaceSelector: "env == 'prod'" })).selector,
      `(app == 'x') && pcns.env == "prod"`,
    );
    const g = model.convertGlobalNetworkPolicy(GNP({ selector: 'all()', preDNAT: true, applyOnForward: true }));
    assert.equal(g.selector, 'all()');
    assert.equal(g.namespace, '');
    assert.deepEqual(g.key, { tier: 'default', name: 'gnp/g', sortKey: 'g//GlobalNetworkPolicy' });
    assert.equal(g.preDNAT, true);
  });

  it('leaves rule selectors global', () => {
    const g = model.convertGlobalNetworkPolicy(
      GNP({ ingress: [{ action: 'Allow', source: { selector: "role == 'x'" } }] }),
    );
    assert.equal(g.inboundRules[0]?.srcSelector, "role == 'x'");
  });
});

describe('model: endpoints, profiles, sets, pools, tiers', () => {
  it('workload endpoint labels cannot claim another namespace', () => {
    const w = model.convertWorkloadEndpoint(
      valid({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: {
          name: 'n1-k8s-web--0-eth0',
          namespace: 'prod',
          labels: { app: 'web', 'projectcalico.org/namespace': 'kube-system', 'pcns.team': 'x', 'pcsa.role': 'y' },
        },
        spec: {
          node: 'n1',
          orchestrator: 'k8s',
          pod: 'web-0',
          endpoint: 'eth0',
          interfaceName: 'cali12345678901',
          serviceAccountName: 'web-sa',
          ipNetworks: ['10.65.0.2', 'fd00::2/128'],
          ipNATs: [{ internalIP: '10.65.0.2', externalIP: '192.0.2.9' }],
          mac: 'EE-EE-EE-EE-EE-EE',
          profiles: ['kns.prod', 'ksa.prod.web-sa'],
          ports: [
            { name: 'http', protocol: 'TCP', port: 80 },
            { protocol: 'UDP', port: 53 },
          ],
        },
      }),
    );
    assert.ok(w);
    assert.deepEqual(w.labels, {
      app: 'web',
      'projectcalico.org/namespace': 'prod',
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': 'web-sa',
    });
    assert.deepEqual(w.key, { hostname: 'n1', orchestratorId: 'k8s', workloadId: 'prod/web-0', endpointId: 'eth0' });
    assert.deepEqual(w.ipv4Nets, ['10.65.0.2/32']);
    assert.deepEqual(w.ipv6Nets, ['fd00::2/128']);
    assert.deepEqual(w.ipv4Nat, [{ intIp: '10.65.0.2', extIp: '192.0.2.9' }]);
    assert.equal(w.mac, 'ee:ee:ee:ee:ee:ee');
    assert.deepEqual(w.ports, [{ name: 'http', protocol: 'tcp', port: 80 }], 'unnamed ports are dropped');
    assert.deepEqual(w.profileIds, ['kns.prod', 'ksa.prod.web-sa']);
  });

  it('a workload endpoint without IPs is not passed on', () => {
    const w = valid<model.ResourceOf<'WorkloadEndpoint'>>({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'w', namespace: 'n' },
      spec: { interfaceName: 'cali0' },
    });
    assert.equal(model.convertWorkloadEndpoint(w), undefined);
  });

  it('profiles apply labelsToApply; tiers default to Deny', () => {
    const p = model.convertProfile(
      valid({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'kns.prod' },
        spec: { labelsToApply: { 'pcns.env': 'prod' }, egress: [{ action: 'Allow' }] },
      }),
    );
    assert.deepEqual(p.labels, { 'pcns.env': 'prod' });
    assert.equal(p.outboundRules[0]?.action, 'allow');
    const t = model.convertTier(
      valid({ apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'sec' }, spec: { order: 1 } }),
    );
    assert.deepEqual(t, { name: 'sec', order: 1, defaultAction: 'Deny' });
  });

  it('network sets: namespaced ones carry their namespace label, nets normalised', () => {
    const n = model.convertNetworkSet(
      valid({
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkSet',
        metadata: { name: 'ext', namespace: 'prod', labels: { a: 'b' } },
        spec: { nets: ['198.51.100.7/24'] },
      }),
    );
    assert.deepEqual(n, {
      name: 'prod/ext',
      nets: ['198.51.100.0/24'],
      labels: { a: 'b', 'projectcalico.org/namespace': 'prod' },
    });
    const pool = model.convertIpPool(
      valid({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'p' },
        spec: { cidr: '10.65.0.0/16', natOutgoing: true },
      }),
    );
    assert.deepEqual(pool, {
      cidr: '10.65.0.0/16',
      masquerade: true,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      disabled: false,
      allowedUses: [],
    });
  });
});
