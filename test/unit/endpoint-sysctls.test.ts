// EndpointSysctlManager: each local workload interface that exists is configured once per
// spoofing setting; the endpoints are walked again only after an endpoint or an
// interface changed, or a resync.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { Config } from '../../src/config/params.js';
import { EndpointSysctlManager } from '../../src/dataplane/managers/endpoint-sysctls.js';
import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import { createLogger } from '../../src/log.js';
import type { WorkloadEndpoint } from '../../src/proto/messages.js';

const log = createLogger({ severity: 'Fatal' });
const config = { IPForwarding: 'Disabled', Ipv6Support: false, WorkloadSourceSpoofing: 'Any' } as Pick<
  Config,
  'IPForwarding' | 'Ipv6Support' | 'WorkloadSourceSpoofing'
>;
const id = (w: string) => ({ orchestratorId: 'k8s', workloadId: w, endpointId: 'eth0' });

describe('EndpointSysctlManager', () => {
  it('configures each existing interface once, and walks the endpoints only after a change', async () => {
    const ifaces = new InterfaceTable();
    const configured: string[] = [];
    const m = new EndpointSysctlManager(config, ifaces, log, async (name, _v6, _log, spoofing) => {
      configured.push(`${name}/${spoofing}`);
    });
    let reads = 0;
    const ep = (name: string, prefixes: string[]) => {
      const e = {
        state: 'active',
        name,
        mac: '',
        profileIds: [],
        ipv4Nets: [],
        ipv6Nets: [],
      } as unknown as WorkloadEndpoint;
      Object.defineProperty(e, 'allowSpoofedSourcePrefixes', {
        get: () => {
          reads++;
          return prefixes;
        },
      });
      return e;
    };
    m.onUpdate({ type: 'WorkloadEndpointUpdate', id: id('a'), endpoint: ep('cali1', []) });
    assert.deepEqual(await m.apply(), { interfaces: 0 }, 'no interface yet');
    const up = (name: string) => ifaces.apply([{ type: 'ifaceUpdate', name, index: 7, state: 'up' }]);
    m.onInterfaces(up('cali1'));
    assert.deepEqual(await m.apply(), { interfaces: 1 });
    const before = reads;
    m.onUpdate({ type: 'InSync' });
    assert.deepEqual(await m.apply(), { interfaces: 0 });
    assert.equal(reads, before, 'nothing changed: the endpoints are not walked');
    m.onUpdate({ type: 'WorkloadEndpointUpdate', id: id('a'), endpoint: ep('cali1', ['192.0.2.0/24']) });
    assert.deepEqual(await m.apply(), { interfaces: 1 }, 'spoofing now allowed: configured again');
    m.markResync();
    assert.deepEqual(await m.apply(), { interfaces: 1 }, 'a resync writes them all again');
    assert.deepEqual(configured, ['cali1/false', 'cali1/true', 'cali1/true']);
  });

  it('walks again at the next apply when configuring failed', async () => {
    const ifaces = new InterfaceTable();
    let fail = true;
    const m = new EndpointSysctlManager(config, ifaces, log, async () => {
      if (fail) throw new Error('boom');
    });
    m.onInterfaces(ifaces.apply([{ type: 'ifaceUpdate', name: 'cali1', index: 7, state: 'up' }]));
    m.onUpdate({
      type: 'WorkloadEndpointUpdate',
      id: id('a'),
      endpoint: { name: 'cali1', allowSpoofedSourcePrefixes: [] } as unknown as WorkloadEndpoint,
    });
    await assert.rejects(m.apply(), /boom/);
    fail = false;
    assert.deepEqual(await m.apply(), { interfaces: 1 });
  });
});
