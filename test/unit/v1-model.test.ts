// Felix's internal (v1) model: key paths, the JSON codec and the update processors, checked
// against what libcalico-go's model and processors produce (keys_test.go paths, the
// data-model document's values, the processors' tests' expectations).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { createLogger } from '../../src/log.js';
import type { Resource } from '../../src/model/schemas.js';
import { dashSeparatedParts } from '../../src/model/names.js';
import { keyToPath, legacyPolicyPath, pathToKey, type V1Key } from '../../src/model/v1/keys.js';
import { parseUpdate, parseValue, serializeValue, type V1Update } from '../../src/model/v1/values.js';
import { validateResource } from '../../src/model/validate.js';
import { templates } from '../helpers/bad-corpus.js';
import { gnp, np, profile, wep } from '../helpers/calc-fixtures.js';
import { richResources } from '../helpers/rich-state.js';

const V3 = 'projectcalico.org/v3';

function quietProcessors(warnings: string[] = []) {
  return new UpdateProcessors(
    createLogger({ severity: 'Warning', destination: { write: (l: string) => void warnings.push(JSON.parse(l).msg) } }),
  );
}

function valid(r: unknown): Resource {
  const v = validateResource(r);
  if (!v.ok) throw v.error;
  return v.resource;
}

function process(p: UpdateProcessors, r: Record<string, unknown>, deleted = false): V1Update[] {
  const res = valid(r);
  const meta = res.metadata as { name: string; namespace?: string };
  return p.process(
    { kind: res.kind, name: meta.name, ...(meta.namespace ? { namespace: meta.namespace } : {}) },
    deleted ? undefined : res,
  );
}

// As the bytes Typha would carry: JSON, except config values (raw text).
const wire = (us: V1Update[]) =>
  us.map((u) => {
    if (u.value === undefined) return [keyToPath(u.key), null];
    const text = serializeValue(u.key, u.value as never);
    return [keyToPath(u.key), u.key.type === 'GlobalConfig' || u.key.type === 'HostConfig' ? text : JSON.parse(text)];
  });

