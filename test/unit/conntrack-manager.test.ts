// ConntrackManager: after each apply, the addresses local workloads no longer have are
// flushed from conntrack, once; a failure is logged, not thrown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ConntrackManager } from '../../src/dataplane/managers/conntrack-manager.js';
import { createLogger } from '../../src/log.js';
import { workloadEndpoint } from '../helpers/workload-endpoint.js';

const log = createLogger({ severity: 'Fatal' });
const ep = workloadEndpoint;
const id = (w: string) => ({ orchestratorId: 'k8s', workloadId: w, endpointId: 'eth0' });

describe('ConntrackManager', () => {
  it('flushes the addresses of removed endpoints (and removed addresses), nothing else, once', async () => {
    const calls: string[][] = [];
    const m = new ConntrackManager(log, async (a) => {
      calls.push([...a]);
      return { scanned: 10, deleted: a.length };
    });
    for (const msg of [
      { type: 'InSync' },
      { type: 'WorkloadEndpointUpdate', id: id('a'), endpoint: ep('cali1', ['10.0.0.1/32'], ['fd00::1/128']) },
      { type: 'WorkloadEndpointUpdate', id: id('b'), endpoint: ep('cali2', ['10.0.0.2/32']) },
    ] as const)
      m.onUpdate(msg);
    assert.deepEqual(await m.apply(), { deleted: 0 });
    m.onUpdate({ type: 'WorkloadEndpointRemove', id: id('a') });
    m.onUpdate({ type: 'WorkloadEndpointUpdate', id: id('b'), endpoint: ep('cali2', ['10.0.0.3/32']) });
    assert.deepEqual(await m.apply(), { deleted: 3 });
    assert.deepEqual(calls, [['10.0.0.1', 'fd00::1', '10.0.0.2']]);
    assert.deepEqual(await m.apply(), { deleted: 0 }, 'nothing new gone: no flush');
    assert.equal(calls.length, 1);
  });

  it('reads the endpoints again only after one of them changed', async () => {
    const m = new ConntrackManager(log, async (a) => ({ scanned: 1, deleted: a.length }));
    let reads = 0;
    const counted = ep('cali1', ['10.0.0.1/32']);
    Object.defineProperty(counted, 'ipv4Nets', {
      get: () => {
        reads++;
        return ['10.0.0.1/32'];
      },
    });
    m.onUpdate({ type: 'WorkloadEndpointUpdate', id: id('a'), endpoint: counted });
    await m.apply();
    assert.equal(reads, 1);
    m.onUpdate({ type: 'InSync' });
    await m.apply();
    await m.apply();
    assert.equal(reads, 1, 'no endpoint changed: not read');
    m.onUpdate({ type: 'WorkloadEndpointRemove', id: id('b') });
    assert.deepEqual(await m.apply(), { deleted: 0 });
    assert.equal(reads, 2);
  });

  it('logs a failure and carries on', async () => {
    const m = new ConntrackManager(log, async () => {
      throw new Error('boom');
    });
    m.onUpdate({ type: 'WorkloadEndpointUpdate', id: id('a'), endpoint: ep('cali1', ['10.0.0.1/32']) });
    await m.apply();
    m.onUpdate({ type: 'WorkloadEndpointRemove', id: id('a') });
    assert.deepEqual(await m.apply(), { deleted: 0 });
  });
});
