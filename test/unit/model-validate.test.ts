import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { model } from 'palisade';

const { validateResource, ValidationError } = model;

const np = (spec: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'allow-web', namespace: 'prod', ...meta },
  spec,
});

function fails(input: unknown, path: string, message: RegExp) {
  const r = validateResource(input, 'test.yaml document 0');
  assert.equal(r.ok, false, 'should be refused');
  if (r.ok) return;
  assert.ok(r.error instanceof ValidationError);
  assert.equal(r.error.code, 'EVALIDATION');
  const issue = r.error.issues.find((i) => i.path === path);
  assert.ok(issue, `no issue at ${path}: ${JSON.stringify(r.error.issues)}`);
  assert.match(issue.message, message);
  assert.match(r.error.message, /^test\.yaml document 0: /);
}

describe('model: valid resources of every kind', () => {
  const ok: unknown[] = [
    np({
      order: 100,
      tier: 'security',
      selector: "app == 'web'",
      types: ['Ingress', 'Egress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: "role == 'fe'", namespaceSelector: 'all()' },
          destination: { ports: [80, '8000:8080', 'http'] },
        },
        { action: 'Pass', protocol: 'ICMP', icmp: { type: 8, code: 0 } },
      ],
      egress: [
        { action: 'Deny', protocol: 17, destination: { nets: ['10.0.0.0/8', '2001:db8::/32'], notPorts: [53] } },
      ],
    }),
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'g' },
      spec: { selector: 'all()', doNotTrack: true, applyOnForward: true, ingress: [{ action: 'Log' }] },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Tier',
      metadata: { name: 'security' },
      spec: { order: 10, defaultAction: 'Pass' },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.prod' },
      spec: { ingress: [{ action: 'Allow' }], labelsToApply: { 'pcns.team': 'a' } },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-web--0-eth0', namespace: 'prod', labels: { app: 'web' } },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'web-0',
        endpoint: 'eth0',
        interfaceName: 'cali0123456789a',
        ipNetworks: ['10.65.0.2/32'],
        profiles: ['kns.prod'],
        mac: 'ee:ee:ee:ee:ee:ee',
        ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
      },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'HostEndpoint',
      metadata: { name: 'h1-eth0' },
      spec: { node: 'h1', interfaceName: 'eth0', expectedIPs: ['192.0.2.1'] },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkSet',
      metadata: { name: 'ext', namespace: 'prod' },
      spec: { nets: ['198.51.100.0/24'] },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkSet',
      metadata: { name: 'blocked', labels: { list: 'bad' } },
      spec: { nets: ['203.0.113.7'] },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.65.0.0/16', natOutgoing: true, ipipMode: 'Never', vxlanMode: 'CrossSubnet' },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: { logSeverityScreen: 'Info' },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { datastoreReady: true },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'node1' },
      spec: { bgp: { ipv4Address: '192.0.2.10/24' } },
    },
  ];
  for (const r of ok) {
    it((r as { kind: string }).kind, () => {
      const v = validateResource(r);
      assert.ok(v.ok, v.ok ? '' : v.error.message);
    });
  }

  it('normalises protocol names', () => {
    const v = validateResource(np({ ingress: [{ action: 'Allow', protocol: 'tcp', destination: { ports: [22] } }] }));
    assert.ok(v.ok);
    if (v.ok && v.resource.kind === 'NetworkPolicy') assert.equal(v.resource.spec.ingress?.[0]?.protocol, 'TCP');
  });

  it('accepts http matches with a warning', () => {
    const v = validateResource(np({ ingress: [{ action: 'Allow', http: { methods: ['GET'] } }] }));
    assert.ok(v.ok);
    if (v.ok)
      assert.match(
        v.warnings.join('\n'),
        /NetworkPolicy prod\/allow-web: spec\.ingress\[0\]\.http is accepted but ignored/,
      );
  });
});