describe('v1 model: key paths (model.KeyFromDefaultPath / KeyToDefaultPath)', () => {
  const good: Array<[string, V1Key]> = [
    [
      '/calico/v1/host/foobar/workload/open%2fstack/work%2fload/endpoint/end%2fpoint',
      {
        type: 'WorkloadEndpoint',
        hostname: 'foobar',
        orchestratorId: 'open/stack',
        workloadId: 'work/load',
        endpointId: 'end/point',
      },
    ],
    [
      '/calico/v1/host/node1/workload/k8s/prod%2fweb-0/endpoint/eth0',
      {
        type: 'WorkloadEndpoint',
        hostname: 'node1',
        orchestratorId: 'k8s',
        workloadId: 'prod/web-0',
        endpointId: 'eth0',
      },
    ],
    ['/calico/v1/host/foobar/endpoint/biff', { type: 'HostEndpoint', hostname: 'foobar', endpointId: 'biff' }],
    ['/calico/v1/config/foobar', { type: 'GlobalConfig', name: 'foobar' }],
    ['/calico/v1/config/foobar/bazz', { type: 'GlobalConfig', name: 'foobar/bazz' }],
    ['/calico/v1/host/foobar/config/biff/bopp', { type: 'HostConfig', hostname: 'foobar', name: 'biff/bopp' }],
    ['/calico/v1/host/foobar/wireguard', { type: 'Wireguard', nodeName: 'foobar' }],
    ['/calico/v1/netset/foo', { type: 'NetworkSet', name: 'foo' }],
    ['/calico/v1/netset/prod%2fdbs', { type: 'NetworkSet', name: 'prod/dbs' }],
    ['/calico/v1/Ready', { type: 'ReadyFlag' }],
    [
      '/calico/v1/policy/NetworkPolicy/prod/allow-web',
      { type: 'Policy', kind: 'NetworkPolicy', namespace: 'prod', name: 'allow-web' },
    ],
    [
      '/calico/v1/policy/GlobalNetworkPolicy//security.deny',
      { type: 'Policy', kind: 'GlobalNetworkPolicy', namespace: '', name: 'security.deny' },
    ],
    ['/calico/v1/policy/tier/security/metadata', { type: 'Tier', name: 'security' }],
    ['/calico/v1/policy/profile/kns.prod/rules', { type: 'ProfileRules', name: 'kns.prod' }],
    ['/calico/v1/policy/profile/ksa.prod.default/labels', { type: 'ProfileLabels', name: 'ksa.prod.default' }],
    ['/calico/v1/ipam/v4/pool/10.65.0.0-16', { type: 'IPPool', cidr: '10.65.0.0/16' }],
    ['/calico/v1/ipam/v6/pool/fd00::-48', { type: 'IPPool', cidr: 'fd00::/48' }],
    ['/calico/ipam/v2/assignment/ipv4/block/10.65.1.0-26', { type: 'Block', cidr: '10.65.1.0/26' }],
    ['/calico/resources/v3/projectcalico.org/nodes/node1', { type: 'Resource', kind: 'Node', name: 'node1' }],
    [
      '/calico/resources/v3/projectcalico.org/felixconfigurations/zone-a',
      { type: 'Resource', kind: 'FelixConfiguration', name: 'zone-a' },
    ],
  ];
  for (const [path, key] of good) {
    it(path, () => {
      assert.deepEqual(pathToKey(path), key);
      assert.equal(keyToPath(key), path);
    });
  }

  it('policy keys before 3.32: the tier in the key, the kind told from the name (as v3.32 parseLegacyPolicyName)', () => {
    const cases: Array<[string, V1Key]> = [
      [
        '/calico/v1/policy/tier/default/policy/prod%2fdefault.allow-web',
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'prod', name: 'default.allow-web', tier: 'default' },
      ],
      [
        '/calico/v1/policy/tier/default/policy/prod%2fknp.default.web',
        { type: 'Policy', kind: 'KubernetesNetworkPolicy', namespace: 'prod', name: 'web', tier: 'default' },
      ],
      [
        '/calico/v1/policy/tier/default/policy/prod%2fstaged:knp.default.web',
        { type: 'Policy', kind: 'StagedKubernetesNetworkPolicy', namespace: 'prod', name: 'web', tier: 'default' },
      ],
      [
        '/calico/v1/policy/tier/sec/policy/prod%2fstaged:sec.x',
        { type: 'Policy', kind: 'StagedNetworkPolicy', namespace: 'prod', name: 'sec.x', tier: 'sec' },
      ],
      [
        '/calico/v1/policy/tier/sec/policy/sec.deny',
        { type: 'Policy', kind: 'GlobalNetworkPolicy', namespace: '', name: 'sec.deny', tier: 'sec' },
      ],
      [
        '/calico/v1/policy/tier/sec/policy/staged:sec.deny',
        { type: 'Policy', kind: 'StagedGlobalNetworkPolicy', namespace: '', name: 'sec.deny', tier: 'sec' },
      ],
      [
        '/calico/v1/policy/tier/adminnetworkpolicy/policy/kanp.adminnetworkpolicy.a',
        {
          type: 'Policy',
          kind: 'GlobalNetworkPolicy',
          namespace: '',
          name: 'kanp.adminnetworkpolicy.a',
          tier: 'adminnetworkpolicy',
        },
      ],
    ];
    for (const [path, key] of cases) {
      assert.deepEqual(pathToKey(path), key, path);
      const k = key as V1Key & { type: 'Policy' };
      assert.equal(legacyPolicyPath(k, k.tier as string), path, 'and back');
    }
    // What 3.31's libcalico-go stored: "default." before a Calico policy name without a tier prefix.
    assert.equal(
      legacyPolicyPath({ type: 'Policy', kind: 'NetworkPolicy', namespace: 'prod', name: 'web' }, 'default'),
      '/calico/v1/policy/tier/default/policy/prod%2fdefault.web',
    );
    assert.equal(
      legacyPolicyPath({ type: 'Policy', kind: 'KubernetesNetworkPolicy', namespace: 'prod', name: 'web' }, 'default'),
      '/calico/v1/policy/tier/default/policy/prod%2fknp.default.web',
    );
    for (const bad of [
      '/calico/v1/policy/tier/default/policy/ns%2fa%2fb',
      '/calico/v1/policy/tier/default/policy/%2fname',
      '/calico/v1/policy/tier/default/policy/ns%2f',
      '/calico/v1/policy/tier/default/policy/staged:',
      '/calico/v1/policy/tier//policy/x',
      '/calico/v1/policy/tier/default/policies/x',
    ])
      assert.equal(pathToKey(bad), undefined, bad);
  });

  it('a policy value before 3.32 has no tier: it comes from the key; staged kinds are recognised in both layouts', () => {
    const u = parseUpdate(
      pathToKey('/calico/v1/policy/tier/sec/policy/prod%2fsec.allow') as V1Key,
      '{"namespace":"prod","order":10,"selector":"a == \'b\'","inbound_rules":[{"action":"allow"}],"types":["ingress"]}',
    );
    const p = u.value as { key: { tier: string; name: string }; order: number; namespace: string };
    assert.equal(p.key.tier, 'sec');
    assert.equal(p.key.name, 'np/prod/sec.allow');
    assert.equal(p.order, 10);
    assert.equal(p.namespace, 'prod');
    const modern = parseUpdate(
      pathToKey('/calico/v1/policy/NetworkPolicy/prod/sec.allow') as V1Key,
      '{"tier":"sec","selector":""}',
    );
    assert.equal(keyToPath(u.key), keyToPath(modern.key), 'one policy, whichever layout named it');
    const staged = pathToKey('/calico/v1/policy/tier/default/policy/staged:default.x') as V1Key & { type: 'Policy' };
    const stagedModern = pathToKey('/calico/v1/policy/StagedGlobalNetworkPolicy//default.x') as V1Key & {
      type: 'Policy';
    };
    assert.equal(staged.kind, stagedModern.kind);
  });

  it('refuses what upstream refuses (and what Felix has no use for)', () => {
    for (const path of [
      '/calico/v1',
      '/calico/v1/ipam',
      '/calico/v1/host/foobar',
      '/calico/v1/host/foobar/endpoint',
      '/calico/v1/netset',
      '/calico/v1/Ready/garbage',
      'calico/v1/Ready',
      '/calico/v1/policy/tier/x/policy',
      '/calico/v1/policy/profile/p/other',
      '/calico/bgp/v1/global/peer_v4/10.0.0.5',
      '/calico/ipam/v2/handle/foobar',
      '/calico/felix/v2/region-Europe/host/h1/status',
      '/calico/resources/v3/projectcalico.org/foo/bar/baz',
      '/calico/resources/v3/projectcalico.org/networkpolicies/default',
      '/calico/resources/v3/projectcalico.org/felixconfigurations/default/my-network-policy',
      '/other/v1/config/x',
    ]) {
      assert.equal(pathToKey(path), undefined, path);
    }
  });
});

