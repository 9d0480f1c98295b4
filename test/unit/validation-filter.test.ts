// Calico's key layout, and the validation filter between syncer and calc graph.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';

import { keyOf, refOfKey } from '../../src/datastore/keys.js';
import type { SyncStatus } from '../../src/datastore/types.js';
import { validateResource } from '../../src/model/validate.js';
import { ValidationFilter } from '../../src/datastore/validation-filter.js';
import { createLogger } from '../../src/log.js';
import type { Resource } from '../../src/model/schemas.js';
import type { ResourceRef } from '../../src/model/validate.js';
import { np, profile } from '../helpers/calc-fixtures.js';

describe('datastore: keys', () => {
  it('round-trips every kind in Calico layout', () => {
    const cases: Array<[ResourceRef, string]> = [
      [
        { kind: 'NetworkPolicy', namespace: 'prod', name: 'web' },
        '/calico/resources/v3/projectcalico.org/networkpolicies/prod/web',
      ],
      [{ kind: 'GlobalNetworkPolicy', name: 'g' }, '/calico/resources/v3/projectcalico.org/globalnetworkpolicies/g'],
      [
        { kind: 'WorkloadEndpoint', namespace: 'ns', name: 'n-k8s-p-eth0' },
        '/calico/resources/v3/projectcalico.org/workloadendpoints/ns/n-k8s-p-eth0',
      ],
      [
        { kind: 'IPPool', name: 'default-ipv4-ippool' },
        '/calico/resources/v3/projectcalico.org/ippools/default-ipv4-ippool',
      ],
      [
        { kind: 'FelixConfiguration', name: 'default' },
        '/calico/resources/v3/projectcalico.org/felixconfigurations/default',
      ],
      [{ kind: 'Node', name: 'node1' }, '/calico/resources/v3/projectcalico.org/nodes/node1'],
    ];
    for (const [ref, key] of cases) {
      assert.equal(keyOf(ref), key);
      assert.deepEqual(refOfKey(key), ref);
    }
    assert.equal(keyOf({ kind: 'NetworkPolicy', name: 'x' }), undefined, 'namespaced kinds need a namespace');
    assert.equal(keyOf({ kind: 'Pod', name: 'x' }), undefined);
    for (const bad of [
      '/calico/resources/v3/projectcalico.org/pods/x',
      '/calico/resources/v3/projectcalico.org/networkpolicies/x',
      '/other/x',
      '/calico/resources/v3/projectcalico.org/tiers/a/b',
      '/calico/resources/v3/projectcalico.org/tiers/',
      '/calico/resources/v3/projectcalico.org/tiers',
      '/calico/resources/v3/projectcalico.org/',
      '/calico/resources/v3/projectcalico.org/networkpolicies/ns/',
      '/calico/resources/v3/projectcalico.org/networkpolicies//x',
      '/calico/resources/v3/projectcalico.org/networkpolicies/ns/x/',
      '/calico/resources/v3/projectcalico.org/networkpolicies/ns/x/y',
    ]) {
      assert.equal(refOfKey(bad), undefined, bad);
    }
  });
});

