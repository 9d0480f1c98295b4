// Kubernetes -> Calico conversions (issue 18), against the expectations of libcalico-go's
// own k8s/conversion tests: pods as WorkloadEndpoints, namespaces and service accounts as
// profiles, NetworkPolicies as Calico policies (selectors, ports, peers, types).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  k8sNetworkPolicyToCalico,
  k8sSelectorToCalico,
  simplifyPorts,
} from '../../src/datastore/kdd/conversion/network-policy.js';
import { podWorkloadEndpointName, vethNameForWorkload } from '../../src/datastore/kdd/conversion/names.js';
import {
  isCalicoPod,
  isFinished,
  KddConversionError,
  podToWorkloadEndpoint,
} from '../../src/datastore/kdd/conversion/pod.js';
import { namespaceToProfile, serviceAccountToProfile } from '../../src/datastore/kdd/conversion/profiles.js';
import type { Pod } from '../../src/datastore/kdd/k8s-types.js';
import { validateResource } from '../../src/model/validate.js';

type Spec = Record<string, unknown> & { ipNetworks?: string[]; ports?: unknown[]; profiles?: string[] };
const specOf = (r: Record<string, unknown>) => r.spec as Spec;
/**
 * Validates a converted endpoint; upstream's fixture has port names longer than Kubernetes allows (15), which the v3
 * API refuses too.
 */
const validEndpoint = (wep: Record<string, unknown>) => {
  const s = specOf(wep);
  const ports = (s.ports ?? []).filter((p) => ((p as { name?: string }).name ?? '').length <= 15);
  return validateResource({ ...wep, spec: { ...s, ports } }).ok;
};

const podA = (extra: Partial<Pod> = {}): Pod => ({
  metadata: {
    name: 'podA',
    namespace: 'default',
    resourceVersion: '1234',
    labels: { labelA: 'valueA', labelB: 'valueB' },
    annotations: {},
  },
  spec: {
    nodeName: 'nodeA',
    serviceAccountName: '',
    initContainers: [{ ports: [{ name: 'init-port', containerPort: 3000 }] }],
    containers: [
      { ports: [{ containerPort: 5678 }, { name: 'no-proto', containerPort: 1234 }] },
      {
        ports: [
          { name: 'tcp-proto', protocol: 'TCP', containerPort: 1024 },
          { name: 'tcp-proto-with-host-port', protocol: 'TCP', containerPort: 8080, hostPort: 5678 },
          {
            name: 'tcp-proto-with-host-port-and-ip',
            protocol: 'TCP',
            containerPort: 8081,
            hostPort: 6789,
            hostIP: '1.2.3.4',
          },
          { protocol: 'TCP', containerPort: 500, hostPort: 5000 },
          { name: 'udp-proto', protocol: 'UDP', containerPort: 432 },
          { name: 'sctp-proto', protocol: 'SCTP', containerPort: 891 },
          { name: 'unkn-proto', protocol: 'unknown', containerPort: 567 },
        ],
      },
    ],
  },
  status: { podIP: '192.168.0.1' },
  ...extra,
});

