// The Kubernetes datastore through the whole control plane, against a real kube-apiserver
// serving Calico 3.31.7's own CRDs (and 3.32.1's ClusterNetworkPolicy): namespaces,
// service accounts, pods on this node and another, a host-networked pod and a
// NetworkPolicy become the dataplane messages Felix would send; edits and deletions
// follow. ClusterNetworkPolicies, once their CRD exists, land in the kube-admin and
// kube-baseline tiers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { ControlPlane } from '../../src/agent/control-plane.js';
import { ConfigResolver } from '../../src/config/config.js';
import { DEFAULT_ALLOW_KEY, defaultAllowProfileUpdate } from '../../src/datastore/default-allow.js';
import { calicoGroup, KddSyncer } from '../../src/datastore/kdd/kdd-syncer.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { validateResource } from '../../src/model/validate.js';
import type { ToDataplane } from '../../src/proto/messages.js';
import { KubeApiServer } from '../helpers/kube-cluster.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { SyncerRecorder } from '../helpers/syncer-recorder.js';
import { until } from '../helpers/until.js';

const log = createLogger({ severity: 'Fatal' });

const pod = (
  name: string,
  ns: string,
  node: string,
  ip: string,
  labels: Record<string, string>,
  extra: Record<string, unknown> = {},
) => ({
  metadata: { name, namespace: ns, labels },
  spec: {
    nodeName: node,
    serviceAccountName: 'default',
    containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports: [{ name: 'http', containerPort: 8080 }] }],
    ...extra,
  },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});