describe('datastore: ValidationFilter', () => {
  function setup() {
    const got: Array<[string, string | undefined]> = [];
    const statuses: SyncStatus[] = [];
    const warnings: string[] = [];
    const dest = new Writable({
      write(chunk: Buffer, _e, cb) {
        for (const l of chunk.toString().split('\n'))
          if (l.trim()) warnings.push(String((JSON.parse(l) as { msg: string }).msg));
        cb();
      },
    });
    const filter = new ValidationFilter(
      {
        onUpdate: (ref: ResourceRef, r: Resource | undefined) =>
          got.push([`${ref.kind}/${ref.namespace ?? ''}/${ref.name}`, r ? JSON.stringify(r.spec) : undefined]),
        onStatus: (s) => statuses.push(s),
      },
      createLogger({ severity: 'Warning', destination: dest }),
    );
    return { filter, got, statuses, warnings };
  }
  const k = (r: { kind: string; metadata: Record<string, unknown> }) =>
    keyOf({
      kind: r.kind,
      name: r.metadata.name as string,
      ...(r.metadata.namespace ? { namespace: r.metadata.namespace as string } : {}),
    }) as string;

  it('passes valid values, turns invalid ones into deletes, and reports each problem once', () => {
    const { filter, got, statuses, warnings } = setup();
    const bad = np('web', { selector: "app == 'web" });
    filter.onUpdates([{ key: k(bad), value: bad, revision: '2', source: 'etcd x' }]);
    filter.onUpdates([{ key: k(bad), value: bad, revision: '3', source: 'etcd x' }]);
    filter.onStatusUpdated('in-sync');
    assert.deepEqual(
      got.map(([r, v]) => [r, v === undefined]),
      [
        ['NetworkPolicy/prod/web', true],
        ['NetworkPolicy/prod/web', true],
      ],
    );
    assert.deepEqual(statuses, ['in-sync']);
    assert.equal(warnings.filter((w) => w.includes('spec.selector')).length, 1, 'reported once');
    assert.equal(filter.invalidCount, 1);
    const good = np('web', { selector: "app == 'web'" });
    filter.onUpdates([{ key: k(good), value: good, revision: '4' }]);
    assert.equal(filter.invalidCount, 0);
    assert.equal(got.at(-1)?.[1] !== undefined, true);
  });

  it('a policy, network set, host endpoint or tier that was valid keeps its last good value; other kinds are dropped as Felix drops them; each counted (issue 52)', () => {
    const { got, warnings } = setup();
    const counted: string[] = [];
    const filter = new ValidationFilter(
      {
        onUpdate: (ref: ResourceRef, r: Resource | undefined) =>
          got.push([`${ref.kind}/${ref.namespace ?? ''}/${ref.name}`, r ? JSON.stringify(r.spec) : undefined]),
        onStatus: () => {},
      },
      createLogger({
        severity: 'Warning',
        destination: { write: (l: string) => void warnings.push(String(JSON.parse(l).msg)) },
      }),
      (kind, outcome) => counted.push(`${kind} ${outcome}`),
    );
    const good = np('web', { selector: "app == 'web'" });
    const bad = np('web', { selector: "app == 'web" });
    const gns = { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata: { name: 'blocked' } };
    const wepGood = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-pod-eth0', namespace: 'prod' },
      spec: { node: 'node1', orchestrator: 'k8s', pod: 'pod', endpoint: 'eth0', interfaceName: 'cali1' },
    };
    const wepBad = { ...wepGood, spec: { ...wepGood.spec, ipNetworks: ['nope'] } };
    filter.onUpdates([
      { key: k(good), value: good, revision: '1' },
      { key: k(gns), value: { ...gns, spec: { nets: ['192.0.2.0/24'] } }, revision: '2' },
      { key: k(wepGood), value: wepGood, revision: '3' },
    ]);
    got.length = 0;
    filter.onUpdates([
      { key: k(bad), value: bad, revision: '4' },
      { key: k(gns), value: { ...gns, spec: { nets: ['192.0.2.0/33'] } }, revision: '5' },
      { key: k(wepBad), value: wepBad, revision: '6' },
    ]);
    assert.deepEqual(got, [['WorkloadEndpoint/prod/node1-k8s-pod-eth0', undefined]], 'only the endpoint is dropped');
    assert.deepEqual(counted, ['NetworkPolicy kept', 'GlobalNetworkSet kept', 'WorkloadEndpoint dropped']);
    assert.equal(warnings.filter((w) => /the last good value stays in force/.test(w)).length, 2);
    // The policy valid again, then deleted: both pass.
    filter.onUpdates([{ key: k(good), value: good, revision: '7' }]);
    filter.onUpdates([{ key: k(good), value: null, revision: '8' }]);
    assert.deepEqual(
      got.slice(1).map(([r, v]) => [r, v === undefined]),
      [
        ['NetworkPolicy/prod/web', false],
        ['NetworkPolicy/prod/web', true],
      ],
    );
    // Deleted, then bad: nothing good to keep.
    filter.onUpdates([{ key: k(bad), value: bad, revision: '9' }]);
    assert.deepEqual(got.at(-1), ['NetworkPolicy/prod/web', undefined]);
    assert.equal(counted.at(-1), 'NetworkPolicy dropped');
  });

  it('refuses a value that names another resource, undecodable values, and keys outside the layout', () => {
    const { filter, got, warnings } = setup();
    const p = profile('a', {});
    filter.onUpdates([
      { key: '/calico/resources/v3/projectcalico.org/profiles/b', value: p, revision: '1' },
      {
        key: '/calico/resources/v3/projectcalico.org/profiles/c',
        value: null,
        revision: '2',
        decodeError: 'value is not JSON: Unexpected token',
      },
      { key: '/calico/foo', value: p, revision: '3' },
      { key: '/calico/resources/v3/projectcalico.org/profiles/d', value: null, revision: '4' },
    ]);
    assert.deepEqual(got, [
      ['Profile//b', undefined],
      ['Profile//c', undefined],
      ['Profile//d', undefined],
    ]);
    assert.ok(warnings.some((w) => w.includes('names a different resource')));
    assert.ok(warnings.some((w) => w.includes('not JSON')));
    assert.ok(warnings.some((w) => w.includes('outside')));

    // Another namespace, another kind, then the right one.
    const web = np('web', {});
    const prefix = '/calico/resources/v3/projectcalico.org/';
    got.length = 0;
    filter.onUpdates([
      { key: `${prefix}networkpolicies/staging/web`, value: web, revision: '5' },
      { key: `${prefix}globalnetworkpolicies/web`, value: web, revision: '6' },
      { key: `${prefix}networkpolicies/prod/web`, value: web, revision: '7' },
    ]);
    assert.deepEqual(
      got.map(([r, v]) => [r, v === undefined]),
      [
        ['NetworkPolicy/staging/web', true],
        ['GlobalNetworkPolicy//web', true],
        ['NetworkPolicy/prod/web', false],
      ],
    );
    assert.ok(warnings.some((w) => w.includes(`different resource (${prefix}networkpolicies/prod/web)`)));
  });
});

describe('validation: what is accepted and not enforced is said', () => {
  it("a workload endpoint's QoS controls (Calico 3.30+) are a warning, and the endpoint is kept (issue 52)", () => {
    const wep = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-pod-eth0', namespace: 'prod' },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'pod',
        endpoint: 'eth0',
        interfaceName: 'cali1',
        qosControls: { ingressBandwidth: 10_000_000 },
      },
    };
    const r = validateResource(wep);
    assert.ok(r.ok);
    assert.deepEqual(r.warnings.length, 1);
    assert.match(r.warnings[0] ?? '', /QoS controls .* not enforced/);
    const plain = validateResource({ ...wep, spec: { ...wep.spec, qosControls: {} } });
    assert.ok(plain.ok && plain.warnings.length === 0);
  });
});