describe('KDD conversion: pods', () => {
  it('a pod with an IP, as upstream\'s "should parse a Pod with an IP to a WorkloadEndpoint"', () => {
    const wep = podToWorkloadEndpoint(podA());
    assert.deepEqual(wep.metadata, {
      name: 'nodeA-k8s-podA-eth0',
      namespace: 'default',
      resourceVersion: '1234',
      labels: {
        labelA: 'valueA',
        labelB: 'valueB',
        'projectcalico.org/namespace': 'default',
        'projectcalico.org/orchestrator': 'k8s',
      },
    });
    const s = specOf(wep);
    assert.equal(s.pod, 'podA');
    assert.equal(s.node, 'nodeA');
    assert.equal(s.endpoint, 'eth0');
    assert.equal(s.orchestrator, 'k8s');
    assert.deepEqual(s.ipNetworks, ['192.168.0.1/32']);
    assert.deepEqual(s.profiles, ['kns.default']);
    // Fixed across releases (upstream's own expectation): pods keep their interface over an upgrade.
    assert.equal(s.interfaceName, 'cali7f94ce7c295');
    assert.deepEqual(
      new Set((s.ports ?? []).map((p) => JSON.stringify(p))),
      new Set(
        [
          { name: 'no-proto', protocol: 'TCP', port: 1234 },
          { name: 'tcp-proto', protocol: 'TCP', port: 1024 },
          { name: 'tcp-proto-with-host-port', protocol: 'TCP', port: 8080, hostPort: 5678 },
          { name: 'tcp-proto-with-host-port-and-ip', protocol: 'TCP', port: 8081, hostPort: 6789, hostIP: '1.2.3.4' },
          { protocol: 'TCP', port: 500, hostPort: 5000 },
          { name: 'udp-proto', protocol: 'UDP', port: 432 },
          { name: 'sctp-proto', protocol: 'SCTP', port: 891 },
          { name: 'init-port', protocol: 'TCP', port: 3000 },
        ].map((p) => JSON.stringify(p)),
      ),
      'named or host ports of known protocols, from containers and init containers',
    );
    // (Real pod and node names are lower case, as the v3 API requires.)
    const lower = podA();
    lower.metadata = { ...lower.metadata, name: 'poda' };
    lower.spec = { ...lower.spec, nodeName: 'nodea' };
    assert.ok(validEndpoint(podToWorkloadEndpoint(lower)), 'a valid v3 WorkloadEndpoint');
    assert.equal(vethNameForWorkload('default', 'podB'), 'cali92cf1f5e9f6');
    assert.equal(
      vethNameForWorkload('default', 'podB', 'tap,cali'),
      'tap92cf1f5e9f6',
      'the first of FELIX_INTERFACEPREFIX',
    );
  });

  it("IP sources in Calico's order; finished pods own no IPs; host-networked and unscheduled pods are not endpoints", () => {
    const withIPs = (status: NonNullable<Pod['status']>, annotations: Record<string, string> = {}) =>
      specOf(podToWorkloadEndpoint({ ...podA(), status, metadata: { ...podA().metadata, annotations } })).ipNetworks;
    assert.deepEqual(withIPs({ podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.2' }, { ip: 'fd00::2' }] }), [
      '10.0.0.2/32',
      'fd00::2/128',
    ]);
    assert.deepEqual(
      withIPs({}, { 'cni.projectcalico.org/podIPs': '10.0.0.3,fd00::3', 'cni.projectcalico.org/podIP': '10.0.0.4' }),
      ['10.0.0.3/32', 'fd00::3/128'],
    );
    assert.deepEqual(withIPs({}, { 'cni.projectcalico.org/podIP': '10.0.0.4/32' }), ['10.0.0.4/32']);
    assert.deepEqual(withIPs({}, { 'vpc.amazonaws.com/pod-ips': '10.0.0.5' }), ['10.0.0.5/32']);
    assert.deepEqual(withIPs({}), []);
    for (const phase of ['Failed', 'Succeeded', 'Completed'])
      assert.deepEqual(withIPs({ phase, podIP: '10.0.0.1' }), [], phase);
    for (const phase of ['Pending', 'Running', 'Unknown'])
      assert.equal(isFinished({ status: { phase } }), false, phase);
    assert.equal(
      isFinished({
        metadata: { deletionTimestamp: '2026-11-23T00:00:00Z', annotations: { 'cni.projectcalico.org/podIP': '' } },
      }),
      true,
    );
    assert.equal(isCalicoPod(podA()), true);
    assert.equal(isCalicoPod({ ...podA(), spec: { ...podA().spec, hostNetwork: true } }), false);
    assert.equal(isCalicoPod({ ...podA(), spec: { ...podA().spec, nodeName: '' } }), false);
  });

  it('service account, dashes, floating IPs and allowed source prefixes; bad annotations are clear errors', () => {
    const pod = podA({ status: { podIPs: [{ ip: '10.0.0.7' }, { ip: 'fd00::7' }] } });
    pod.metadata = {
      ...pod.metadata,
      name: 'web-0',
      namespace: 'prod-ns',
      annotations: {
        'cni.projectcalico.org/floatingIPs': '["1.1.1.1","2001::1"]',
        'cni.projectcalico.org/allowedSourcePrefixes': '["8.8.8.0/24"]',
        'cni.projectcalico.org/containerID': 'abc',
      },
    };
    pod.spec = { ...pod.spec, nodeName: 'node-1', serviceAccountName: 'builder' };
    const wep = podToWorkloadEndpoint(pod);
    assert.equal((wep.metadata as { name: string }).name, 'node--1-k8s-web--0-eth0');
    assert.equal(podWorkloadEndpointName('node-1', 'web-0'), 'node--1-k8s-web--0-eth0');
    const s = specOf(wep);
    assert.deepEqual(s.profiles, ['kns.prod-ns', 'ksa.prod-ns.builder']);
    assert.equal(
      (wep.metadata as { labels: Record<string, string> }).labels['projectcalico.org/serviceaccount'],
      'builder',
    );
    assert.deepEqual(s.ipNATs, [
      { internalIP: '10.0.0.7', externalIP: '1.1.1.1' },
      { internalIP: 'fd00::7', externalIP: '2001::1' },
    ]);
    assert.deepEqual(s.allowSpoofedSourcePrefixes, ['8.8.8.0/24']);
    assert.equal(s.containerID, 'abc');
    assert.ok(validEndpoint(wep));
    const bad = (annotations: Record<string, string>) => () =>
      podToWorkloadEndpoint({ ...podA(), metadata: { ...podA().metadata, annotations } });
    assert.throws(
      bad({ 'cni.projectcalico.org/floatingIPs': 'nope' }),
      (e: Error) => e instanceof KddConversionError && /floatingIPs.*not JSON/.test(e.message),
    );
    assert.throws(bad({ 'cni.projectcalico.org/allowedSourcePrefixes': '["x"]' }), /not a CIDR/);
    assert.throws(() => podToWorkloadEndpoint({ ...podA(), status: { podIP: 'banana' } }), /not an IP address/);
  });
});

describe('KDD conversion: profiles', () => {
  it('a namespace: kns.<name>, allow both ways, pcns. labels and its name', () => {
    const p = namespaceToProfile({ metadata: { name: 'default', labels: { foo: 'bar' }, resourceVersion: '7' } });
    assert.deepEqual(p, {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.default', resourceVersion: '7' },
      spec: {
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
        labelsToApply: { 'pcns.foo': 'bar', 'pcns.projectcalico.org/name': 'default' },
      },
    });
    assert.ok(validateResource(p).ok);
  });

  it('a service account: ksa.<namespace>.<name>, no rules, pcsa. labels and its name', () => {
    const p = serviceAccountToProfile({ metadata: { name: 'sa-test', namespace: 'test', labels: { role: 'x' } } });
    assert.deepEqual(p.metadata, { name: 'ksa.test.sa-test' });
    assert.deepEqual(p.spec, { labelsToApply: { 'pcsa.role': 'x', 'pcsa.projectcalico.org/name': 'sa-test' } });
    assert.deepEqual(serviceAccountToProfile({ metadata: { name: 'x' } }).metadata, { name: 'ksa.default.x' });
    assert.ok(validateResource(p).ok);
  });
});

describe('KDD conversion: NetworkPolicy', () => {
  it("selectors, as upstream's table", () => {
    const cases: Array<[Parameters<typeof k8sSelectorToCalico>[0], 'pod' | 'namespace', string]> = [
      [{}, 'pod', "projectcalico.org/orchestrator == 'k8s'"],
      [{}, 'namespace', 'all()'],
      [{ matchExpressions: [{ key: 'toast', operator: 'DoesNotExist' }] }, 'namespace', '! has(toast)'],
      [{ matchExpressions: [{ key: 'toast', operator: 'Exists' }] }, 'namespace', 'has(toast)'],
      [
        { matchExpressions: [{ key: 'toast', operator: 'In', values: ['butter', 'jam'] }] },
        'namespace',
        "toast in { 'butter', 'jam' }",
      ],
      [
        { matchExpressions: [{ key: 'toast', operator: 'NotIn', values: ['marmite', 'milk'] }] },
        'namespace',
        "toast not in { 'marmite', 'milk' }",
      ],
      [
        { matchExpressions: [{ key: 'toast', operator: 'DoesNotExist' }] },
        'pod',
        "projectcalico.org/orchestrator == 'k8s' && ! has(toast)",
      ],
      [undefined, 'pod', "projectcalico.org/orchestrator == 'k8s'"],
      [undefined, 'namespace', ''],
      [
        { matchLabels: { k2: 'v2', k: 'v' } },
        'pod',
        "projectcalico.org/orchestrator == 'k8s' && k == 'v' && k2 == 'v2'",
      ],
    ];
    for (const [s, type, want] of cases) assert.equal(k8sSelectorToCalico(s, type), want, JSON.stringify(s));
  });

  it("SimplifyPorts, as upstream's table", () => {
    const cases: Array<[string, string]> = [
      ['', ''],
      ['0', '0'],
      ['1', '1'],
      ['65535', '65535'],
      ['0:65535', '0:65535'],
      ['1,2', '1:2'],
      ['2,1', '1:2'],
      ['1,2,4', '1:2,4'],
      ['1,2,3,4,80:81,81:90,9090', '1:4,80:90,9090'],
      ['81:90,4,2,80:81,3,1,9090', '1:4,80:90,9090'],
      ['81:90,4,2,foo,80:81,3,1,9090,http', 'foo,http,1:4,80:90,9090'],
      ['foo', 'foo'],
    ];
    for (const [input, want] of cases) {
      const ports = input ? input.split(',').map((p) => (/^\d+$/.test(p) ? Number(p) : p)) : [];
      assert.equal(simplifyPorts(ports).map(String).join(','), want, input);
    }
  });

  it("multiple peers and ports, as upstream's test: one rule per (protocol, peer), protocols sorted", () => {
    const { resource, problems } = k8sNetworkPolicyToCalico({
      metadata: { name: 'test.policy', namespace: 'default' },
      spec: {
        podSelector: { matchLabels: { label: 'value' } },
        ingress: [
          {
            ports: [
              { port: 90, protocol: 'UDP' },
              { port: 80, protocol: 'TCP' },
            ],
            from: [{ podSelector: { matchLabels: { k: 'v' } } }, { podSelector: { matchLabels: { k2: 'v2' } } }],
          },
        ],
        policyTypes: ['Ingress'],
      },
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(resource.metadata, { name: 'test.policy', namespace: 'default' });
    const spec = resource.spec as {
      order: number;
      tier: string;
      selector: string;
      types: string[];
      ingress: Array<{ protocol: string; source: { selector: string }; destination: { ports: unknown[] } }>;
      egress?: unknown;
    };
    assert.equal(spec.order, 1000);
    assert.equal(spec.tier, 'default');
    assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s' && label == 'value'");
    assert.deepEqual(spec.types, ['Ingress']);
    assert.equal(spec.egress, undefined);
    assert.deepEqual(
      spec.ingress.map((r) => [r.protocol, r.source.selector, r.destination.ports]),
      [
        ['TCP', "projectcalico.org/orchestrator == 'k8s' && k == 'v'", [80]],
        ['TCP', "projectcalico.org/orchestrator == 'k8s' && k2 == 'v2'", [80]],
        ['UDP', "projectcalico.org/orchestrator == 'k8s' && k == 'v'", [90]],
        ['UDP', "projectcalico.org/orchestrator == 'k8s' && k2 == 'v2'", [90]],
      ],
    );
    // The spec is a valid NetworkPolicy spec.
    assert.ok(validateResource({ ...resource, kind: 'NetworkPolicy' }).ok);
  });

  it('ipBlock with except, namespace selectors, endPort, TCP by default, port merging, egress, types', () => {
    const { resource, problems } = k8sNetworkPolicyToCalico({
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        podSelector: {},
        ingress: [
          {
            from: [
              { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } },
              { namespaceSelector: {} },
              { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: { matchLabels: { app: 'x' } } },
            ],
            ports: [{ port: 81 }, { port: 80 }, { port: 'http' }, { port: 8000, endPort: 8010 }],
          },
          {},
        ],
        egress: [{ to: [{ podSelector: {} }], ports: [{ protocol: 'UDP' }] }],
        policyTypes: ['Egress', 'Ingress'],
      },
    });
    assert.deepEqual(problems, []);
    const spec = resource.spec as {
      selector: string;
      types: string[];
      ingress: Array<Record<string, unknown>>;
      egress: Array<Record<string, unknown>>;
    };
    assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s'");
    assert.deepEqual(spec.types, ['Ingress', 'Egress']);
    assert.deepEqual(spec.ingress, [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { nets: ['10.0.0.0/8'], notNets: ['10.1.0.0/16'] },
        destination: { ports: ['http', '80:81', '8000:8010'] },
      },
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "projectcalico.org/orchestrator == 'k8s'", namespaceSelector: 'all()' },
        destination: { ports: ['http', '80:81', '8000:8010'] },
      },
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "projectcalico.org/orchestrator == 'k8s' && app == 'x'", namespaceSelector: "team == 'a'" },
        destination: { ports: ['http', '80:81', '8000:8010'] },
      },
      { action: 'Allow' },
    ]);
    assert.deepEqual(spec.egress, [
      { action: 'Allow', protocol: 'UDP', destination: { selector: "projectcalico.org/orchestrator == 'k8s'" } },
    ]);
    assert.ok(validateResource({ ...resource, kind: 'NetworkPolicy' }).ok);
    // No policy types: Ingress only, egress rules kept.
    const noTypes = k8sNetworkPolicyToCalico({ metadata: { name: 'q', namespace: 'ns' }, spec: { egress: [{}] } })
      .resource.spec as { types: string[]; egress: unknown[] };
    assert.deepEqual(noTypes.types, ['Ingress']);
    assert.equal(noTypes.egress.length, 1);
  });

  it('a rule that cannot be converted is dropped and reported; the rest stands', () => {
    const { resource, problems } = k8sNetworkPolicyToCalico({
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        ingress: [{ from: [{ ipBlock: { cidr: 'banana' } }] }, { ports: [{ port: 80 }] }],
        egress: [{ ports: [{ port: 90, endPort: 80 }] }],
      },
    });
    assert.equal(problems.length, 2);
    assert.match(problems[0] ?? '', /ingress rule 0: ipBlock cidr "banana" is not a CIDR; dropped/);
    assert.match(problems[1] ?? '', /egress rule 0: invalid port range 90:80; dropped/);
    assert.deepEqual((resource.spec as { ingress: unknown[] }).ingress, [
      { action: 'Allow', protocol: 'TCP', destination: { ports: [80] } },
    ]);
  });
});