describe('v1 model: values as libcalico-go serializes them', () => {
  it('a workload endpoint from the data-model document', () => {
    const key = pathToKey('/calico/v1/host/h/workload/k8s/ns%2fpod/endpoint/eth0') as V1Key & {
      type: 'WorkloadEndpoint';
    };
    const ep = parseValue(
      key,
      JSON.stringify({
        state: 'active',
        name: 'cali1234',
        mac: '01:23:45:67:89:AB',
        profile_ids: ['prof1'],
        ipv4_nat: [{ int_ip: '198.51.100.17', ext_ip: '192.168.0.1' }],
        ipv4_nets: ['198.51.100.17/32'],
        ipv6_nat: [{ int_ip: '2001:db8::19', ext_ip: '2001::2' }],
        ipv6_nets: ['2001:db8::19/128'],
        ipv4_gateway: '198.51.100.1',
        labels: { app: 'web' },
        ports: [{ name: 'http', protocol: 'tcp', port: 8080 }],
      }),
    );
    assert.equal(ep.name, 'cali1234');
    assert.equal(ep.mac, '01:23:45:67:89:ab');
    assert.deepEqual(ep.ipv4Nets, ['198.51.100.17/32']);
    assert.deepEqual(ep.ipv6Nets, ['2001:db8::19/128']);
    assert.deepEqual(ep.ipv4Nat, [{ intIp: '198.51.100.17', extIp: '192.168.0.1' }]);
    assert.deepEqual(ep.ports, [{ name: 'http', protocol: 'tcp', port: 8080 }]);
    assert.deepEqual(ep.key, { hostname: 'h', orchestratorId: 'k8s', workloadId: 'ns/pod', endpointId: 'eth0' });
    // Go writes every non-omitempty field, mac and the lists as null when unset.
    const out = JSON.parse(serializeValue(key, { ...ep, mac: undefined } as never));
    assert.deepEqual(Object.keys(out).slice(0, 7), [
      'state',
      'name',
      'active_instance_id',
      'mac',
      'profile_ids',
      'ipv4_nets',
      'ipv6_nets',
    ]);
    assert.equal(out.mac, null);
  });

  it('rules: legacy single nets, ports as numbers, ranges and names, negations, next-tier', () => {
    const key = { type: 'Policy', kind: 'GlobalNetworkPolicy', namespace: '', name: 'p' } as const;
    const p = parseValue(
      key,
      JSON.stringify({
        order: 10,
        tier: 'security',
        selector: "role == 'db'",
        inbound_rules: [
          {
            action: 'allow',
            protocol: 'tcp',
            src_net: '10.0.0.5/8',
            src_nets: ['192.168.0.0/16'],
            src_ports: [1234, '2048:4000', 'http'],
            '!dst_ports': [22],
            ip_version: 4,
          },
          {
            action: 'next-tier',
            protocol: 'icmp',
            '!protocol': 17,
            icmp_type: 8,
            icmp_code: 0,
            '!src_selector': 'has(x)',
            metadata: { annotations: { a: 'b' } },
          },
        ],
        types: ['ingress'],
      }),
    );
    assert.equal(p.key.name, 'gnp/p');
    assert.equal(p.key.tier, 'security');
    assert.equal(p.order, 10);
    assert.deepEqual(p.types, ['ingress']);
    const [a, b] = p.inboundRules;
    assert.deepEqual(a?.srcNets, ['10.0.0.0/8', '192.168.0.0/16']);
    assert.deepEqual(a?.srcPorts, [{ first: 1234, last: 1234 }, { first: 2048, last: 4000 }, { name: 'http' }]);
    assert.deepEqual(a?.notDstPorts, [{ first: 22, last: 22 }]);
    assert.equal(a?.ipVersion, 4);
    assert.equal(b?.action, 'next-tier');
    assert.equal(b?.notProtocol, 17);
    assert.equal(b?.icmpCode, 0);
    assert.equal(b?.notSrcSelector, 'has(x)');
    assert.deepEqual(b?.annotations, { a: 'b' });
    const out = JSON.parse(serializeValue(key, p));
    assert.deepEqual(out.inbound_rules[0].src_ports, [1234, '2048:4000', 'http']);
    assert.deepEqual(out.inbound_rules[0].src_nets, ['10.0.0.0/8', '192.168.0.0/16']);
    assert.equal(out.inbound_rules[1].icmp_code, 0);
    assert.deepEqual(Object.keys(out), ['tier', 'order', 'inbound_rules', 'selector', 'types']);
  });

  it("no types means ingress and egress (Felix's back-compatibility rule)", () => {
    const p = parseValue({ type: 'Policy', kind: 'NetworkPolicy', namespace: 'ns', name: 'p' }, '{"selector":""}');
    assert.deepEqual(p.types, ['ingress', 'egress']);
    assert.equal(p.key.tier, 'default');
    assert.equal(p.key.name, 'np/ns/p');
    assert.equal(p.namespace, 'ns');
  });

  it("an EndpointSlice as Typha sends it (Kubernetes' own JSON) becomes the slice the service sets use", () => {
    const key = pathToKey(
      '/calico/resources/v3/projectcalico.org/kubernetesendpointslices/kube-system/kube-dns-x7k2p',
    ) as V1Key & { type: 'Resource' };
    assert.deepEqual(key, {
      type: 'Resource',
      kind: 'KubernetesEndpointSlice',
      namespace: 'kube-system',
      name: 'kube-dns-x7k2p',
    });
    const r = parseValue(
      key,
      JSON.stringify({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: 'kube-dns-x7k2p',
          namespace: 'kube-system',
          labels: { 'kubernetes.io/service-name': 'kube-dns' },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.96.0.10'], conditions: { ready: true } }],
        ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
      }),
    );
    const slice = r as { kind: string; spec: unknown };
    assert.equal(slice.kind, 'KubernetesEndpointSlice');
    assert.deepEqual(slice.spec, {
      serviceName: 'kube-dns',
      endpoints: [{ addresses: ['10.96.0.10'] }],
      ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
    });
    assert.throws(
      () => parseValue(key, JSON.stringify({ metadata: { name: 'kube-dns-x7k2p', namespace: 'kube-system' } })),
      /without a kubernetes.io\/service-name label/,
    );
  });

  it('config values and the Ready flag are raw text; nil, empty or null bytes are deletions', () => {
    assert.equal(parseValue({ type: 'GlobalConfig', name: 'LogSeverityScreen' }, 'Debug'), 'Debug');
    assert.equal(parseValue({ type: 'ReadyFlag' }, 'true'), true);
    assert.equal(serializeValue({ type: 'ReadyFlag' }, false), 'false');
    for (const text of [undefined, '', 'null'])
      assert.equal(parseUpdate({ type: 'NetworkSet', name: 'n' }, text).value, undefined);
  });

  it('IP pools: encapsulation modes as libcalico-go writes them', () => {
    const key = { type: 'IPPool', cidr: '10.65.0.0/16' } as const;
    const pool = parseValue(
      key,
      JSON.stringify({
        cidr: '10.65.0.0/16',
        ipip: 'tunl0',
        ipip_mode: 'cross-subnet',
        vxlan_mode: '',
        masquerade: true,
        ipam: true,
        disabled: false,
      }),
    );
    assert.deepEqual(pool, {
      cidr: '10.65.0.0/16',
      masquerade: true,
      ipipMode: 'CrossSubnet',
      vxlanMode: 'Never',
      disabled: false,
      allowedUses: [],
    });
    assert.deepEqual(JSON.parse(serializeValue(key, pool)), {
      cidr: '10.65.0.0/16',
      ipip: 'tunl0',
      ipip_mode: 'cross-subnet',
      vxlan_mode: '',
      masquerade: true,
      ipam: true,
      disabled: false,
      disableBGPExport: false,
      assignment_mode: 'Automatic',
    });
    // allowed_uses as libcalico-go's model.IPPool carries it (omitted when empty); an unknown use refused.
    const lb = parseValue(key, JSON.stringify({ cidr: '10.65.0.0/16', allowed_uses: ['LoadBalancer'] }));
    assert.deepEqual((lb as { allowedUses: string[] }).allowedUses, ['LoadBalancer']);
    assert.deepEqual(JSON.parse(serializeValue(key, lb)).allowed_uses, ['LoadBalancer']);
    assert.throws(
      () => parseValue(key, JSON.stringify({ cidr: '10.65.0.0/16', allowed_uses: ['Pods'] })),
      /unknown use/,
    );
  });

  it('bad values are clean errors naming the field', () => {
    const cases: Array<[V1Key, string, RegExp]> = [
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"src_tag":"t"}]}',
        /inbound_rules\[0\]\.src_tag: tags are not supported/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"action":"drop"}]}',
        /unknown action "drop"/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"outbound_rules":[{"dst_ports":["9:1"]}]}',
        /dst_ports\[0\]/,
      ],
      [{ type: 'Policy', kind: 'Unknown', namespace: 'n', name: 'p' }, '{}', /unknown policy kind/],
      [
        { type: 'WorkloadEndpoint', hostname: 'h', orchestratorId: 'k8s', workloadId: 'a/b', endpointId: 'e' },
        '{"ipv4_nets":["10.0.0.300/32"]}',
        /ipv4_nets\[0\]/,
      ],
      [
        { type: 'WorkloadEndpoint', hostname: 'h', orchestratorId: 'k8s', workloadId: 'a/b', endpointId: 'e' },
        '{"state":"inactive"}',
        /only "active"/,
      ],
      [{ type: 'HostEndpoint', hostname: 'h', endpointId: 'e' }, '{"labels":{"a":1}}', /labels\.a: expected a string/],
      [{ type: 'Tier', name: 't' }, '{"defaultAction":"Allow"}', /Deny or Pass/],
      // What Felix's validator refuses, and the dataplane could not program.
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"selector":"app == "}',
        /^selector: invalid selector/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"!dst_selector":"has("}]}',
        /!dst_selector: invalid selector/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"dst_ports":[80]}]}',
        /ports are only allowed with protocol/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"protocol":"tcp","icmp_type":8}]}',
        /need protocol icmp/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"protocol":"gre"}]}',
        /protocol: expected TCP, UDP/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' },
        '{"inbound_rules":[{"ip_version":6,"src_nets":["10.0.0.0/8"]}]}',
        /in an ip_version 6 rule/,
      ],
      [
        { type: 'WorkloadEndpoint', hostname: 'h', orchestratorId: 'k8s', workloadId: 'a/b', endpointId: 'e' },
        '{"name":"a-very-long-interface-name"}',
        /not a Linux interface name/,
      ],
      [
        { type: 'WorkloadEndpoint', hostname: 'h', orchestratorId: 'k8s', workloadId: 'a/b', endpointId: 'e' },
        '{"mac":"zz"}',
        /not a MAC address/,
      ],
      [
        { type: 'WorkloadEndpoint', hostname: 'h', orchestratorId: 'k8s', workloadId: 'a/b', endpointId: 'e' },
        '{"profile_ids":["Bad Name"]}',
        /not a Calico name/,
      ],
      [
        { type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p q' },
        '{}',
        /policy name: "p q" is not a Calico name/,
      ],
      [{ type: 'Policy', kind: 'NetworkPolicy', namespace: 'n', name: 'p' }, '{"tier":"T!"}', /tier: "T!"/],
      [{ type: 'ProfileRules', name: 'x;y' }, '{}', /profile name/],
      [{ type: 'ReadyFlag' }, 'yes', /true or false/],
      [{ type: 'NetworkSet', name: 'n' }, '{not json', /not JSON/],
      [
        { type: 'Resource', kind: 'Node', name: 'n1' },
        JSON.stringify({ apiVersion: V3, kind: 'Node', metadata: { name: 'n2' }, spec: {} }),
        /different resource/,
      ],
    ];
    for (const [key, text, re] of cases) {
      assert.throws(
        () => parseValue(key, text),
        (e: Error & { code?: string }) => re.test(e.message) && e.code === 'EV1VALUE',
        `${keyToPath(key)} ${text}`,
      );
    }
  });
});