describe('Kubernetes datastore: the control plane fed by the API server', { timeout: 60_000 }, () => {
  let api: KubeApiServer;
  const transport = () => new HttpKubeTransport(api.endpoint());

  before(async () => {
    api = await KubeApiServer.start();
    await api.installCrds(
      sharedCalico('v3.31.7', 'crds', 'libcalico-go'),
      sharedCalico('v3.32.1', 'crds', 'libcalico-go', 'policy.networking.k8s.io_clusternetworkpolicies.yaml'),
    );
    await api.put('namespaces', { metadata: { name: 'prod', labels: { team: 'a' } } });
    await api.put('serviceaccounts', { metadata: { name: 'default', namespace: 'prod' } });
    await api.put('nodes', {
      metadata: {
        name: 'node1',
        labels: { zone: 'z1' },
        annotations: { 'projectcalico.org/IPv4Address': '192.0.2.1/24' },
      },
    });
    await api.put('pods', pod('web-0', 'prod', 'node1', '10.65.0.10', { app: 'web' }));
    await api.put('pods', pod('db-0', 'prod', 'node1', '10.65.0.11', { app: 'db' }));
    await api.put('pods', pod('web-1', 'prod', 'node2', '10.65.1.10', { app: 'web' }));
    await api.put('pods', pod('hostnet', 'prod', 'node1', '192.0.2.1', { app: 'web' }, { hostNetwork: true }));
    await api.put('networkpolicies', {
      metadata: { name: 'db-from-web', namespace: 'prod' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }],
        policyTypes: ['Ingress'],
      },
    });
    // Calico's own resources, as CRDs: a policy with the legacy "default." prefix, a pool.
    await api.put('globalnetworkpolicies.crd.projectcalico.org', {
      metadata: {
        name: 'default.allow-dns',
        annotations: { 'projectcalico.org/metadata': '{"labels":{"owner":"ops"}}' },
      },
      spec: {
        selector: "app == 'db'",
        types: ['Egress'],
        egress: [{ action: 'Allow', destination: { services: { name: 'dns', namespace: 'prod' } } }],
      },
    });
    // The service the policy names, through its EndpointSlice; and a slice of no service.
    await api.put('endpointslices', {
      metadata: { name: 'dns-abcde', namespace: 'prod', labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.65.0.53'] }],
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53 },
      ],
    });
    await api.put('endpointslices', {
      metadata: { name: 'orphan', namespace: 'prod' },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.9.9.9'] }],
      ports: [{ port: 1 }],
    });
    await api.put('ippools.crd.projectcalico.org', {
      metadata: { name: 'pool1' },
      spec: { cidr: '10.65.0.0/16', natOutgoing: true },
    });
  });
  after(async () => {
    await api?.stop();
  });

  it('lists projectcalico-default-allow beside the namespaces and service accounts, as libcalico-go does (issue 52)', async () => {
    const rec = new SyncerRecorder();
    const syncer = new KddSyncer({
      transport: transport(),
      log,
      backoffMs: { min: 20, max: 200 },
    });
    syncer.start(rec);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      assert.deepEqual(rec.state.get(DEFAULT_ALLOW_KEY), defaultAllowProfileUpdate().value);
      const v = validateResource(rec.state.get(DEFAULT_ALLOW_KEY));
      assert.ok(v.ok);
    } finally {
      await syncer.stop();
    }
  });

  it('converges on what Felix would program, then follows edits and deletions', async () => {
    const messages: ToDataplane[] = [];
    const syncer = new KddSyncer({
      transport: transport(),
      log,
      backoffMs: { min: 20, max: 200 },
    });
    const cp = new ControlPlane({
      syncer,
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    cp.start();
    try {
      await until(() => messages.some((m) => m.type === 'InSync'), 10_000, 'in-sync');
      const weps = messages.filter((m) => m.type === 'WorkloadEndpointUpdate') as Array<
        Extract<ToDataplane, { type: 'WorkloadEndpointUpdate' }>
      >;
      assert.deepEqual(
        weps.map((w) => w.id.workloadId).sort(),
        ['prod/db-0', 'prod/web-0'],
        "this node's pods, not the host-networked one",
      );
      const db = weps.find((w) => w.id.workloadId === 'prod/db-0');
      assert.deepEqual(db?.endpoint.profileIds, ['kns.prod', 'ksa.prod.default']);
      assert.deepEqual(db?.endpoint.ipv4Nets, ['10.65.0.11/32']);
      assert.match(db?.endpoint.name ?? '', /^cali[0-9a-f]{11}$/);
      const policies = (
        messages.filter((m) => m.type === 'ActivePolicyUpdate') as Array<
          Extract<ToDataplane, { type: 'ActivePolicyUpdate' }>
        >
      ).map((p) => p.id.name);
      assert.deepEqual(
        policies.sort(),
        ['gnp/allow-dns', 'knp/prod/db-from-web'],
        'Felix\'s policy IDs: knp/ for a Kubernetes NetworkPolicy; the CRD\'s legacy "default." prefix gone',
      );
      assert.deepEqual(
        db?.endpoint.tiers.map((t) => [t.name, t.ingressPolicies, t.egressPolicies]),
        [['default', ['knp/prod/db-from-web'], ['gnp/allow-dns']]],
      );
      assert.ok(
        messages.some((m) => m.type === 'IPAMPoolUpdate' && m.pool.cidr === '10.65.0.0/16' && m.pool.masquerade),
        'the IPPool CRD',
      );
      // The web pods of both nodes are the rule's source set.
      const sets = messages.filter((m) => m.type === 'IPSetUpdate') as Array<
        Extract<ToDataplane, { type: 'IPSetUpdate' }>
      >;
      assert.ok(
        sets.some((s) => [...s.members].sort().join() === '10.65.0.10/32,10.65.1.10/32'),
        JSON.stringify(sets.map((s) => s.members)),
      );
      // The service match: each endpoint address with each port, TCP unless said.
      assert.ok(
        sets.some((s) => [...s.members].sort().join() === '10.65.0.53,tcp:53,10.65.0.53,udp:53'),
        `the service's IP set: ${JSON.stringify(sets.map((s) => s.members))}`,
      );
      // The node's address from its Calico annotation.
      assert.ok(
        messages.some((m) => m.type === 'HostMetadataUpdate' && m.hostname === 'node1' && m.ipv4Addr === '192.0.2.1'),
        JSON.stringify(messages.filter((m) => m.type.startsWith('Host'))),
      );

      messages.length = 0;
      await api.put('networkpolicies', {
        metadata: { name: 'db-from-web', namespace: 'prod' },
        spec: {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 6543 }] }],
          policyTypes: ['Ingress'],
        },
      });
      await api.del('pods', 'prod', 'web-0');
      await api.put('endpointslices', {
        metadata: { name: 'dns-abcde', namespace: 'prod', labels: { 'kubernetes.io/service-name': 'dns' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.65.0.54'] }],
        ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
      });
      await until(
        () =>
          messages.some((m) => m.type === 'WorkloadEndpointRemove') &&
          messages.some((m) => m.type === 'ActivePolicyUpdate') &&
          messages.some((m) => m.type === 'IPSetDeltaUpdate' && m.addedMembers.includes('10.65.0.54,udp:53')),
        5000,
        "the edit, the deletion and the service's new endpoint",
      );
      const delta = messages.find(
        (m) => m.type === 'IPSetDeltaUpdate' && m.addedMembers.includes('10.65.0.54,udp:53'),
      ) as Extract<ToDataplane, { type: 'IPSetDeltaUpdate' }>;
      assert.deepEqual([...delta.removedMembers].sort(), ['10.65.0.53,tcp:53', '10.65.0.53,udp:53']);
      const removed = messages.find((m) => m.type === 'WorkloadEndpointRemove') as Extract<
        ToDataplane,
        { type: 'WorkloadEndpointRemove' }
      >;
      assert.equal(removed.id.workloadId, 'prod/web-0');
    } finally {
      await cp.stop();
    }
  });
  it("an operator's kubectl apply, patch and delete reach the dataplane, in the order kubectl get --watch shows them", async () => {
    const messages: ToDataplane[] = [];
    const cp = new ControlPlane({
      syncer: new KddSyncer({ transport: transport(), log, backoffMs: { min: 20, max: 200 } }),
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    const watch = api.kubectlProcess([
      'get',
      'networkpolicies',
      '-n',
      'prod',
      '--watch-only',
      '--output-watch-events',
      '--no-headers',
    ]);
    let seen = '';
    watch.stdout?.on('data', (d: Buffer) => (seen += d.toString()));
    cp.start();
    const rulesOf = (name: string) =>
      (
        [...messages].reverse().find((m) => m.type === 'ActivePolicyUpdate' && m.id.name === `knp/prod/${name}`) as
          | Extract<ToDataplane, { type: 'ActivePolicyUpdate' }>
          | undefined
      )?.policy.inboundRules.map((r) => r.dstPorts);
    try {
      await until(() => messages.some((m) => m.type === 'InSync'), 10_000, 'in-sync');
      api.kubectl(
        ['apply', '-f', '-'],
        [
          'apiVersion: networking.k8s.io/v1',
          'kind: NetworkPolicy',
          'metadata: {name: ops, namespace: prod}',
          'spec:',
          '  podSelector: {matchLabels: {app: db}}',
          '  ingress: [{ports: [{port: 8443}]}]',
        ].join('\n'),
      );
      await until(() => JSON.stringify(rulesOf('ops')) === '[[{"first":8443,"last":8443}]]', 10_000, 'the apply');
      api.kubectl([
        'patch',
        'networkpolicy',
        'ops',
        '-n',
        'prod',
        '--type=merge',
        '-p',
        '{"spec":{"ingress":[{"ports":[{"port":9443}]}]}}',
      ]);
      await until(() => JSON.stringify(rulesOf('ops')) === '[[{"first":9443,"last":9443}]]', 10_000, 'the patch');
      api.kubectl(['delete', 'networkpolicy', 'ops', '-n', 'prod']);
      await until(
        () => messages.some((m) => m.type === 'ActivePolicyRemove' && m.id.name === 'knp/prod/ops'),
        10_000,
        'the deletion',
      );
      await until(() => /DELETED/.test(seen), 5000, 'kubectl to see the deletion');
      assert.deepEqual(
        seen
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/)[0]),
        ['ADDED', 'MODIFIED', 'DELETED'],
        seen,
      );
    } finally {
      watch.kill();
      await cp.stop();
    }
  });
  it('on Calico 3.31, AdminNetworkPolicy and BaselineAdminNetworkPolicy are read and ClusterNetworkPolicy is not; on 3.32 the other way round (issue 52)', async () => {
    await api.put('clusterinformations.crd.projectcalico.org', {
      metadata: { name: 'default' },
      spec: { calicoVersion: 'v3.31.7', datastoreReady: true },
    });
    // As clientv3's EnsureInitialized creates them on 3.31 (AdminNetworkPolicyTierOrder and the baseline's).
    for (const [name, order, defaultAction] of [
      ['default', 1_000_000, 'Deny'],
      ['adminnetworkpolicy', 1000, 'Pass'],
      ['baselineadminnetworkpolicy', 10_000_000, 'Pass'],
    ] as const)
      await api.put('tiers.crd.projectcalico.org', { metadata: { name }, spec: { order, defaultAction } });
    await api.put('adminnetworkpolicies', {
      metadata: { name: 'no-metadata' },
      spec: {
        priority: 10,
        subject: { namespaces: {} },
        egress: [{ name: 'metadata', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }],
      },
    });
    await api.put('baselineadminnetworkpolicies', {
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
    });
    await api.put('clusternetworkpolicies', {
      metadata: { name: 'cnp-on-old-release' },
      spec: {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      },
    });
    const lines: string[] = [];
    const messages: ToDataplane[] = [];
    const syncer = new KddSyncer({
      transport: transport(),
      log: createLogger({ severity: 'Warning', destination: { write: (l: string) => void lines.push(l) } }),
      backoffMs: { min: 20, max: 200 },
    });
    const cp = new ControlPlane({
      syncer,
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    const tiersOf = () => {
      const weps = messages.filter((m) => m.type === 'WorkloadEndpointUpdate') as Array<
        Extract<ToDataplane, { type: 'WorkloadEndpointUpdate' }>
      >;
      const db = [...weps].reverse().find((w) => w.id.workloadId === 'prod/db-0');
      return db?.endpoint.tiers.map((t) => [t.name, t.ingressPolicies, t.egressPolicies]);
    };
    cp.start();
    try {
      await until(() => messages.some((m) => m.type === 'InSync'), 10_000, 'in-sync');
      assert.deepEqual(tiersOf(), [
        ['adminnetworkpolicy', [], ['gnp/kanp.adminnetworkpolicy.no-metadata']],
        ['default', ['knp/prod/db-from-web'], ['gnp/allow-dns']],
        ['baselineadminnetworkpolicy', ['gnp/kbanp.baselineadminnetworkpolicy.default'], []],
      ]);
      assert.ok(
        lines.some((l) => /Calico v3\.31\.7 does not read ClusterNetworkPolicy[^"]*ignored/.test(l)),
        'the ClusterNetworkPolicy is reported, once the release is known',
      );
      // An upgrade: the AdminNetworkPolicies go, the ClusterNetworkPolicy comes.
      messages.length = 0;
      await api.put('clusterinformations.crd.projectcalico.org', {
        metadata: { name: 'default' },
        spec: { calicoVersion: 'v3.32.1', datastoreReady: true },
      });
      await until(
        () => messages.some((m) => m.type === 'ActivePolicyUpdate' && m.id.name === 'kcnp/cnp-on-old-release'),
        10_000,
        'the ClusterNetworkPolicy passed on',
      );
      await until(
        () =>
          messages.some(
            (m) => m.type === 'ActivePolicyRemove' && m.id.name === 'gnp/kanp.adminnetworkpolicy.no-metadata',
          ),
        10_000,
        'the AdminNetworkPolicy withdrawn',
      );
    } finally {
      await cp.stop();
      await api.del('adminnetworkpolicies', undefined, 'no-metadata');
      await api.del('baselineadminnetworkpolicies', undefined, 'default');
      await api.del('clusternetworkpolicies', undefined, 'cnp-on-old-release');
      await api.del('clusterinformations.crd.projectcalico.org', undefined, 'default');
      for (const t of ['default', 'adminnetworkpolicy', 'baselineadminnetworkpolicy'])
        await api.del('tiers.crd.projectcalico.org', undefined, t);
    }
  });
  it('a pod with qos.projectcalico.org/ annotations is programmed, and its QoS controls reported once as not enforced (issue 52)', async () => {
    const p = pod('qos-0', 'prod', 'node1', '10.65.0.30', { app: 'qos' });
    await api.put('pods', {
      ...p,
      metadata: { ...p.metadata, annotations: { 'qos.projectcalico.org/ingressBandwidth': '10M' } },
    });
    const lines: string[] = [];
    const rec = new SyncerRecorder();
    const syncer = new KddSyncer({
      transport: transport(),
      log: createLogger({ severity: 'Warning', destination: { write: (l: string) => void lines.push(l) } }),
      backoffMs: { min: 20, max: 200 },
    });
    syncer.start(rec);
    try {
      await until(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      assert.ok(
        [...rec.state.keys()].some((k) => k.includes('node1-k8s-qos--0-eth0')),
        'the endpoint is there',
      );
      const said = lines.filter((l) => /QoS controls .* not enforced/.test(l));
      assert.equal(said.length, 1, lines.join('\n'));
      assert.match(said[0] ?? '', /pods prod\/qos-0/);
    } finally {
      await syncer.stop();
      await api.del('pods', 'prod', 'qos-0');
    }
  });
  it('ClusterNetworkPolicies (once their CRD is installed) are kcnp/ policies in the kube-admin and kube-baseline tiers, around the default tier', async () => {
    // calico-node creates these tiers at start (clientv3's EnsureInitialized), default included.
    await api.put('tiers.crd.projectcalico.org', {
      metadata: { name: 'default' },
      spec: { order: 1_000_000, defaultAction: 'Deny' },
    });
    await api.put('tiers.crd.projectcalico.org', {
      metadata: { name: 'kube-admin' },
      spec: { order: 1000, defaultAction: 'Pass' },
    });
    await api.put('tiers.crd.projectcalico.org', {
      metadata: { name: 'kube-baseline' },
      spec: { order: 10_000_000, defaultAction: 'Pass' },
    });
    await api.put('clusternetworkpolicies', {
      metadata: { name: 'no-metadata-service' },
      spec: {
        tier: 'Admin',
        priority: 10,
        subject: { namespaces: {} },
        egress: [{ name: 'metadata', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }],
      },
    });
    await api.put('clusternetworkpolicies', {
      metadata: { name: 'default-deny-prod' },
      spec: {
        tier: 'Baseline',
        priority: 1,
        subject: { namespaces: { matchLabels: { team: 'a' } } },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      },
    });
    const messages: ToDataplane[] = [];
    const syncer = new KddSyncer({
      transport: transport(),
      log,
      backoffMs: { min: 20, max: 200 },
    });
    const cp = new ControlPlane({
      syncer,
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    cp.start();
    try {
      await until(() => messages.some((m) => m.type === 'InSync'), 10_000, 'in-sync');
      const weps = messages.filter((m) => m.type === 'WorkloadEndpointUpdate') as Array<
        Extract<ToDataplane, { type: 'WorkloadEndpointUpdate' }>
      >;
      const db = [...weps].reverse().find((w) => w.id.workloadId === 'prod/db-0');
      assert.deepEqual(
        db?.endpoint.tiers.map((t) => [t.name, t.ingressPolicies, t.egressPolicies]),
        [
          ['kube-admin', [], ['kcnp/no-metadata-service']],
          ['default', ['knp/prod/db-from-web'], ['gnp/allow-dns']],
          ['kube-baseline', ['kcnp/default-deny-prod'], []],
        ],
      );
      const admin = messages.find(
        (m) => m.type === 'ActivePolicyUpdate' && m.id.name === 'kcnp/no-metadata-service',
      ) as Extract<ToDataplane, { type: 'ActivePolicyUpdate' }>;
      assert.deepEqual(
        admin.policy.outboundRules.map((r) => [r.action, r.dstNet]),
        [['deny', ['169.254.169.254/32']]],
      );
    } finally {
      await cp.stop();
      for (const n of ['no-metadata-service', 'default-deny-prod'])
        await api.del('clusternetworkpolicies', undefined, n);
      for (const t of ['default', 'kube-admin', 'kube-baseline'])
        await api.del('tiers.crd.projectcalico.org', undefined, t);
    }
  });
});

describe('Kubernetes datastore: the projectcalico.org/v3 CRD group of Calico 3.32+ (issue 52)', {
  timeout: 60_000,
}, () => {
  let api: KubeApiServer;
  before(async () => {
    // Calico 3.32's native v3 CRDs only, as a cluster installed with them has.
    api = await KubeApiServer.start();
    await api.installCrds(sharedCalico('v3.32.1', 'crds', 'api'));
  });
  after(async () => {
    await api?.stop();
  });

  it('read when the API server has projectcalico.org and not crd.projectcalico.org; CALICO_API_GROUP overrides', async () => {
    await api.put('globalnetworkpolicies.projectcalico.org', {
      metadata: { name: 'deny-metadata' },
      spec: {
        tier: 'default',
        selector: 'all()',
        egress: [{ action: 'Deny', destination: { nets: ['169.254.169.254/32'] } }],
      },
    });
    const run = async (apiGroup: string) => {
      const lines: string[] = [];
      const rec = new SyncerRecorder();
      const syncer = new KddSyncer({
        transport: new HttpKubeTransport(api.endpoint()),
        log: createLogger({ severity: 'Info', destination: { write: (l: string) => void lines.push(l) } }),
        backoffMs: { min: 20, max: 200 },
        missingApiRetryMs: 60_000,
        apiGroup,
      });
      syncer.start(rec);
      await until(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      await syncer.stop();
      return { keys: [...rec.state.keys()], lines };
    };
    const auto = await run('');
    assert.ok(
      auto.keys.includes('/calico/resources/v3/projectcalico.org/globalnetworkpolicies/deny-metadata'),
      auto.keys.join(' '),
    );
    assert.ok(auto.lines.some((l) => /"apiGroup":"projectcalico\.org\/v3"/.test(l)));
    const forced = await run('crd.projectcalico.org/v1');
    assert.ok(!forced.keys.some((k) => k.includes('globalnetworkpolicies')), 'the v1 group has none here');
  });

  it("the v1 CRDs when both groups are served (the v1 CRDs back Calico's API server), or when discovery fails", async () => {
    const log = createLogger({ severity: 'Fatal' });
    const t = new HttpKubeTransport(api.endpoint());
    assert.equal(await calicoGroup(t, '', log), 'projectcalico.org/v3');
    await api.installCrds(sharedCalico('v3.32.1', 'crds', 'libcalico-go'));
    assert.equal(await calicoGroup(t, '', log), 'crd.projectcalico.org/v1');
    assert.equal(
      await calicoGroup(new HttpKubeTransport({ server: 'http://127.0.0.1:1' }), '', log),
      'crd.projectcalico.org/v1',
    );
    assert.equal(await calicoGroup(t, 'projectcalico.org/v3', log), 'projectcalico.org/v3');
  });
});