describe('KDD conversion: NetworkPolicies Kubernetes would not accept (issue 51 D9)', () => {
  const INJECTED = "nobody' || app == 'client";
  const validate = (r: Record<string, unknown>) => {
    const v = validateResource(r);
    assert.ok(v.ok, v.ok ? '' : v.error.message);
  };

  it('a peer selector value that would widen the peer is refused, and only its rule is dropped', () => {
    const { resource, problems } = k8sNetworkPolicyToCalico({
      metadata: { name: 'db', namespace: 'shop' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: INJECTED } } }] },
          { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ port: 5432 }] },
          { from: [{ podSelector: { matchLabels: { "a == 'b' || has(x": 'y' } } }] },
          { from: [{ namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: [INJECTED] }] } }] },
          { from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] } }] },
          { from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] } }] },
          { from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['x'] }] } }] },
          { ports: [{ protocol: 'FOO' as never, port: 80 }] },
          { ports: [{ port: 'http port' }] },
        ],
      },
    });
    assert.deepEqual(
      problems.map((p) => p.replace(/:.*$/, '')),
      [
        'ingress rule 0',
        'ingress rule 2',
        'ingress rule 3',
        'ingress rule 4',
        'ingress rule 5',
        'ingress rule 6',
        'ingress rule 7',
        'ingress rule 8',
      ],
    );
    assert.match(
      problems[0] ?? '',
      /label value "nobody' \|\| app == 'client" is not a Kubernetes label value; dropped/,
    );
    assert.match(problems[6] ?? '', /protocol "FOO" is not TCP, UDP or SCTP; dropped/);
    const spec = resource.spec as { selector: string; types: string[]; ingress: unknown[] };
    assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s' && app == 'db'");
    assert.deepEqual(spec.types, ['Ingress']);
    assert.deepEqual(spec.ingress, [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "projectcalico.org/orchestrator == 'k8s' && app == 'api'" },
        destination: { ports: [5432] },
      },
    ]);
    // What is left is a valid policy: it is not dropped downstream, so the pods stay isolated.
    validate(resource);
  });

  it('a pod selector that cannot be read isolates every pod of the namespace (fail closed)', () => {
    for (const podSelector of [
      { matchLabels: { app: INJECTED } },
      { matchExpressions: [{ key: 'app', operator: 'Matches', values: ['d.*'] }] },
    ]) {
      const { resource, problems } = k8sNetworkPolicyToCalico({
        metadata: { name: 'db', namespace: 'shop' },
        spec: { podSelector, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }] },
      });
      assert.match(problems.join(), /podSelector: .*; the policy isolates every pod of its namespace instead/);
      assert.equal((resource.spec as { selector: string }).selector, "projectcalico.org/orchestrator == 'k8s'");
      validate(resource);
    }
  });
});

