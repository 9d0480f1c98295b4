// palisade explain without a kernel: the model of a small cluster (two nodes, a tier with
// a Pass, a namespaced policy, a profile), explained flow by flow: each side computed as
// that node's agent computes it, the deciding rule's index in its policy, the labels that
// made its selector true, and what is not a workload of ours. (Agreement with real packets
// is checked in test/e2e/agent.test.ts and by palisade demo.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { defaultConfig } from '../../src/config/params.js';
import { Explainer, selectorKeys } from '../../src/explain/explain.js';
import { formatExplanation } from '../../src/explain/format.js';
import type { V1Update } from '../../src/model/v1/values.js';
import { gnp, Harness, np, profile, tier, wep } from '../helpers/calc-fixtures.js';

function model(): V1Update[] {
  const h = new Harness();
  const updates: V1Update[] = [];
  const orig = h.graph.onUpdate.bind(h.graph);
  h.graph.onUpdate = (u: V1Update) => {
    updates.push(u);
    orig(u);
  };
  h.put(
    profile('kns.prod', { 'pcns.env': 'prod' }, { egress: [{ action: 'Allow' }] }),
    tier('security', 10),
    gnp('security.quarantine', {
      tier: 'security',
      order: 1,
      selector: 'all()',
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { selector: "quarantine == 'yes'" } }, { action: 'Pass' }],
    }),
    np('db', {
      selector: "app == 'db'",
      types: ['Ingress'],
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [22] } },
        { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [5432] } },
      ],
    }),
    // The db policies share a selector: Felix's policy group, a chain of its own (cali-gi-).
    np('db2-metrics', {
      selector: "app == 'db'",
      types: ['Ingress'],
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [9090] } }],
    }),
    wep('api-0', 'node1', '10.65.0.2', { app: 'api' }),
    wep('bad-0', 'node1', '10.65.0.3', { app: 'api', quarantine: 'yes' }),
    wep('db-0', 'node2', '10.65.1.2', { app: 'db' }),
  );
  return updates;
}

describe('palisade explain', () => {
  const explainer = new Explainer(model(), defaultConfig());

  it("allows api -> db:5432 by the db policy's second rule, each side on its own node", () => {
    const e = explainer.explain('prod/api-0', 'prod/db-0', 'tcp', 5432);
    assert.equal(e.verdict, 'allow');
    assert.equal(e.egress.node, 'node1');
    assert.equal(e.ingress.node, 'node2');
    assert.deepEqual(
      e.egress.steps.map((s) => `${s.profile ?? s.policy}:${s.outcome}`),
      ['kns.prod:allow'],
      'no egress policy: the profile decides',
    );
    const [quarantine, db] = e.ingress.steps;
    assert.equal(quarantine?.policy, 'gnp/security.quarantine');
    assert.equal(quarantine?.outcome, 'pass');
    assert.equal(db?.policy, 'np/prod/db');
    assert.equal(db?.outcome, 'allow');
    assert.equal(db?.rule?.index, 1, 'the second rule (port 5432), not the first');
    assert.deepEqual(db?.rule?.ipSets[0]?.labels, { app: 'api', 'projectcalico.org/namespace': 'prod' });
    assert.match(
      formatExplanation(e),
      /^prod\/api-0 \(10\.65\.0\.2\) -> prod\/db-0 \(10\.65\.1\.2\) tcp port 5432: ALLOW$/m,
    );
  });

  it('denies a port no rule allows at the end of the tier, and the quarantined source in the security tier', () => {
    const port = explainer.explain('prod/api-0', '10.65.1.2', 'tcp', 80);
    assert.equal(port.verdict, 'deny');
    assert.deepEqual(
      port.ingress.steps.map((s) => `${s.policy ?? ''}:${s.outcome}`),
      ['gnp/security.quarantine:pass', 'np/prod/db:no-match', 'np/prod/db2-metrics:no-match', ':end-of-tier'],
    );
    const bad = explainer.explain('10.65.0.3', 'prod/db-0', 'tcp', 5432);
    assert.equal(bad.verdict, 'deny');
    const deny = bad.ingress.steps[0];
    assert.equal(deny?.outcome, 'deny');
    assert.equal(deny?.rule?.index, 0);
    assert.equal(deny?.rule?.ipSets[0]?.labels?.quarantine, 'yes');
  });

  it("tells the policies of a policy group's chain one by one, as the endpoint chain's own", () => {
    const e = explainer.explain('prod/api-0', 'prod/db-0', 'tcp', 9090);
    assert.equal(e.verdict, 'allow');
    assert.deepEqual(
      e.ingress.steps.map((s) => `${s.policy}:${s.outcome}`),
      ['gnp/security.quarantine:pass', 'np/prod/db:no-match', 'np/prod/db2-metrics:allow'],
    );
    assert.equal(e.ingress.steps[2]?.rule?.index, 0);
  });

  it('an address that is not a workload has no policy on its side; an unknown pod is an error', () => {
    const e = explainer.explain('192.0.2.9', 'prod/db-0', 'tcp', 5432);
    assert.match(e.egress.skipped ?? '', /not a workload of ours/);
    assert.equal(e.verdict, 'deny', 'the db policy allows only the api');
    assert.throws(() => explainer.explain('prod/nope', 'prod/db-0', 'tcp', 1), /no workload endpoint "prod\/nope"/);
  });

  it('names the labels a selector reads', () => {
    assert.deepEqual(selectorKeys('(app == "api" && has(tier) && env in {"a", "b"} && !has(x))').sort(), [
      'app',
      'env',
      'tier',
      'x',
    ]);
  });
});
