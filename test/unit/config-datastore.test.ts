// Configuration from the datastore: FelixConfiguration fields converted as Calico's update
// processor converts them (values from Calico's documentation and model tests), the
// ConfigBatcher's sources (default, node.<host>, selector-scoped with the oldest match
// winning, ClusterInformation and its ready flag), and the control plane resolving all of
// it before the first dataplane message, pausing while the datastore is not ready.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ControlPlane } from '../../src/agent/control-plane.js';
import { ConfigBatcher } from '../../src/config/config-batcher.js';
import { ConfigResolver } from '../../src/config/config.js';
import { felixConfigurationParams, goDurationSeconds } from '../../src/config/felix-configuration.js';
import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { createLogger } from '../../src/log.js';
import type { Resource } from '../../src/model/schemas.js';
import type { ToDataplane } from '../../src/proto/messages.js';
import { FakeSyncer } from '../helpers/fake-syncer.js';

const log = createLogger({ severity: 'Fatal' });
const V3 = 'projectcalico.org/v3';
const fc = (name: string, spec: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({
  apiVersion: V3,
  kind: 'FelixConfiguration',
  metadata: { name, ...meta },
  spec,
});

describe('config: FelixConfiguration as Felix sees it', () => {
  it('converts each kind of field as the update processor does', () => {
    const { values, problems } = felixConfigurationParams(
      {
        defaultEndpointToHostAction: 'Accept',
        failsafeInboundHostPorts: [
          { protocol: 'TCP', port: 2222 },
          { protocol: 'UDP', port: 53, net: 'fd00::/8' },
          { protocol: 'TCP', port: 6443, net: '10.0.0.0/8' },
        ],
        failsafeOutboundHostPorts: [],
        iptablesRefreshInterval: '1m30s',
        iptablesLockProbeInterval: '50ms',
        reportingInterval: '2.5s',
        ipipMTU: 1440,
        ipv6Support: false,
        interfaceExclude: 'kube-ipvs0,/^veth/',
        externalNodesList: ['10.0.0.0/8', '192.168.1.1'],
        routeTableRange: { min: 1, max: 250 },
        routeTableRanges: [
          { min: 1, max: 250 },
          { min: 1000, max: 2000 },
        ],
        healthTimeoutOverrides: [{ name: 'InternalDataplaneMainLoop', timeout: '30s' }],
        featureDetectOverride: { SNATFullyRandom: 'true' },
        nodeSelector: "zone == 'a'",
      },
      { 'config.projectcalico.org/IptablesFilterAllowAction': 'RETURN', other: 'x' },
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(Object.fromEntries(values), {
      DefaultEndpointToHostAction: 'Accept',
      FailsafeInboundHostPorts: 'tcp:2222,udp:[fd00::/8]:53,tcp:10.0.0.0/8:6443',
      FailsafeOutboundHostPorts: 'none',
      IptablesRefreshInterval: '90',
      IptablesLockProbeIntervalMillis: '50',
      ReportingIntervalSecs: '2.5',
      IpInIpMtu: '1440',
      Ipv6Support: 'false',
      InterfaceExclude: 'kube-ipvs0,/^veth/',
      ExternalNodesCIDRList: '10.0.0.0/8,192.168.1.1',
      RouteTableRange: '1-250',
      RouteTableRanges: '1-250,1000-2000',
      HealthTimeoutOverrides: 'InternalDataplaneMainLoop=30s',
      FeatureDetectOverride: 'SNATFullyRandom=true',
      IptablesFilterAllowAction: 'RETURN',
    });
  });

  it("reports fields that are not FelixConfiguration's, with the nearest ones, and values it cannot convert", () => {
    const { values, problems } = felixConfigurationParams(
      { failsafeInboundHostPort: [], iptablesRefreshInterval: 90, healthPort: 9099 },
      undefined,
    );
    assert.deepEqual([...values.keys()], ['HealthPort']);
    assert.equal(problems.length, 2);
    assert.match(problems[0]?.reason ?? '', /not a FelixConfiguration field \(did you mean failsafeInboundHostPorts/);
    assert.match(problems[1]?.reason ?? '', /expected a duration such as "90s"/);
  });

  it('Go durations', () => {
    assert.equal(goDurationSeconds('1h2m3.5s'), 3723.5);
    assert.equal(goDurationSeconds('500ms'), 0.5);
    assert.equal(goDurationSeconds('0'), 0);
    assert.equal(goDurationSeconds('90'), undefined);
  });
});

describe('config: ConfigBatcher', () => {
  // As the agent feeds it: each resource through the update processors.
  function batcher(host: string) {
    const b = new ConfigBatcher(host, log);
    const processors = new UpdateProcessors(log);
    const feed = (kind: string, name: string, resource: Resource | undefined) => {
      for (const u of processors.process({ kind, name }, resource)) b.onUpdate(u);
    };
    return {
      b,
      fc: (name: string, r: ReturnType<typeof fc> | undefined) =>
        feed('FelixConfiguration', name, r as Resource | undefined),
      node: (name: string, labels: Record<string, string>) =>
        feed('Node', name, {
          apiVersion: 'projectcalico.org/v3',
          kind: 'Node',
          metadata: { name, labels },
          spec: {},
        } as Resource),
      ci: (spec: Record<string, unknown> | undefined) =>
        feed(
          'ClusterInformation',
          'default',
          spec &&
            ({
              apiVersion: 'projectcalico.org/v3',
              kind: 'ClusterInformation',
              metadata: { name: 'default' },
              spec,
            } as Resource),
        ),
    };
  }

  it("default, node.<host> and the oldest matching selector-scoped resource; not other nodes'", () => {
    const { b, fc: put, node } = batcher('node1');
    put('default', fc('default', { healthPort: 9100 }));
    put('node.node1', fc('node.node1', { healthPort: 9200 }));
    put('node.node2', fc('node.node2', { healthPort: 9300 }));
    put(
      'zone-a',
      fc('zone-a', { nodeSelector: "zone == 'a'", maxIpsetSize: 10 }, { creationTimestamp: '2026-01-02T00:00:00Z' }),
    );
    put('all', fc('all', { nodeSelector: 'all()', maxIpsetSize: 20 }, { creationTimestamp: '2026-01-01T00:00:00Z' }));
    let d = b.take();
    assert.deepEqual([...d.global], [['HealthPort', '9100']]);
    assert.deepEqual([...d.node], [['HealthPort', '9200']]);
    assert.equal(d.selectorName, undefined, 'no Node resource: no labels, nothing matches');
    node('node1', { zone: 'a' });
    assert.equal(b.dirty, true);
    d = b.take();
    assert.equal(d.selectorName, 'all', 'the oldest match wins');
    assert.deepEqual([...d.selector], [['MaxIpsetSize', '20']]);
    put('all', undefined);
    assert.equal(b.take().selectorName, 'zone-a');
    node('node1', { zone: 'b' });
    assert.equal(b.take().selectorName, undefined);
  });

  it('ClusterInformation: its fields are global parameters; datastoreReady false means not ready, absent means ready', () => {
    const { b, ci } = batcher('node1');
    assert.equal(b.ready, true);
    ci({ clusterGUID: 'abc', datastoreReady: false });
    assert.equal(b.ready, false);
    assert.deepEqual([...b.take().global], [['ClusterGUID', 'abc']]);
    ci({ datastoreReady: true });
    assert.equal(b.ready, true);
    ci(undefined);
    assert.equal(b.ready, true);
  });
});

describe('control plane: configuration before the dataplane', () => {
  function plane() {
    const syncer = new FakeSyncer();
    const config = new ConfigResolver({ flags: { FelixHostname: 'node1' } });
    const events: string[] = [];
    const messages: ToDataplane[][] = [];
    const cp = new ControlPlane({
      syncer,
      config,
      log,
      onConfigResolved: () =>
        events.push(
          `resolved ${config.config.DefaultEndpointToHostAction} ${JSON.stringify(config.config.FailsafeInboundHostPorts)}`,
        ),
      onMessages: (m) => {
        events.push(`messages ${m.length}`);
        messages.push(m);
      },
      onRestartNeeded: (p) => events.push(`restart ${p.join(',')}`),
    });
    cp.start();
    return { syncer, config, events, messages, cp };
  }

  it('resolves FelixConfiguration before the first messages, then restarts on a change', () => {
    const { syncer, events, cp } = plane();
    syncer.update(
      fc('default', {
        defaultEndpointToHostAction: 'Accept',
        failsafeInboundHostPorts: [{ protocol: 'TCP', port: 2222 }],
      }),
    );
    syncer.status('in-sync');
    cp.flush();
    assert.deepEqual(events, ['resolved Accept [{"protocol":"tcp","port":2222}]', 'messages 2']);
    syncer.update(fc('default', { defaultEndpointToHostAction: 'Return' }));
    cp.flush();
    assert.match(events[2] ?? '', /^restart .*DefaultEndpointToHostAction/);
  });

  it("RouteSource from FelixConfiguration decides the first routes: WorkloadIPs routes other nodes' workloads, not their blocks; a change restarts", () => {
    const { syncer, events, messages, cp } = plane();
    const pod = (node: string, ip: string) => ({
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: `${node}-k8s-db--0-eth0`, namespace: 'prod' },
      spec: {
        node,
        orchestrator: 'k8s',
        pod: 'db-0',
        endpoint: 'eth0',
        interfaceName: 'cali1234567890a',
        ipNetworks: [ip],
      },
    });
    syncer.update(pod('node2', '10.65.1.7/32'));
    syncer.update({
      apiVersion: V3,
      kind: 'IPAMBlock',
      metadata: { name: '10-65-1-0-26' },
      spec: {
        cidr: '10.65.1.0/26',
        affinity: 'host:node2',
        allocations: [0],
        unallocated: [],
        attributes: [{ secondary: { node: 'node2' } }],
        strictAffinity: false,
      },
    });
    syncer.update(fc('default', { routeSource: 'WorkloadIPs' }));
    syncer.status('in-sync');
    cp.flush();
    const routes = (messages[0] ?? []).flatMap((m) => (m.type === 'RouteUpdate' ? [m.route.dst] : []));
    assert.deepEqual(routes, ['10.65.1.7/32']);
    syncer.update(fc('default', { routeSource: 'CalicoIPAM' }));
    cp.flush();
    assert.ok(
      events.some((e) => /^restart .*RouteSource/.test(e)),
      events.join(' / '),
    );
  });

  it('pauses while ClusterInformation says the datastore is not ready, and resumes', () => {
    const { syncer, events, cp } = plane();
    syncer.update({
      apiVersion: V3,
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { datastoreReady: false },
    });
    syncer.status('in-sync');
    cp.flush();
    assert.equal(cp.paused, true);
    assert.deepEqual(
      events.filter((e) => e.startsWith('messages')),
      [],
    );
    syncer.update({
      apiVersion: V3,
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { datastoreReady: true },
    });
    cp.flush();
    assert.equal(cp.paused, false);
    assert.deepEqual(
      events.filter((e) => e.startsWith('messages')),
      ['messages 1'],
      'InSync, held until then',
    );
  });
});
