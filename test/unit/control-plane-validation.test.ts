// Felix's ValidationFilter on the internal model: a workload endpoint without an
// interface name cannot be programmed, so the control plane treats it as missing (not a
// local endpoint, not an IP-set member), says so once, and takes it when it gets a name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ControlPlane } from '../../src/agent/control-plane.js';
import { ConfigResolver } from '../../src/config/config.js';
import { createLogger } from '../../src/log.js';
import type { ToDataplane } from '../../src/proto/messages.js';
import { gnp, profile, wep } from '../helpers/calc-fixtures.js';
import { FakeSyncer } from '../helpers/fake-syncer.js';

describe('control plane: workload endpoints without an interface name', () => {
  it('are treated as missing, reported once, and taken once they have one', async () => {
    const lines: string[] = [];
    const log = createLogger({ severity: 'Warning', destination: { write: (l: string) => lines.push(l) } });
    const syncer = new FakeSyncer();
    const messages: ToDataplane[] = [];
    const cp = new ControlPlane({
      syncer,
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    cp.start();
    const put = (r: unknown) => syncer.update(r as Parameters<FakeSyncer['update']>[0]);
    const nameless = (node: string, ip: string, name: string) => {
      const r = wep(name, node, ip, { app: 'web' });
      delete (r.spec as Record<string, unknown>).interfaceName;
      return r;
    };
    put(profile('kns.prod', {}));
    put(gnp('p', { selector: "app == 'web'", ingress: [{ action: 'Allow', source: { selector: 'all()' } }] }));
    put(wep('named', 'node1', '10.0.0.1/32', { app: 'web' }));
    put(nameless('node1', '10.0.0.2/32', 'local'));
    put(nameless('node2', '10.0.0.3/32', 'remote'));
    put(nameless('node2', '10.0.0.3/32', 'remote'));
    syncer.status('in-sync');
    await new Promise((r) => setTimeout(r, 20));
    const weps = () => messages.filter((m) => m.type === 'WorkloadEndpointUpdate').map((m) => m.endpoint.name);
    const members = () =>
      messages.flatMap((m) =>
        m.type === 'IPSetUpdate' ? m.members : m.type === 'IPSetDeltaUpdate' ? m.addedMembers : [],
      );
    assert.deepEqual(weps(), ['calinamed000000']);
    assert.deepEqual(members(), ['10.0.0.1/32']);
    const warned = lines.filter((l) => l.includes('no interface name'));
    assert.equal(warned.length, 2, 'once per endpoint while it stays so');
    assert.match(warned[0] ?? '', /node1\/k8s\/prod\/local\/eth0/);

    put(wep('local', 'node1', '10.0.0.2/32', { app: 'web' }));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(weps(), ['calinamed000000', 'calilocal000000']);
    assert.ok(members().includes('10.0.0.2/32'));
    await cp.stop();
  });
});

describe("control plane: the default BGPConfiguration's service CIDRs (ServiceLoopPrevention)", () => {
  const bgp = (name: string, spec: Record<string, unknown>) => ({
    key: { type: 'Resource' as const, kind: 'BGPConfiguration' as const, name },
    value: { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name }, spec },
  });

  it('reach the dataplane from Typha as Felix sends them, empty CIDRs left out, empty again when it goes', async () => {
    const lines: string[] = [];
    const log = createLogger({ severity: 'Warning', destination: { write: (l: string) => void lines.push(l) } });
    let cbs: import('../../src/datastore/types.js').ModelSyncerCallbacks | undefined;
    const typha = {
      deliversModel: true as const,
      start(cb: import('../../src/datastore/types.js').ModelSyncerCallbacks) {
        cbs = cb;
      },
      stop: async () => {},
    };
    const messages: ToDataplane[] = [];
    const cp = new ControlPlane({
      syncer: typha,
      config: new ConfigResolver({ flags: { FelixHostname: 'node1' } }),
      log,
      onMessages: (m) => messages.push(...m),
      onRestartNeeded: () => {},
    });
    cp.start();
    const configs = () => messages.flatMap((m) => (m.type === 'GlobalBGPConfigUpdate' ? [m.config] : []));
    cbs?.onModelUpdates([
      bgp('default', {
        serviceClusterIPs: [{ cidr: '10.96.0.0/12' }, {}],
        serviceExternalIPs: [{ cidr: '192.0.2.0/24' }],
        serviceLoadBalancerIPs: [{ cidr: 'fd00:96::/112' }],
      }),
      // A node's own BGPConfiguration is not Felix's concern.
      bgp('node.node1', { serviceClusterIPs: [{ cidr: '10.200.0.0/16' }] }),
    ] as never);
    cbs?.onStatusUpdated('in-sync');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(configs(), [
      {
        serviceClusterCidrs: ['10.96.0.0/12'],
        serviceExternalCidrs: ['192.0.2.0/24'],
        serviceLoadbalancerCidrs: ['fd00:96::/112'],
      },
    ]);
    cbs?.onModelUpdates([{ key: bgp('default', {}).key, value: undefined }] as never);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(configs().at(-1), {
      serviceClusterCidrs: [],
      serviceExternalCidrs: [],
      serviceLoadbalancerCidrs: [],
    });
    assert.deepEqual(
      lines.filter((l) => /ServiceLoopPrevention/.test(l)),
      [],
      'nothing to report: it is programmed',
    );
    await cp.stop();
  });
});
