// Kubernetes ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) -> Calico, against the
// expectations of libcalico-go's clusternetworkpolicy_test.go: tiers, order, subjects,
// rules per (protocol, peer), names as rule annotations, fail-closed rules, tombstones.
// Then through validation and the update processor to the policy Felix keys by "kcnp/".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { k8sClusterNetworkPolicyToCalico } from '../../src/datastore/kdd/conversion/cluster-network-policy.js';
import type { ClusterNetworkPolicy, CnpProtocol } from '../../src/datastore/kdd/k8s-types.js';
import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { createLogger } from '../../src/log.js';
import { validateResource } from '../../src/model/validate.js';

type Spec = {
  tier: string;
  order: number;
  selector: string;
  namespaceSelector: string;
  types?: string[];
  ingress?: unknown[];
  egress?: unknown[];
};
const specOf = (cnp: ClusterNetworkPolicy) => {
  const { resource, problems } = k8sClusterNetworkPolicyToCalico(cnp);
  assert.ok(resource, `converted: ${problems.join('; ')}`);
  return { spec: resource.spec as Spec, problems, resource };
};
const cnp = (spec: NonNullable<ClusterNetworkPolicy['spec']>): ClusterNetworkPolicy => ({
  metadata: { name: 'test.policy', resourceVersion: '7' },
  spec,
});
const nsSubject = { namespaces: { matchLabels: { label: 'value', label2: 'value2' } } };
const named = (name: string) => ({ metadata: { annotations: { name } } });
const tcp80: CnpProtocol[] = [{ tcp: { destinationPort: { number: 80 } } }];
const tcpPorts: CnpProtocol[] = [...tcp80, { tcp: { destinationPort: { range: { start: 2000, end: 3000 } } } }];