describe('KDD conversion: nodes', () => {
  it('labels and the Calico annotations; invalid values ignored and reported', async () => {
    const { k8sNodeToCalico } = await import('../../src/datastore/kdd/conversion/node.js');
    const { resource, problems } = k8sNodeToCalico({
      metadata: {
        name: 'node1',
        labels: { zone: 'a' },
        annotations: {
          'projectcalico.org/IPv4Address': '10.0.0.1/24',
          'projectcalico.org/IPv6Address': 'fd00::1/64',
          'projectcalico.org/ASNumber': '64512',
          'projectcalico.org/IPv4VXLANTunnelAddr': '10.65.0.1',
          'projectcalico.org/VXLANTunnelMACAddr': '66:df:5b:e5:4f:0a',
          'projectcalico.org/IPv4IPIPTunnelAddr': 'not-an-ip',
          'projectcalico.org/WireguardPublicKey': 'key=',
        },
      },
      status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
    });
    assert.deepEqual(resource.metadata, { name: 'node1', labels: { zone: 'a' } });
    assert.deepEqual(resource.spec, {
      bgp: { ipv4Address: '10.0.0.1/24', ipv6Address: 'fd00::1/64', asNumber: 64512 },
      ipv4VXLANTunnelAddr: '10.65.0.1',
      vxlanTunnelMACAddr: '66:df:5b:e5:4f:0a',
      orchRefs: [{ nodeName: 'node1', orchestrator: 'k8s' }],
      addresses: [{ address: '10.0.0.1', type: 'InternalIP' }],
    });
    assert.deepEqual(resource.status, { wireguardPublicKey: 'key=' });
    assert.deepEqual(problems, ['annotation projectcalico.org/IPv4IPIPTunnelAddr="not-an-ip" is invalid; ignored']);
    assert.ok(validateResource(resource).ok);
  });
});

