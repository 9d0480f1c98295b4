// Calc-graph scenarios in Felix's style: a sequence of datastore states, each with the
// dataplane state expected after the flush.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseSelector } from 'palisade';

import { makeUniqueId } from '../../src/calc/unique-id.js';
import { gnp, gns, Harness, np, profile, type Res, tier, wep } from '../helpers/calc-fixtures.js';

const uid = (s: string) => parseSelector(s).uid;
const WEB = 'k8s/prod/web-0/eth0';

describe('calc graph: scenarios', () => {
  it('nothing before InSync; one InSync with the first flush after it', () => {
    const h = new Harness(false);
    h.put(profile('kns.prod', {}), wep('web-0', 'node1', '10.65.0.2', { app: 'web' }));
    assert.deepEqual(h.flush(), []);
    h.graph.onStatus('in-sync');
    const msgs = h.flush();
    assert.equal(msgs.filter((m) => m.type === 'InSync').length, 1);
    assert.equal(msgs.at(-1)?.type, 'InSync');
    assert.ok(h.dp.weps.has(WEB));
    h.put(wep('web-1', 'node1', '10.65.0.3', { app: 'web' }));
    assert.equal(h.flush().filter((m) => m.type === 'InSync').length, 0);
  });

  it('policy with a namespaced rule selector: sets, rules, tiers, profile inheritance', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', { 'pcns.env': 'prod' }, { ingress: [{ action: 'Allow' }] }),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      wep('fe-0', 'node2', '10.65.1.5', { role: 'fe' }),
      np('allow-fe', {
        selector: "app == 'web'",
        ingress: [
          { action: 'Allow', protocol: 'TCP', source: { selector: "role == 'fe'" }, destination: { ports: [80] } },
        ],
      }),
    );
    h.flush();
    const srcSel = `(projectcalico.org/namespace == 'prod') && (role == 'fe')`;
    const set = h.dp.ipsets.get(uid(srcSel));
    assert.deepEqual([...(set?.members ?? [])], ['10.65.1.5/32'], 'remote endpoints are members');
    const pol = h.dp.policies.get('default/np/prod/allow-fe');
    assert.deepEqual(pol?.inboundRules[0]?.srcIpSetIds, [uid(srcSel)]);
    assert.deepEqual(pol?.inboundRules[0]?.dstPorts, [{ first: 80, last: 80 }]);
    assert.equal(pol?.namespace, 'prod');
    const ep = h.dp.weps.get(WEB);
    assert.deepEqual(ep?.tiers, [
      { name: 'default', ingressPolicies: ['np/prod/allow-fe'], egressPolicies: [], defaultAction: 'Deny' },
    ]);
    assert.deepEqual(ep?.profileIds, ['kns.prod']);
    assert.equal(h.dp.profiles.get('kns.prod')?.inboundRules[0]?.action, 'allow');
    assert.equal(h.dp.weps.size, 1, 'remote endpoints get no endpoint update');

    // A selector on an inherited (profile) label.
    h.put(gnp('prod-only', { selector: "pcns.env == 'prod'", egress: [{ action: 'Deny' }] }));
    h.flush();
    assert.deepEqual(h.dp.weps.get(WEB)?.tiers[0]?.egressPolicies, ['gnp/prod-only']);
  });

  it('tiers by order, Pass becomes next-tier, policies by order then name', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      tier('security', 10, 'Pass'),
      tier('platform', 20),
      gnp('b-sec', { tier: 'security', selector: 'all()', order: 5, ingress: [{ action: 'Pass' }] }),
      gnp('a-sec', {
        tier: 'security',
        selector: 'all()',
        order: 5,
        ingress: [{ action: 'Deny', source: { nets: ['192.0.2.0/24'] } }],
      }),
      gnp('plat', { tier: 'platform', selector: "app == 'web'", ingress: [{ action: 'Allow' }] }),
      np('late', { selector: 'all()', ingress: [{ action: 'Allow' }] }),
      np('early', { selector: 'all()', order: 1, ingress: [{ action: 'Allow' }] }),
    );
    h.flush();
    const tiers = h.dp.weps.get(WEB)?.tiers ?? [];
    assert.deepEqual(
      tiers.map((t) => [t.name, t.ingressPolicies, t.defaultAction]),
      [
        ['security', ['gnp/a-sec', 'gnp/b-sec'], 'Pass'],
        ['platform', ['gnp/plat'], 'Deny'],
        ['default', ['np/prod/early', 'np/prod/late'], 'Deny'],
      ],
    );
    assert.equal(h.dp.policies.get('security/gnp/b-sec')?.inboundRules[0]?.action, 'next-tier');
    // Reordering a tier reorders every endpoint's list.
    h.put(tier('platform', 1));
    h.flush();
    assert.deepEqual(
      h.dp.weps.get(WEB)?.tiers.map((t) => t.name),
      ['platform', 'security', 'default'],
    );
  });

  it('policies of equal order are ordered as Felix: by "<name>/<namespace>/<Kind>", not by ID', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      np('zz', { selector: 'all()', order: 10, ingress: [{ action: 'Allow' }] }),
      gnp('bb', { selector: 'all()', order: 10, ingress: [{ action: 'Allow' }] }),
      np('bb', { selector: 'all()', order: 10, ingress: [{ action: 'Allow' }] }),
    );
    h.flush();
    // "bb//GlobalNetworkPolicy" < "bb/prod/NetworkPolicy" < "zz/prod/NetworkPolicy".
    assert.deepEqual(h.dp.weps.get(WEB)?.tiers[0]?.ingressPolicies, ['gnp/bb', 'np/prod/bb', 'np/prod/zz']);
  });

  it('a policy hinted AssumeNeededOnEveryNode is programmed with no local endpoint matching it, as Felix does', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      np('db', {
        selector: "app == 'db'",
        performanceHints: ['AssumeNeededOnEveryNode'],
        ingress: [{ action: 'Allow' }],
      }),
      np('cache', { selector: "app == 'cache'", ingress: [{ action: 'Allow' }] }),
    );
    h.flush();
    assert.deepEqual([...h.dp.policies.keys()], ['default/np/prod/db']);
    assert.deepEqual(h.dp.weps.get(WEB)?.tiers, [], 'programmed, but no endpoint jumps to it');
    h.put(np('db', { selector: "app == 'db'", ingress: [{ action: 'Allow' }] }));
    h.flush();
    assert.equal(h.dp.policies.size, 0, 'without the hint it goes');
  });

  it('label changes move endpoints in and out of policies and IP sets', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      wep('db-0', 'node2', '10.65.2.2', { app: 'db' }),
      np('web', { selector: "app == 'web'", egress: [{ action: 'Allow', destination: { selector: "app == 'db'" } }] }),
    );
    h.flush();
    const dbSet = uid(`(projectcalico.org/namespace == 'prod') && (app == 'db')`);
    assert.deepEqual([...(h.dp.ipsets.get(dbSet)?.members ?? [])], ['10.65.2.2/32']);
    // The remote db pod changes app: it leaves the set (a delta, not a new set).
    h.put(wep('db-0', 'node2', '10.65.2.2', { app: 'cache' }));
    const msgs = h.flush();
    assert.deepEqual(msgs.filter((m) => m.type === 'IPSetDeltaUpdate').length, 1);
    assert.deepEqual([...(h.dp.ipsets.get(dbSet)?.members ?? [])], []);
    // The local pod stops matching the policy: the policy goes, and so does its IP set.
    h.put(wep('web-0', 'node1', '10.65.0.2', { app: 'other' }));
    h.flush();
    assert.equal(h.dp.policies.size, 0);
    assert.equal(h.dp.ipsets.size, 0);
    assert.deepEqual(h.dp.weps.get(WEB)?.tiers, []);
    // And back.
    h.put(wep('web-0', 'node1', '10.65.0.2', { app: 'web' }), wep('db-0', 'node2', '10.65.2.2', { app: 'db' }));
    h.flush();
    assert.deepEqual([...(h.dp.ipsets.get(dbSet)?.members ?? [])], ['10.65.2.2/32']);
  });

  it('policies sharing a selector text: deleting or changing one leaves the other matching', () => {
    const h = new Harness();
    const allow = { ingress: [{ action: 'Allow' as const }] };
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      wep('db-0', 'node1', '10.65.0.3', { app: 'db' }),
      gnp('a', { selector: "app == 'web'", ...allow }),
      gnp('b', { selector: "app == 'web'", ...allow }),
    );
    h.flush();
    const ingress = (ep: string) => h.dp.weps.get(`k8s/prod/${ep}/eth0`)?.tiers[0]?.ingressPolicies ?? [];
    assert.deepEqual(ingress('web-0'), ['gnp/a', 'gnp/b']);
    h.del(gnp('a', { selector: "app == 'web'", ...allow }));
    h.flush();
    assert.deepEqual(ingress('web-0'), ['gnp/b']);
    h.put(gnp('b', { selector: "app == 'db'", ...allow }), gnp('c', { selector: "app == 'web'", ...allow }));
    h.flush();
    assert.deepEqual(ingress('web-0'), ['gnp/c']);
    assert.deepEqual(ingress('db-0'), ['gnp/b']);
    // The text "app == 'web'" went unused in between (a's deletion, then b's change).
    h.put(gnp('b', { selector: "app == 'web'", ...allow }));
    h.flush();
    assert.deepEqual(ingress('web-0'), ['gnp/b', 'gnp/c']);
    assert.deepEqual(ingress('db-0'), []);
  });

  it('named ports become IP-and-port members', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      wep('api-0', 'node2', '10.65.3.3', { app: 'api' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
      wep('api-1', 'node2', '10.65.3.4', { app: 'api' }, { ports: [{ name: 'grpc', protocol: 'TCP', port: 9090 }] }),
      np('web', {
        selector: "app == 'web'",
        egress: [{ action: 'Allow', protocol: 'TCP', destination: { selector: "app == 'api'", ports: ['http'] } }],
      }),
    );
    h.flush();
    const sel = uid(`(projectcalico.org/namespace == 'prod') && (app == 'api')`);
    const id = makeUniqueId('n', `${sel},tcp,http`);
    assert.deepEqual(h.dp.policies.get('default/np/prod/web')?.outboundRules[0]?.dstNamedPortIpSetIds, [id]);
    assert.deepEqual(h.dp.ipsets.get(id), { type: 'IP_AND_PORT', members: new Set(['10.65.3.3,tcp:8080']) });
    // api-1 gains the port: it joins without any label change.
    h.put(
      wep('api-1', 'node2', '10.65.3.4', { app: 'api' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8081 }] }),
    );
    h.flush();
    assert.deepEqual([...(h.dp.ipsets.get(id)?.members ?? [])].sort(), ['10.65.3.3,tcp:8080', '10.65.3.4,tcp:8081']);
  });

  it('a GlobalNetworkSet as a rule source', () => {
    const h = new Harness();
    h.put(
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      gns('blocked', ['198.51.100.0/24', '203.0.113.7'], { list: 'blocked' }),
      gnp('deny-blocked', {
        selector: 'all()',
        order: 1,
        ingress: [{ action: 'Deny', source: { selector: "list == 'blocked'" } }],
      }),
    );
    h.flush();
    assert.deepEqual([...(h.dp.ipsets.get(uid("list == 'blocked'"))?.members ?? [])].sort(), [
      '198.51.100.0/24',
      '203.0.113.7/32',
    ]);
    h.put(gns('blocked', ['198.51.100.0/24'], { list: 'blocked' }));
    h.flush();
    assert.deepEqual([...(h.dp.ipsets.get(uid("list == 'blocked'"))?.members ?? [])], ['198.51.100.0/24']);
  });

  it('a missing profile fails closed with deny rules', () => {
    const h = new Harness();
    h.put(wep('web-0', 'node1', '10.65.0.2', { app: 'web' }));
    h.flush();
    const p = h.dp.profiles.get('kns.prod');
    assert.equal(p?.inboundRules[0]?.action, 'deny');
    assert.equal(p?.outboundRules[0]?.action, 'deny');
    h.put(profile('kns.prod', {}, { ingress: [{ action: 'Allow' }] }));
    h.flush();
    assert.equal(h.dp.profiles.get('kns.prod')?.inboundRules[0]?.action, 'allow');
    assert.equal(h.dp.profiles.get('kns.prod')?.outboundRules.length, 0);
  });

  it('deleting everything removes everything, in order', () => {
    const h = new Harness();
    const all = [
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
      wep('fe-0', 'node2', '10.65.1.5', { role: 'fe' }),
      tier('security', 1),
      gnp('g', {
        tier: 'security',
        selector: 'all()',
        ingress: [{ action: 'Allow', source: { selector: "role == 'fe'" } }],
      }),
    ];
    h.put(...all);
    h.flush();
    assert.ok(h.dp.ipsets.size && h.dp.policies.size && h.dp.weps.size && h.dp.profiles.size);
    h.del(...all);
    const msgs = h.flush().map((m) => m.type);
    assert.deepEqual(msgs, [
      'WorkloadEndpointRemove',
      'ActiveProfileRemove',
      'ActivePolicyRemove',
      'IPSetRemove',
      'RouteRemove',
    ]);
    assert.deepEqual(h.dp.snapshot(), { ipsets: [], policies: [], profiles: [], weps: [], heps: [] });
  });

  it('a policy that moves tier is re-sent under its new ID and the old one removed', () => {
    const h = new Harness();
    h.put(profile('kns.prod', {}), wep('web-0', 'node1', '10.65.0.2', { app: 'web' }), tier('a', 1), tier('b', 2));
    h.put(gnp('p', { tier: 'a', selector: 'all()', ingress: [{ action: 'Allow' }] }));
    h.flush();
    assert.ok(h.dp.policies.has('a/gnp/p'));
    h.put(gnp('p', { tier: 'b', selector: 'all()', ingress: [{ action: 'Allow' }] }));
    h.flush();
    assert.deepEqual([...h.dp.policies.keys()], ['b/gnp/p']);
    assert.deepEqual(
      h.dp.weps.get(WEB)?.tiers.map((t) => t.name),
      ['b'],
    );
  });

  it('host endpoints get untracked, pre-DNAT and forward tiers', () => {
    const h = new Harness();
    h.put(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'HostEndpoint',
        metadata: { name: 'node1-eth0', labels: { host: 'true' } },
        spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: ['192.0.2.10'] },
      },
      gnp('untracked', {
        selector: 'has(host)',
        doNotTrack: true,
        applyOnForward: true,
        ingress: [{ action: 'Allow' }],
      }),
      gnp('normal', { selector: 'has(host)', ingress: [{ action: 'Allow' }] }),
    );
    h.flush();
    const hep = h.dp.heps.get('node1-eth0');
    assert.deepEqual(
      hep?.untrackedTiers.map((t) => t.ingressPolicies),
      [['gnp/untracked']],
    );
    assert.deepEqual(
      hep?.tiers.map((t) => t.ingressPolicies),
      [['gnp/normal']],
    );
    assert.deepEqual(hep?.expectedIpv4Addrs, ['192.0.2.10']);
    assert.equal(h.dp.policies.get('default/gnp/untracked')?.untracked, true);
  });
});