describe('KDD conversion: ClusterNetworkPolicy', () => {
  it('a basic Admin policy: tier kube-admin, order = priority, the subject as selectors, Accept as Allow with the rule name', () => {
    const { spec, resource } = specOf(
      cnp({
        tier: 'Admin',
        priority: 100,
        subject: nsSubject,
        ingress: [
          {
            name: 'The first ingress rule',
            action: 'Accept',
            protocols: tcp80,
            from: [{ namespaces: { matchLabels: { k2: 'v2', k: 'v' } } }],
          },
        ],
      }),
    );
    assert.equal(resource.kind, 'KubernetesClusterNetworkPolicy');
    assert.deepEqual(resource.metadata, { name: 'test.policy', resourceVersion: '7' });
    assert.equal(spec.tier, 'kube-admin');
    assert.equal(spec.order, 100);
    assert.equal(spec.namespaceSelector, "label == 'value' && label2 == 'value2'");
    assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s'");
    assert.deepEqual(spec.ingress, [
      {
        action: 'Allow',
        ...named('The first ingress rule'),
        protocol: 'TCP',
        source: { namespaceSelector: "k == 'v' && k2 == 'v2'" },
        destination: { ports: [80] },
      },
    ]);
    assert.equal(spec.egress, undefined);
    assert.deepEqual(spec.types, ['Ingress']);
    assert.ok(validateResource(resource).ok);
  });

  it('a Baseline policy is in kube-baseline; a policy without rules has no types (the tiers pass by default)', () => {
    const { spec } = specOf(cnp({ tier: 'Baseline', priority: 500, subject: nsSubject }));
    assert.equal(spec.tier, 'kube-baseline');
    assert.equal(spec.types, undefined);
    assert.equal(spec.ingress, undefined);
  });

  it('rules with an action Calico does not know are dropped (Accept-like) and reported; ports merged into ranges', () => {
    const { spec, problems } = specOf(
      cnp({
        tier: 'Admin',
        priority: 300,
        subject: nsSubject,
        ingress: [
          {
            name: 'A random ingress rule',
            action: 'Log',
            from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }],
          },
          {
            name: 'A random ingress rule 2',
            action: 'Accept',
            protocols: tcpPorts,
            from: [{ namespaces: { matchLabels: { k10: 'v10', k20: 'v20' } } }],
          },
        ],
        egress: [
          {
            name: 'A random egress rule',
            action: 'Deny',
            protocols: tcpPorts,
            to: [{ namespaces: { matchLabels: { k3: 'v3', k4: 'v4' } } }],
          },
          {
            name: 'A random egress rule 2',
            action: 'Drop',
            to: [{ namespaces: { matchLabels: { k30: 'v30', k40: 'v40' } } }],
          },
        ],
      }),
    );
    assert.deepEqual(spec.ingress, [
      {
        action: 'Allow',
        ...named('A random ingress rule 2'),
        protocol: 'TCP',
        source: { namespaceSelector: "k10 == 'v10' && k20 == 'v20'" },
        destination: { ports: [80, '2000:3000'] },
      },
    ]);
    assert.deepEqual(spec.egress, [
      {
        action: 'Deny',
        ...named('A random egress rule'),
        protocol: 'TCP',
        destination: { ports: [80, '2000:3000'], namespaceSelector: "k3 == 'v3' && k4 == 'v4'" },
      },
    ]);
    assert.equal(problems.length, 2);
    assert.match(problems[0] ?? '', /ingress rule 0 "A random ingress rule": unsupported action "Log"; dropped/);
    assert.match(problems[1] ?? '', /egress rule 1 "A random egress rule 2": unsupported action "Drop"; dropped/);
  });

  it('no protocols: no protocol and no ports; Pass stays Pass', () => {
    const { spec } = specOf(
      cnp({
        tier: 'Admin',
        priority: 200,
        subject: nsSubject,
        ingress: [{ name: 'in', action: 'Pass', from: [{ namespaces: { matchLabels: { k: 'v' } } }] }],
        egress: [{ name: 'out', action: 'Deny', to: [{ namespaces: { matchLabels: { k3: 'v3' } } }] }],
      }),
    );
    assert.deepEqual(spec.ingress, [{ action: 'Pass', ...named('in'), source: { namespaceSelector: "k == 'v'" } }]);
    assert.deepEqual(spec.egress, [
      { action: 'Deny', ...named('out'), destination: { namespaceSelector: "k3 == 'v3'" } },
    ]);
    assert.deepEqual(spec.types, ['Ingress', 'Egress']);
  });

  it('subjects: empty namespaces and an empty pod selector select every pod; a pods subject adds its pod selector', () => {
    for (const subject of [{ namespaces: {} }, { pods: { podSelector: {} } }]) {
      const { spec } = specOf(cnp({ tier: 'Admin', priority: 500, subject }));
      assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s'");
      assert.equal(spec.namespaceSelector, 'all()');
    }
    const { spec } = specOf(
      cnp({
        tier: 'Admin',
        priority: 1000,
        subject: { pods: { podSelector: { matchLabels: { label: 'value' } } } },
        ingress: [
          {
            name: 'r',
            action: 'Deny',
            from: [
              {
                pods: {
                  namespaceSelector: { matchLabels: { namespaceRole: 'dev', namespaceFoo: 'bar' } },
                  podSelector: { matchLabels: { podA: 'B', podC: 'D' } },
                },
              },
            ],
          },
        ],
      }),
    );
    assert.equal(spec.selector, "projectcalico.org/orchestrator == 'k8s' && label == 'value'");
    assert.equal(spec.namespaceSelector, 'all()');
    assert.deepEqual(spec.ingress, [
      {
        action: 'Deny',
        ...named('r'),
        source: {
          selector: "projectcalico.org/orchestrator == 'k8s' && podA == 'B' && podC == 'D'",
          namespaceSelector: "namespaceFoo == 'bar' && namespaceRole == 'dev'",
        },
      },
    ]);
    const expr = specOf(
      cnp({
        tier: 'Admin',
        priority: 1,
        subject: {
          namespaces: {
            matchExpressions: [
              { key: 'k', operator: 'DoesNotExist' },
              { key: 'k2', operator: 'In', values: ['a', 'b'] },
            ],
          },
        },
      }),
    ).spec;
    assert.equal(expr.namespaceSelector, "! has(k) && k2 in { 'a', 'b' }");
  });

  it('one rule per (protocol, peer), protocols sorted; an empty protocol entry means any traffic', () => {
    const { spec } = specOf(
      cnp({
        tier: 'Admin',
        priority: 1,
        subject: nsSubject,
        egress: [
          {
            action: 'Accept',
            protocols: [
              { udp: { destinationPort: { number: 53 } } },
              ...tcp80,
              { tcp: { destinationPort: { number: 81 } } },
              { sctp: {} },
            ],
            to: [{ namespaces: { matchLabels: { a: '1' } } }, { networks: ['10.0.0.1/8'] }],
          },
          { action: 'Accept', protocols: [{ tcp: {} }, {}], to: [{ networks: ['0.0.0.0/0'] }] },
        ],
      }),
    );
    assert.deepEqual(spec.egress, [
      { action: 'Allow', protocol: 'SCTP', destination: { namespaceSelector: "a == '1'" } },
      { action: 'Allow', protocol: 'SCTP', destination: { nets: ['10.0.0.0/8'] } },
      { action: 'Allow', protocol: 'TCP', destination: { ports: ['80:81'], namespaceSelector: "a == '1'" } },
      { action: 'Allow', protocol: 'TCP', destination: { ports: ['80:81'], nets: ['10.0.0.0/8'] } },
      { action: 'Allow', protocol: 'UDP', destination: { ports: [53], namespaceSelector: "a == '1'" } },
      { action: 'Allow', protocol: 'UDP', destination: { ports: [53], nets: ['10.0.0.0/8'] } },
      { action: 'Allow', destination: { nets: ['0.0.0.0/0'] } },
    ]);
  });

  it('fails closed: an unconvertible Deny or Pass rule becomes deny-all, an unconvertible Accept rule is dropped; each reported', () => {
    const bad: CnpProtocol[] = [{ udp: { destinationPort: { range: { start: 40, end: 20 } } } }];
    const { spec, problems } = specOf(
      cnp({
        tier: 'Admin',
        priority: 600,
        subject: nsSubject,
        ingress: [
          { name: 'pass', action: 'Pass', protocols: bad, from: [{ namespaces: { matchLabels: { k: 'v' } } }] },
          { name: 'accept', action: 'Accept', protocols: bad, from: [{ namespaces: { matchLabels: { k: 'v' } } }] },
        ],
        egress: [
          { name: 'deny', action: 'Deny', protocols: bad, to: [{ namespaces: { matchLabels: { k3: 'v3' } } }] },
          { name: 'good', action: 'Deny', protocols: tcp80, to: [{ namespaces: { matchLabels: { k4: 'v4' } } }] },
          { name: 'nodes', action: 'Accept', to: [{ nodes: { matchLabels: { role: 'x' } } }] },
          { name: 'domains', action: 'Deny', to: [{ domainNames: ['example.com'] }] },
          { name: 'bad-net', action: 'Accept', to: [{ networks: ['banana'] }] },
        ],
      }),
    );
    assert.deepEqual(spec.ingress, [{ action: 'Deny' }]);
    assert.deepEqual(spec.egress, [
      { action: 'Deny' },
      {
        action: 'Deny',
        ...named('good'),
        protocol: 'TCP',
        destination: { ports: [80], namespaceSelector: "k4 == 'v4'" },
      },
      { action: 'Deny' },
    ]);
    assert.deepEqual(
      problems.map((p) => p.replace(/:.*;/, ':;')),
      [
        'ingress rule 0 "pass":; replaced by a deny-all rule',
        'ingress rule 1 "accept":; dropped',
        'egress rule 0 "deny":; replaced by a deny-all rule',
        'egress rule 2 "nodes":; dropped',
        'egress rule 3 "domains":; replaced by a deny-all rule',
        'egress rule 4 "bad-net":; dropped',
      ],
    );
    assert.match(problems[0] ?? '', /invalid port range 40:20/);
    assert.match(problems[3] ?? '', /nodes not supported/);
  });

  it("a named port gives ports without a protocol, which validation refuses (as Felix's validation filter): the policy is not applied", () => {
    const { spec, resource } = specOf(
      cnp({
        tier: 'Admin',
        priority: 1,
        subject: nsSubject,
        ingress: [{ action: 'Accept', protocols: [{ destinationNamedPort: 'http' }], from: [{ namespaces: {} }] }],
      }),
    );
    assert.deepEqual(spec.ingress, [
      { action: 'Allow', source: { namespaceSelector: 'all()' }, destination: { ports: ['http'] } },
    ]);
    const checked = validateResource(resource);
    assert.ok(
      !checked.ok && /ports are only allowed with protocol/.test(JSON.stringify(checked)),
      JSON.stringify(checked),
    );
  });

  it('a bad tier or no subject withdraws the policy (a tombstone), saying why', () => {
    for (const [spec, why] of [
      [{ tier: 'Developer', priority: 1, subject: nsSubject }, /invalid tier "Developer"/],
      [{ tier: 'Admin', priority: 1, subject: {} }, /no subject/],
    ] as const) {
      const { resource, problems } = k8sClusterNetworkPolicyToCalico(
        cnp(spec as NonNullable<ClusterNetworkPolicy['spec']>),
      );
      assert.equal(resource, undefined);
      assert.match(problems[0] ?? '', why);
    }
  });

  it('reaches the calc graph as Felix keys it: kcnp/<name> in its tier, the namespace selector on pcns. labels', () => {
    const { resource } = specOf(
      cnp({
        tier: 'Baseline',
        priority: 5,
        subject: nsSubject,
        egress: [{ action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] }],
      }),
    );
    const checked = validateResource(resource);
    assert.ok(checked.ok);
    const processors = new UpdateProcessors(createLogger({ severity: 'Fatal' }));
    const [u] = processors.process(
      { kind: 'KubernetesClusterNetworkPolicy', name: 'test.policy' },
      checked.ok ? checked.resource : undefined,
    );
    assert.deepEqual(u?.key, {
      type: 'Policy',
      kind: 'KubernetesClusterNetworkPolicy',
      namespace: '',
      name: 'test.policy',
    });
    const policy = u?.value as {
      key: { tier: string; name: string };
      order: number;
      selector: string;
      types: string[];
    };
    assert.deepEqual(policy.key.tier, 'kube-baseline');
    assert.equal(policy.key.name, 'kcnp/test.policy');
    assert.equal(policy.order, 5);
    assert.equal(
      policy.selector,
      `(projectcalico.org/orchestrator == 'k8s') && (pcns.label == "value" && pcns.label2 == "value2")`,
    );
    assert.deepEqual(policy.types, ['egress']);
  });
});