describe('KDD conversion: Calico CRDs', () => {
  it('v3 metadata from the annotation merged back; the legacy "default." prefix only in the default tier', async () => {
    const { crdToCalico } = await import('../../src/datastore/kdd/conversion/crd.js');
    const r = crdToCalico('GlobalNetworkPolicy', {
      metadata: {
        name: 'default.p',
        labels: { a: '1' },
        annotations: { 'projectcalico.org/metadata': '{"labels":{"b":"2"},"annotations":{"note":"x"}}', other: 'y' },
        resourceVersion: '9',
      },
      spec: { selector: 'all()' },
    });
    assert.deepEqual(r, {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'p', labels: { a: '1', b: '2' }, annotations: { other: 'y', note: 'x' }, resourceVersion: '9' },
      spec: { selector: 'all()' },
    });
    assert.ok(validateResource(r).ok);
    const tiered = crdToCalico('NetworkPolicy', {
      metadata: { name: 'security.p', namespace: 'ns' },
      spec: { tier: 'security' },
    });
    assert.equal((tiered.metadata as { name: string }).name, 'security.p');
    assert.equal(
      (crdToCalico('Tier', { metadata: { name: 'default.x' }, spec: {} }).metadata as { name: string }).name,
      'default.x',
      'only policies lose the prefix',
    );
    assert.throws(
      () => crdToCalico('Tier', { metadata: { name: 't', annotations: { 'projectcalico.org/metadata': '{' } } }),
      /not JSON/,
    );
  });
});
