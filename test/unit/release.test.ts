// The Calico release in force (issue 52): parsed from ClusterInformation's calicoVersion or
// the CalicoVersion override, what differs by release decided in src/model/release.ts, and
// releases older than 3.30 refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ConfigResolver, type DatastoreParams } from '../../src/config/config.js';
import { refusal } from '../../src/config/refusal.js';
import { describeRelease, parseCalicoVersion, releaseOf, traitsOf } from '../../src/model/release.js';

const ds = (global: Record<string, string>): DatastoreParams => ({
  global: new Map(Object.entries(global)),
  node: new Map(),
  selector: new Map(),
});

describe('Calico release', () => {
  it('reads versions as Calico writes them; names none for empty or branch names; refuses garbage', () => {
    assert.deepEqual(parseCalicoVersion('v3.31.7'), { major: 3, minor: 31, text: 'v3.31.7' });
    assert.deepEqual(parseCalicoVersion('3.30'), { major: 3, minor: 30, text: '3.30' });
    assert.equal(parseCalicoVersion('v3.32.0-0.dev-123-gabcdef')?.minor, 32);
    assert.equal(parseCalicoVersion(''), undefined);
    assert.equal(parseCalicoVersion('master'), undefined);
    for (const bad of ['3', 'v3.x', 'latest; rm -rf /', `v3.31.${'9'.repeat(300)}`, 'v3.31.7\nx'])
      assert.throws(() => parseCalicoVersion(bad), /is not a Calico version/, bad);
  });

  it('decides each difference in one place: 3.30 and 3.31 legacy, 3.32 and newer modern', () => {
    for (const v of ['v3.30.0', 'v3.31.7'])
      assert.deepEqual(traitsOf(releaseOf(v)), { modernPolicyKeys: false, policyIds: 'tiered', adminPolicies: 'anp' });
    for (const v of ['v3.32.1', 'v3.33.0', 'v4.0.0', ''])
      assert.deepEqual(traitsOf(releaseOf(v)), { modernPolicyKeys: true, policyIds: 'kind', adminPolicies: 'cnp' });
    assert.match(describeRelease(releaseOf('')), /names no release/);
  });

  it('from ClusterInformation, the env override winning; a restart when it changes; a bad value reported', () => {
    const problems: string[] = [];
    const c = new ConfigResolver({ onProblem: (p) => problems.push(`${p.param}: ${p.reason}`) });
    c.setDatastoreConfig(ds({ CalicoVersion: 'v3.31.7' }));
    assert.equal(c.config.CalicoVersion, 'v3.31.7');
    assert.equal(refusal(c.config, 'datastore'), undefined);
    const change = c.setDatastoreConfig(ds({ CalicoVersion: 'v3.32.1' }));
    assert.ok(change.needsRestart.includes('CalicoVersion'), 'an upgrade restarts the agent');

    const env = new ConfigResolver({ env: { FELIX_CALICOVERSION: 'v3.30.4' } });
    env.setDatastoreConfig(ds({ CalicoVersion: 'v3.32.1' }));
    assert.equal(env.config.CalicoVersion, 'v3.30.4');
    assert.equal(env.sourceOf('CalicoVersion'), 'env FELIX_CALICOVERSION');

    c.setDatastoreConfig(ds({ CalicoVersion: 'not-a-version' }));
    assert.equal(c.config.CalicoVersion, '', 'the default');
    assert.ok(
      problems.some((p) => /CalicoVersion: .*not a Calico version/.test(p)),
      problems.join('\n'),
    );
  });

  it('refuses to run on a release older than 3.30, naming it', () => {
    const c = new ConfigResolver({ env: { FELIX_CALICOVERSION: 'v3.29.4' } });
    assert.match(
      refusal(c.config, 'datastore') ?? '',
      /Calico v3\.29\.4 .* older than palisade supports \(3\.30 and newer\)/,
    );
    assert.equal(refusal(c.config, 'local'), undefined, 'decided once the datastore is read');
  });
});
