// The Calico release in force (issue 52): parsed from ClusterInformation's calicoVersion or
// the CalicoVersion override, what differs by release decided in src/model/release.ts, and
// releases older than 3.30 refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ConfigResolver, type DatastoreParams } from '../../src/config/config.js';
import { refusal } from '../../src/config/refusal.js';
import { PolicySorter } from '../../src/calc/policy-sorter.js';
import { felixPolicyId } from '../../src/dataplane/render/names.js';
import { clusterRoutesOf, describeRelease, parseCalicoVersion, releaseOf, traitsOf } from '../../src/model/release.js';

const ds = (global: Record<string, string>): DatastoreParams => ({
  global: new Map(Object.entries(global)),
  node: new Map(),
  selector: new Map(),
});

describe('Calico release', () => {
  it('reads versions as Calico writes them; names none for empty or branch names; refuses garbage', () => {
    assert.deepEqual(parseCalicoVersion('v3.31.7'), { major: 3, minor: 31, patch: 7, text: 'v3.31.7' });
    assert.deepEqual(parseCalicoVersion('3.30'), { major: 3, minor: 30, patch: 0, text: '3.30' });
    assert.equal(parseCalicoVersion('v3.32.0-0.dev-123-gabcdef')?.minor, 32);
    assert.equal(parseCalicoVersion(''), undefined);
    assert.equal(parseCalicoVersion('master'), undefined);
    for (const bad of ['3', 'v3.x', 'latest; rm -rf /', `v3.31.${'9'.repeat(300)}`, 'v3.31.7\nx'])
      assert.throws(() => parseCalicoVersion(bad), /is not a Calico version/, bad);
  });

  it('decides each difference in one place: 3.30 and 3.31 legacy, 3.32 and newer modern', () => {
    const legacy = { modernPolicyKeys: false, policyIds: 'tiered', adminPolicies: 'anp', arpTable: false };
    const modern = { modernPolicyKeys: true, policyIds: 'kind', adminPolicies: 'cnp', arpTable: true };
    const routes = (v: string) => ({
      clusterRoutes: v.startsWith('v3.30')
        ? 'bird'
        : v === 'v3.33.0' || v === 'v4.0.0'
          ? 'per-kind'
          : 'enabled-disabled',
    });
    for (const v of ['v3.30.0', 'v3.30.7', 'v3.31.5'])
      assert.deepEqual(traitsOf(releaseOf(v)), { ...legacy, allPoolsSet: 'all-ipam-pools', ...routes(v) }, v);
    for (const v of ['v3.31.6', 'v3.31.7'])
      assert.deepEqual(traitsOf(releaseOf(v)), { ...legacy, allPoolsSet: 'network-ip-pools', ...routes(v) }, v);
    assert.deepEqual(traitsOf(releaseOf('v3.32.0')), {
      ...modern,
      allPoolsSet: 'all-ipam-pools',
      ...routes('v3.32.0'),
    });
    for (const v of ['v3.32.1', 'v3.33.0', 'v4.0.0', ''])
      assert.deepEqual(traitsOf(releaseOf(v)), { ...modern, allPoolsSet: 'network-ip-pools', ...routes(v) }, v);
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

  it('names a policy as the release\'s Felix does: PolicyID.ID() from 3.32, "<tier>/<v1 name>" before', () => {
    const cases: Array<[string, string, string]> = [
      ['np/prod/allow', 'default', 'default/prod/default.allow'],
      ['np/prod/default.allow', 'default', 'default/prod/default.allow'],
      ['np/prod/sec.allow', 'sec', 'sec/prod/sec.allow'],
      ['gnp/deny-all', 'default', 'default/default.deny-all'],
      ['gnp/kanp.adminnetworkpolicy.a', 'adminnetworkpolicy', 'adminnetworkpolicy/kanp.adminnetworkpolicy.a'],
      ['knp/prod/web', 'default', 'default/prod/knp.default.web'],
      ['kcnp/c', 'kube-admin', 'kube-admin/kcnp.c'],
    ];
    for (const [id, tier, legacy] of cases) {
      assert.equal(felixPolicyId(id, tier, 'tiered'), legacy, id);
      assert.equal(felixPolicyId(id, tier, 'kind'), id);
    }
  });

  it('breaks ties between policies of one order as the release does', () => {
    const meta = (name: string) => ({
      name,
      sortKey: '',
      order: 10,
      ingress: true,
      egress: false,
      doNotTrack: false,
      preDNAT: false,
      applyOnForward: false,
    });
    const order = (s: PolicySorter) => s.sorted()[0]?.policies.map((p) => p.name);
    for (const style of ['kind', 'tiered'] as const) {
      const s = new PolicySorter();
      s.setStyle(style);
      s.onTierUpdate('default', { defaultAction: 'Deny' });
      s.onPolicyUpdate('np/ns-b/a', 'default', { ...meta('np/ns-b/a'), sortKey: 'a/ns-b/NetworkPolicy' });
      s.onPolicyUpdate('gnp/z', 'default', { ...meta('gnp/z'), sortKey: 'z//GlobalNetworkPolicy' });
      // 3.32: "a/ns-b/NetworkPolicy" < "z//GlobalNetworkPolicy"; 3.31: "default.z" < "ns-b/default.a".
      assert.deepEqual(order(s), style === 'kind' ? ['np/ns-b/a', 'gnp/z'] : ['gnp/z', 'np/ns-b/a'], style);
    }
    const s = new PolicySorter();
    s.onTierUpdate('default', { defaultAction: 'Deny' });
    s.onPolicyUpdate('np/ns-b/a', 'default', { ...meta('np/ns-b/a'), sortKey: 'a/ns-b/NetworkPolicy' });
    s.onPolicyUpdate('gnp/z', 'default', { ...meta('gnp/z'), sortKey: 'z//GlobalNetworkPolicy' });
    assert.deepEqual(order(s), ['np/ns-b/a', 'gnp/z']);
    s.setStyle('tiered');
    assert.deepEqual(order(s), ['gnp/z', 'np/ns-b/a'], 'policies already held are re-keyed');
  });
});

describe("releases: ProgramClusterRoutes as each release's Felix reads it (docs/compatibility.md D32)", () => {
  const at = (v: string, release: string) => clusterRoutesOf(v, releaseOf(release));
  const routes = (c: { ipip: boolean; noEncap: boolean }) => [c.ipip, c.noEncap];

  it('3.30: BIRD programs IPIP and unencapsulated routes; a value for it is said not to be taken', () => {
    assert.deepEqual(routes(at('', 'v3.30.7')), [false, false]);
    assert.equal(at('', 'v3.30.7').problem, undefined);
    assert.match(at('Enabled', 'v3.30.7').problem ?? '', /has no such parameter/);
    assert.deepEqual(routes(at('Enabled', 'v3.30.7')), [false, false]);
  });

  it('3.31 and 3.32 (and a cluster naming no release): Enabled or Disabled, Disabled by default; the later values are Felix-invalid', () => {
    for (const release of ['v3.31.7', 'v3.32.1', '']) {
      assert.deepEqual(routes(at('', release)), [false, false], release);
      assert.deepEqual(routes(at('Enabled', release)), [true, true], release);
      assert.deepEqual(routes(at('Disabled', release)), [false, false], release);
      const split = at('EnabledIPIPOnly', release);
      assert.deepEqual(routes(split), [false, false], release);
      assert.match(split.problem ?? '', /taken as Disabled/);
    }
  });

  it('after 3.32: each kind apart, IPIP routes by default', () => {
    assert.deepEqual(routes(at('', 'v3.33.0')), [true, false]);
    assert.deepEqual(routes(at('EnabledNoEncapOnly', 'v3.33.0')), [false, true]);
    assert.deepEqual(routes(at('Enabled', 'v3.33.0')), [true, true]);
    assert.deepEqual(routes(at('Disabled', 'v3.33.0')), [false, false]);
  });

  it('the parameter is unset by default, whatever the release decides of it', () => {
    assert.equal(new ConfigResolver({ env: {} }).config.ProgramClusterRoutes, '');
    assert.equal(
      new ConfigResolver({ env: { FELIX_PROGRAMCLUSTERROUTES: 'enabledipiponly' } }).config.ProgramClusterRoutes,
      'EnabledIPIPOnly',
    );
  });
});