describe('model: bad resources name the resource, the field and what was expected', () => {
  it('unknown kind', () =>
    fails(
      { apiVersion: 'projectcalico.org/v3', kind: 'Frob', metadata: { name: 'x' }, spec: {} },
      'kind',
      /unknown kind "Frob"; expected one of NetworkPolicy/,
    ));
  it('not an object', () => fails('nope', '', /expected an object/));
  it('label keys and values as Calico (qualified names, values of at most 63 characters)', () => {
    fails(np({}, { labels: { 'bad key!!': 'x' } }), 'metadata.labels.bad key!!', /label key "bad key!!"/);
    fails(np({}, { labels: { app: 'x'.repeat(64) } }), 'metadata.labels.app', /label value of "app"/);
    fails(
      np({}, { labels: { 'Example.COM/app': 'web' } }),
      'metadata.labels.Example.COM/app',
      /prefix must be a DNS subdomain/,
    );
    fails(np({}, { labels: { app: 'ends-with-dash-' } }), 'metadata.labels.app', /label value/);
    // Verdicts are remembered: the same bad key and value are refused again.
    fails(np({}, { labels: { 'bad key!!': 'x' } }), 'metadata.labels.bad key!!', /label key "bad key!!"/);
    fails(np({}, { labels: { app: 'ends-with-dash-' } }), 'metadata.labels.app', /label value/);
    fails(np({}, { labels: { app: 7 } }), 'metadata.labels.app', /label value of "app": expected a string/);
    fails(np({}, { labels: ['app'] }), 'metadata.labels', /expected a map of label keys to string values/);
    fails(np({}, { labels: 'app=web' }), 'metadata.labels', /expected a map of label keys/);
    fails(np({}, { labels: JSON.parse('{"__proto__": "x"}') }), 'metadata.labels.__proto__', /label key "__proto__"/);
    // More distinct values than are remembered: each still judged.
    for (let n = 0; n < 9000; n++) assert.ok(validateResource(np({}, { labels: { app: `v${n}` } })).ok);
    fails(np({}, { labels: { app: '-v1' } }), 'metadata.labels.app', /label value/);
    assert.ok(
      validateResource(
        np({}, { labels: { 'projectcalico.org/namespace': 'prod', 'k8s-app': '', 'a.b_c-d': 'X.y_z-9' } }),
      ).ok,
    );
  });
  it('wrong apiVersion', () => fails({ ...np({}), apiVersion: 'v1' }, 'apiVersion', /projectcalico\.org\/v3/));
  it('NetworkPolicy without a namespace', () =>
    fails(np({}, { namespace: undefined }), 'metadata.namespace', /needs a namespace/));
  it('GlobalNetworkSet with a namespace', () =>
    fails(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkSet',
        metadata: { name: 'g', namespace: 'x' },
        spec: {},
      },
      'metadata.namespace',
      /cluster-wide/,
    ));
  it('bad name', () => fails(np({}, { name: 'Allow_Web!' }), 'metadata.name', /lower-case/));
  it('bad action', () =>
    fails(np({ ingress: [{ action: 'allow' }] }), 'spec.ingress[0].action', /"Allow"\|"Deny"\|"Log"\|"Pass"/));
  it('bad selector', () =>
    fails(np({ selector: "app == 'web' &&" }), 'spec.selector', /invalid selector: missing operand at position 15/));
  it('bad rule selector', () =>
    fails(
      np({ egress: [{ action: 'Allow', destination: { selector: 'a ==' } }] }),
      'spec.egress[0].destination.selector',
      /position 4/,
    ));
  it('port out of range', () =>
    fails(
      np({ ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [70000] } }] }),
      'spec.ingress[0].destination.ports[0]',
      /port/,
    ));
  it('bad port range', () =>
    fails(
      np({ ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['90:80'] } }] }),
      'spec.ingress[0].destination.ports[0]',
      /from <= to/,
    ));
  it('ports without a port protocol', () =>
    fails(
      np({ ingress: [{ action: 'Allow', destination: { ports: [80] } }] }),
      'spec.ingress[0].destination.ports',
      /only allowed with protocol TCP/,
    ));
  it('icmp without ICMP', () =>
    fails(
      np({ ingress: [{ action: 'Allow', protocol: 'TCP', icmp: { type: 8 } }] }),
      'spec.ingress[0].icmp',
      /ICMP or ICMPv6/,
    ));
  it('icmp code without type', () =>
    fails(
      np({ ingress: [{ action: 'Allow', protocol: 'ICMP', icmp: { code: 1 } }] }),
      'spec.ingress[0].icmp',
      /needs an icmp type/,
    ));
  it('bad protocol', () =>
    fails(np({ ingress: [{ action: 'Allow', protocol: 'QUIC' }] }), 'spec.ingress[0].protocol', /TCP, UDP, ICMP/));
  it('bad CIDR', () =>
    fails(
      np({ egress: [{ action: 'Deny', destination: { nets: ['10.0.0.0/33'] } }] }),
      'spec.egress[0].destination.nets[0]',
      /CIDR/,
    ));
  it('IPv6 net in an ipVersion 4 rule', () =>
    fails(
      np({ egress: [{ action: 'Deny', ipVersion: 4, destination: { nets: ['2001:db8::/32'] } }] }),
      'spec.egress[0].destination.nets[0]',
      /IPv6 net/,
    ));
  it('preDNAT with doNotTrack', () =>
    fails(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'g' },
        spec: { preDNAT: true, doNotTrack: true, applyOnForward: true },
      },
      'spec.preDNAT',
      /cannot both/,
    ));
  it('HostEndpoint with neither interface nor IPs', () =>
    fails(
      { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'h' }, spec: { node: 'h1' } },
      'spec',
      /interfaceName or expectedIPs/,
    ));
  it('bad MAC', () =>
    fails(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: 'w', namespace: 'n' },
        spec: { mac: 'zz' },
      },
      'spec.mac',
      /MAC/,
    ));
  it('message format', () => {
    const r = validateResource(np({ ingress: [{ action: 'allow' }, { action: 'nope' }] }));
    assert.ok(!r.ok);
    if (!r.ok) {
      assert.match(r.error.message, /^NetworkPolicy prod\/allow-web: spec\.ingress\[0\]\.action: .* \(and 1 more\)$/);
      assert.deepEqual(r.error.resource, { kind: 'NetworkPolicy', name: 'allow-web', namespace: 'prod' });
    }
  });
});