describe('calc graph: RouteSource', () => {
  const block = (cidr: string, host: string) => ({
    key: { type: 'Block', cidr } as const,
    value: {
      cidr,
      affinity: `host:${host}`,
      allocations: [0],
      unallocated: [],
      attributes: [{ handle_id: 'gw', secondary: { node: host } }],
      deleted: false,
    },
  });
  const routesOf = (msgs: ReturnType<Harness['flush']>) =>
    msgs.flatMap((m) => (m.type === 'RouteUpdate' ? [`${m.route.dst}@${m.route.dstNodeName}`] : [])).sort();

  it('CalicoIPAM (the default): remote blocks route, remote workloads do not', () => {
    const h = new Harness(false);
    h.graph.onUpdate(block('10.65.1.0/26', 'node2'));
    h.put(profile('kns.prod', {}), wep('web-0', 'node1', '10.65.0.2', {}), wep('db-0', 'node2', '10.65.1.7', {}));
    h.graph.onStatus('in-sync');
    assert.deepEqual(routesOf(h.flush()), ['10.65.0.2/32@node1', '10.65.1.0/26@node2']);
  });

  it('WorkloadIPs, set after the updates came (as at start-up): every workload routes, blocks do not; a later remote workload too', () => {
    const h = new Harness(false);
    h.graph.onUpdate(block('10.65.1.0/26', 'node2'));
    h.put(profile('kns.prod', {}), wep('web-0', 'node1', '10.65.0.2', {}), wep('db-0', 'node2', '10.65.1.7', {}));
    h.graph.setRouteSource('WorkloadIPs');
    h.graph.onStatus('in-sync');
    assert.deepEqual(routesOf(h.flush()), ['10.65.0.2/32@node1', '10.65.1.7/32@node2']);
    h.put(wep('api-0', 'node3', '10.65.2.9', {}));
    h.graph.onUpdate(block('10.65.2.0/26', 'node3'));
    assert.deepEqual(routesOf(h.flush()), ['10.65.2.9/32@node3']);
    h.del(wep('db-0', 'node2', '10.65.1.7', {}));
    assert.deepEqual(
      h
        .flush()
        .filter((m) => m.type === 'RouteRemove')
        .map((m) => (m.type === 'RouteRemove' ? m.dst : '')),
      ['10.65.1.7/32'],
    );
  });

  it('back to CalicoIPAM: the blocks route again and remote workloads stop', () => {
    const h = new Harness(false);
    h.graph.onUpdate(block('10.65.1.0/26', 'node2'));
    h.put(profile('kns.prod', {}), wep('db-0', 'node2', '10.65.1.7', {}));
    h.graph.setRouteSource('WorkloadIPs');
    h.graph.setRouteSource('CalicoIPAM');
    h.graph.onStatus('in-sync');
    assert.deepEqual(routesOf(h.flush()), ['10.65.1.0/26@node2']);
  });
});