describe('v1 model: update processors', () => {
  it("NetworkPolicy as upstream's test: the namespace clause, the default tier, no apply-on-forward", () => {
    const p = quietProcessors();
    const out = wire(
      process(p, {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'minimal', namespace: 'namespace1' },
        spec: { types: ['Ingress'] },
      }),
    );
    assert.deepEqual(out, [
      [
        '/calico/v1/policy/NetworkPolicy/namespace1/minimal',
        {
          namespace: 'namespace1',
          tier: 'default',
          selector: "projectcalico.org/namespace == 'namespace1'",
          types: ['ingress'],
        },
      ],
    ]);
    const full = wire(
      process(p, {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'full', namespace: 'ns2' },
        spec: { order: 101, selector: "mylabel == 'selectme'", types: ['Ingress', 'Egress'] },
      }),
    );
    assert.equal(
      (full[0]?.[1] as { selector: string } | undefined)?.selector,
      "(mylabel == 'selectme') && projectcalico.org/namespace == 'ns2'",
    );
    assert.deepEqual(
      wire(
        process(
          p,
          { apiVersion: V3, kind: 'NetworkPolicy', metadata: { name: 'full', namespace: 'ns2' }, spec: {} },
          true,
        ),
      ),
      [['/calico/v1/policy/NetworkPolicy/ns2/full', null]],
    );
  });

  it('Profile: labels (deleted when there are none), rules, and the v3 resource itself', () => {
    const out = wire(
      process(quietProcessors(), {
        apiVersion: V3,
        kind: 'Profile',
        metadata: { name: 'kns.prod' },
        spec: { ingress: [{ action: 'Allow' }] },
      }),
    );
    assert.deepEqual(
      out.map(([k, v]) => [k, v && typeof v === 'object' && 'kind' in v ? 'v3' : v]),
      [
        ['/calico/v1/policy/profile/kns.prod/labels', null],
        ['/calico/v1/policy/profile/kns.prod/rules', { inbound_rules: [{ action: 'allow' }] }],
        ['/calico/resources/v3/projectcalico.org/profiles/kns.prod', 'v3'],
      ],
    );
  });

  it('WorkloadEndpoint: the key comes from the name; a name that does not match the spec is refused', () => {
    const warnings: string[] = [];
    const p = quietProcessors(warnings);
    const w = wep('web-0', 'node1', '10.65.0.2', { app: 'web' });
    assert.deepEqual(
      process(p, w).map((u) => keyToPath(u.key)),
      ['/calico/v1/host/node1/workload/k8s/prod%2fweb-0/endpoint/eth0'],
    );
    const renamed = { ...w, metadata: { ...w.metadata, name: 'node1-k8s-web-0-eth0' } };
    assert.deepEqual(process(p, renamed), []);
    const moved = { ...w, spec: { ...w.spec, node: 'node2' } };
    assert.deepEqual(
      wire(process(p, moved)),
      [['/calico/v1/host/node1/workload/k8s/prod%2fweb-0/endpoint/eth0', null]],
      'what it had sent is retracted',
    );
    assert.equal(warnings.length, 2);
    assert.match(warnings[0] ?? '', /is not "<node>-<orchestrator>-<workload>-<endpoint>"/);
    assert.match(warnings[1] ?? '', /does not match spec\.node \("node2" in the spec, "node1" in the name\)/);
  });

  it('WorkloadEndpoint names: "--" is a dash inside a part, as names.ExtractDashSeparatedParms', () => {
    const split = (name: string) => dashSeparatedParts(name, 4);
    assert.deepEqual(split('node--1-k8s-nginx--deployment--5c689d88bb--8xnpl-eth0'), [
      'node-1',
      'k8s',
      'nginx-deployment-5c689d88bb-8xnpl',
      'eth0',
    ]);
    assert.deepEqual(split('a-b-c-d'), ['a', 'b', 'c', 'd']);
    // "---": an escaped dash, then a separator; a leading dash belongs to the first part.
    assert.deepEqual(split('n---x-y-z'), ['n-', 'x', 'y', 'z']);
    assert.deepEqual(split('-n--x-y-z-w'), ['-n-x', 'y', 'z', 'w']);
    assert.deepEqual(split('-n-x-y-z'), ['-n', 'x', 'y', 'z']);
    assert.equal(split('n--x-y-z--'), undefined, 'three parts, the last ending in a dash');
    assert.equal(split('n-x-y'), undefined, 'three parts');
    assert.equal(split('n-x--y-z'), undefined, 'three parts, one with a dash');
    assert.equal(split('n-x-y-z-'), undefined, 'an empty fifth part');
    assert.equal(split('n--x-y-z-w-v'), undefined, 'five parts');
  });

  it('IPPool: two pools with one CIDR - the lowest name wins, and the other takes over when it goes', () => {
    const p = quietProcessors();
    const pool = (name: string, natOutgoing: boolean) => ({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name },
      spec: { cidr: '10.65.0.0/16', natOutgoing },
    });
    assert.deepEqual(
      wire(process(p, pool('b', false))).map(([k, v]) => [k, (v as { masquerade: boolean }).masquerade]),
      [['/calico/v1/ipam/v4/pool/10.65.0.0-16', false]],
    );
    assert.deepEqual(
      wire(process(p, pool('a', true))).map(([k, v]) => [k, (v as { masquerade: boolean }).masquerade]),
      [['/calico/v1/ipam/v4/pool/10.65.0.0-16', true]],
    );
    assert.deepEqual(process(p, pool('b', true)), [], 'the loser changing sends nothing');
    assert.deepEqual(
      wire(process(p, pool('a', true), true)).map(([k, v]) => [k, (v as { masquerade: boolean }).masquerade]),
      [['/calico/v1/ipam/v4/pool/10.65.0.0-16', true]],
      'b takes over',
    );
    assert.deepEqual(wire(process(p, pool('b', true), true)), [['/calico/v1/ipam/v4/pool/10.65.0.0-16', null]]);
  });

  it('HostEndpoint: moving to another node retracts the old key', () => {
    const p = quietProcessors();
    const h = {
      apiVersion: V3,
      kind: 'HostEndpoint',
      metadata: { name: 'eth0-host', labels: { role: 'host' } },
      spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: ['192.0.2.1'] },
    };
    assert.deepEqual(
      wire(process(p, h)).map(([k]) => k),
      ['/calico/v1/host/node1/endpoint/eth0-host'],
    );
    const moved = { ...h, spec: { ...h.spec, node: 'node2' } };
    assert.deepEqual(
      wire(process(p, moved)).map(([k, v]) => [k, v === null]),
      [
        ['/calico/v1/host/node1/endpoint/eth0-host', true],
        ['/calico/v1/host/node2/endpoint/eth0-host', false],
      ],
    );
    assert.deepEqual(wire(process(p, moved, true)), [['/calico/v1/host/node2/endpoint/eth0-host', null]]);
  });

  it('FelixConfiguration: default is global, node.<name> host config, others pass as v3; unset fields are retracted', () => {
    const p = quietProcessors();
    const fc = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: V3,
      kind: 'FelixConfiguration',
      metadata: { name },
      spec,
    });
    assert.deepEqual(wire(process(p, fc('default', { logSeverityScreen: 'Debug', reportingInterval: '90s' }))), [
      ['/calico/v1/config/LogSeverityScreen', 'Debug'],
      ['/calico/v1/config/ReportingIntervalSecs', '90'],
    ]);
    assert.deepEqual(wire(process(p, fc('default', { reportingInterval: '30s' }))), [
      ['/calico/v1/config/LogSeverityScreen', null],
      ['/calico/v1/config/ReportingIntervalSecs', '30'],
    ]);
    assert.deepEqual(wire(process(p, fc('node.n1', { healthPort: 9199 }))), [
      ['/calico/v1/host/n1/config/HealthPort', '9199'],
    ]);
    assert.deepEqual(wire(process(p, fc('node.n1', {}), true)), [['/calico/v1/host/n1/config/HealthPort', null]]);
    assert.deepEqual(
      process(p, fc('zone-a', { nodeSelector: 'all()' })).map((u) => keyToPath(u.key)),
      ['/calico/resources/v3/projectcalico.org/felixconfigurations/zone-a'],
    );
  });

  it("Node: its WireGuard record as libcalico-go's felix node processor writes it (what a Felix behind palisade typha peers with)", () => {
    const key = 'aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd28=';
    const node = (status?: Record<string, unknown>) => ({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name: 'node2' },
      spec: { wireguard: { interfaceIPv4Address: '10.65.2.1' } },
      ...(status ? { status } : {}),
    });
    const wg = (us: V1Update[]) => wire(us).filter(([path]) => path === '/calico/v1/host/node2/wireguard');
    assert.deepEqual(wg(process(quietProcessors(), node({ wireguardPublicKey: key }))), [
      ['/calico/v1/host/node2/wireguard', { interfaceIPv4Addr: '10.65.2.1', publicKey: key }],
    ]);
    assert.deepEqual(wg(process(quietProcessors(), node())), [
      ['/calico/v1/host/node2/wireguard', { interfaceIPv4Addr: '10.65.2.1' }],
    ]);
    assert.deepEqual(wg(process(quietProcessors(), node(), true)), [['/calico/v1/host/node2/wireguard', null]]);
  });

  it('ClusterInformation: global keys and the Ready flag', () => {
    const out = wire(
      process(quietProcessors(), {
        apiVersion: V3,
        kind: 'ClusterInformation',
        metadata: { name: 'default' },
        spec: { clusterGUID: 'abc', datastoreReady: true },
      }),
    );
    assert.deepEqual(out, [
      ['/calico/v1/config/ClusterGUID', 'abc'],
      ['/calico/v1/Ready', true],
    ]);
  });

  it('every valid resource of the test corpus survives serialize -> parse unchanged (the Typha path equals the direct one)', () => {
    const p = quietProcessors();
    const resources = [
      ...richResources(),
      ...templates().filter((d) => validateResource(d).ok),
      np('allow', { selector: "app == 'web'" }),
      gnp('g', {}),
      profile('kns.prod', { a: 'b' }),
      wep('web-0', 'node1', '10.65.0.2', { app: 'web' }),
    ];
    let n = 0;
    for (const r of resources) {
      for (const u of process(p, r as Record<string, unknown>)) {
        if (u.value === undefined) continue;
        const text = serializeValue(u.key, u.value as never);
        const back = parseUpdate(pathToKey(keyToPath(u.key)) as V1Key, text);
        assert.deepEqual(back.key, u.key);
        assert.deepEqual(back.value, u.value, keyToPath(u.key));
        n++;
      }
    }
    assert.ok(n > 20, `${n} values`);
  });
});
