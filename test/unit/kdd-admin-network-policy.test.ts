// AdminNetworkPolicy / BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1), read
// on Calico 3.30/3.31 and converted as libcalico-go v3.31.7 converts them (issue 52). The
// expectations follow upstream's own conversion tests at that tag (adminnetworkpolicy_test.go).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  k8sAdminNetworkPolicyToCalico,
  k8sBaselineAdminNetworkPolicyToCalico,
} from '../../src/datastore/kdd/conversion/admin-network-policy.js';
import type { AdminNetworkPolicy } from '../../src/datastore/kdd/k8s-types.js';
import { validateResource } from '../../src/model/validate.js';

type Spec = {
  tier: string;
  order: number;
  namespaceSelector: string;
  selector: string;
  types?: string[];
  ingress?: Array<Record<string, unknown>>;
  egress?: Array<Record<string, unknown>>;
};
const specOf = (r: { resource: Record<string, unknown> | undefined }) => r.resource?.spec as Spec;

describe('KDD: AdminNetworkPolicy and BaselineAdminNetworkPolicy as Calico 3.31 converts them', () => {
  it('a basic AdminNetworkPolicy: kanp.adminnetworkpolicy.<name> in its tier, order = priority, TCP by default', () => {
    const anp: AdminNetworkPolicy = {
      metadata: { name: 'test.policy', resourceVersion: '7' },
      spec: {
        priority: 100,
        subject: { namespaces: { matchLabels: { label2: 'value2', label: 'value' } } },
        ingress: [
          {
            name: 'The first ingress rule',
            action: 'Allow',
            ports: [{ portNumber: { port: 80 } }],
            from: [{ namespaces: { matchLabels: { k2: 'v2', k: 'v' } } }],
          },
        ],
      },
    };
    const r = k8sAdminNetworkPolicyToCalico(anp);
    assert.deepEqual(r.problems, []);
    assert.equal(r.resource?.kind, 'GlobalNetworkPolicy');
    assert.deepEqual(r.resource?.metadata, { name: 'kanp.adminnetworkpolicy.test.policy', resourceVersion: '7' });
    const s = specOf(r);
    assert.equal(s.tier, 'adminnetworkpolicy');
    assert.equal(s.order, 100);
    assert.equal(s.namespaceSelector, "label == 'value' && label2 == 'value2'");
    assert.equal(s.selector, "projectcalico.org/orchestrator == 'k8s'");
    assert.deepEqual(s.types, ['Ingress']);
    assert.deepEqual(s.ingress, [
      {
        action: 'Allow',
        metadata: { annotations: { name: 'The first ingress rule' } },
        protocol: 'TCP',
        source: { namespaceSelector: "k == 'v' && k2 == 'v2'" },
        destination: { ports: [80] },
      },
    ]);
    assert.equal(s.egress, undefined);
    assert.ok(validateResource(r.resource).ok, 'a valid Calico resource');
  });

  it('one rule per protocol (sorted) and peer; ranges; pods peers; both directions', () => {
    const ports = [{ portNumber: { port: 80 } }, { portRange: { start: 20, end: 30, protocol: 'UDP' } }];
    const s = specOf(
      k8sAdminNetworkPolicyToCalico({
        metadata: { name: 'test.policy' },
        spec: {
          priority: 600,
          subject: { namespaces: { matchLabels: { label: 'value', label2: 'value2' } } },
          ingress: [
            {
              action: 'Pass',
              ports,
              from: [
                { namespaces: { matchLabels: { k: 'v' } } },
                { pods: { podSelector: { matchLabels: { k2: 'v2' } } } },
              ],
            },
          ],
          egress: [
            {
              action: 'Deny',
              ports,
              to: [
                { namespaces: { matchLabels: { k3: 'v3' } } },
                {
                  pods: {
                    namespaceSelector: { matchLabels: { k4: 'v4' } },
                    podSelector: { matchLabels: { k5: 'v5' } },
                  },
                },
              ],
            },
          ],
        },
      }),
    );
    const ing = s.ingress ?? [];
    assert.equal(ing.length, 4);
    assert.deepEqual(
      ing.map((r) => [r.protocol, r.source, (r.destination as { ports: unknown }).ports]),
      [
        ['TCP', { namespaceSelector: "k == 'v'" }, [80]],
        [
          'TCP',
          { selector: "projectcalico.org/orchestrator == 'k8s' && k2 == 'v2'", namespaceSelector: 'all()' },
          [80],
        ],
        ['UDP', { namespaceSelector: "k == 'v'" }, ['20:30']],
        [
          'UDP',
          { selector: "projectcalico.org/orchestrator == 'k8s' && k2 == 'v2'", namespaceSelector: 'all()' },
          ['20:30'],
        ],
      ],
    );
    const eg = s.egress ?? [];
    assert.equal(eg.length, 4);
    assert.deepEqual(eg[1]?.destination, {
      ports: [80],
      selector: "projectcalico.org/orchestrator == 'k8s' && k5 == 'v5'",
      namespaceSelector: "k4 == 'v4'",
    });
    assert.deepEqual(s.types, ['Ingress', 'Egress']);
  });

  it('fails closed as upstream: a bad Deny or Pass rule becomes a deny-all, a bad Allow rule is dropped', () => {
    const r = k8sAdminNetworkPolicyToCalico({
      metadata: { name: 'p' },
      spec: {
        priority: 1,
        subject: { pods: { podSelector: {} } },
        egress: [
          { action: 'Deny', to: [{ nodes: { matchLabels: { a: 'b' } } }] },
          { action: 'Pass', to: [{ networks: ['not-a-cidr'] }] },
          { action: 'Allow', to: [{ networks: ['10.0.0.0/33'] }] },
          { action: 'Accept', to: [{ namespaces: {} }] },
          { action: 'Allow', to: [{ networks: ['10.1.2.3/16'] }], ports: [{ portRange: { start: 90, end: 80 } }] },
          { action: 'Allow', to: [{ networks: ['10.1.2.3/16', '::/0'] }] },
        ],
      },
    });
    assert.deepEqual(specOf(r).egress, [
      { action: 'Deny' },
      { action: 'Deny' },
      { action: 'Allow', destination: { nets: ['10.1.0.0/16', '::/0'] } },
    ]);
    assert.equal(r.problems.length, 5, r.problems.join('\n'));
    assert.match(
      r.problems[0] ?? '',
      /none of the supported fields in 'to' is set \(nodes not supported\); replaced by a deny-all rule/,
    );
  });

  it("a named port (which 3.31 does not convert) leaves the rule on every protocol and port, as upstream's", () => {
    const s = specOf(
      k8sAdminNetworkPolicyToCalico({
        metadata: { name: 'p' },
        spec: {
          priority: 1,
          subject: { namespaces: {} },
          ingress: [
            { action: 'Deny', from: [{ namespaces: {} }], ports: [{ portNumber: { port: 53 } }, { namedPort: 'dns' }] },
          ],
        },
      }),
    );
    assert.deepEqual(s.ingress, [{ action: 'Deny', source: { namespaceSelector: 'all()' } }]);
  });

  it('a BaselineAdminNetworkPolicy: kbanp.baselineadminnetworkpolicy.<name>, order 1000; Pass is not its action', () => {
    const r = k8sBaselineAdminNetworkPolicyToCalico({
      metadata: { name: 'default' },
      spec: {
        subject: { namespaces: {} },
        ingress: [
          { action: 'Deny', from: [{ namespaces: {} }] },
          { action: 'Pass', from: [{ namespaces: {} }] },
        ],
      },
    });
    assert.deepEqual(r.resource?.metadata, { name: 'kbanp.baselineadminnetworkpolicy.default' });
    const s = specOf(r);
    assert.equal(s.tier, 'baselineadminnetworkpolicy');
    assert.equal(s.order, 1000);
    assert.deepEqual(s.ingress, [{ action: 'Deny', source: { namespaceSelector: 'all()' } }]);
    assert.match(r.problems[0] ?? '', /unsupported admin network policy action "Pass".*dropped/);
    assert.ok(validateResource(r.resource).ok);
  });

  it('refuses garbage without throwing: no subject, bad selectors, wrong shapes', () => {
    for (const bad of [
      {},
      { spec: {} },
      { spec: { subject: { namespaces: { matchExpressions: [{ key: 'a', operator: 'Nope' }] } } } },
      { spec: { subject: { pods: { podSelector: { matchLabels: { 'bad key!': 'x' } } } } } },
    ] as AdminNetworkPolicy[]) {
      const r = k8sAdminNetworkPolicyToCalico(bad);
      assert.equal(r.resource, undefined, JSON.stringify(bad));
      assert.match(r.problems[0] ?? '', /the policy is not applied/);
    }
  });
});