describe('calc graph: WireGuard endpoints', () => {
  const KEY = 'aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd28=';
  const KEY6 = 'Ym9uam91ciBib25qb3VyIGJvbmpvdXIgYm9uam91cjE=';
  const node = (spec: Record<string, unknown>, status?: Record<string, unknown>): Res => ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name: 'node2' },
    spec: { bgp: { ipv4Address: '192.0.2.2/24' }, ...spec },
    ...(status ? { status } : {}),
  });
  const wgOf = (msgs: ReturnType<Harness['flush']>) => msgs.filter((m) => m.type.startsWith('Wireguard'));

  it("sends a node's key and device address per family while it has that family's key, as Felix's event sequencer", () => {
    const h = new Harness();
    h.put(node({ wireguard: { interfaceIPv4Address: '10.65.2.1', interfaceIPv6Address: 'fd00::1' } }));
    assert.deepEqual(wgOf(h.flush()), [], 'addresses without keys: nothing to peer with');
    h.put(node({ wireguard: { interfaceIPv4Address: '10.65.2.1' } }, { wireguardPublicKey: KEY }));
    assert.deepEqual(wgOf(h.flush()), [
      { type: 'WireguardEndpointUpdate', hostname: 'node2', publicKey: KEY, interfaceIpv4Addr: '10.65.2.1' },
    ]);
    h.put(node({}, { wireguardPublicKey: KEY, wireguardPublicKeyV6: KEY6 }));
    assert.deepEqual(wgOf(h.flush()), [
      { type: 'WireguardEndpointUpdate', hostname: 'node2', publicKey: KEY, interfaceIpv4Addr: '' },
      { type: 'WireguardEndpointV6Update', hostname: 'node2', publicKeyV6: KEY6, interfaceIpv6Addr: '' },
    ]);
    h.put(node({}, { wireguardPublicKeyV6: KEY6 }));
    assert.deepEqual(wgOf(h.flush()), [
      { type: 'WireguardEndpointRemove', hostname: 'node2' },
      { type: 'WireguardEndpointV6Update', hostname: 'node2', publicKeyV6: KEY6, interfaceIpv6Addr: '' },
    ]);
    h.del(node({}));
    assert.deepEqual(wgOf(h.flush()), [{ type: 'WireguardEndpointV6Remove', hostname: 'node2' }]);
    h.del(node({}));
    assert.deepEqual(wgOf(h.flush()), [], 'nothing sent, nothing to remove');
  });

  it("takes the record as Felix's node processor makes it: an address that is not an IP of its family is left out", () => {
    const h = new Harness();
    h.put(
      node(
        { wireguard: { interfaceIPv4Address: 'fd00::9', interfaceIPv6Address: 'banana' } },
        { wireguardPublicKey: KEY },
      ),
    );
    assert.deepEqual(wgOf(h.flush()), [
      { type: 'WireguardEndpointUpdate', hostname: 'node2', publicKey: KEY, interfaceIpv4Addr: '' },
    ]);
  });
});
