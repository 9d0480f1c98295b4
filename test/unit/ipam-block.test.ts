// IPAM blocks as every datastore hands them over (the IPAMBlock kind, Typha's v1 Block
// values): bad input is refused with a reason, never taken in part; the addresses a block
// lends to other nodes are read as libcalico-go reads them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ipamBlockProcessor } from '../../src/datastore/processors/simple.js';
import { ProcessorError } from '../../src/datastore/processors/types.js';
import { blockHost, blockName, type IpamBlock, nonAffineAllocations } from '../../src/model/ipam.js';
import { validateResource } from '../../src/model/validate.js';
import { parseValue } from '../../src/model/v1/values.js';

const res = (name: string, spec: unknown) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'IPAMBlock',
  metadata: { name },
  spec,
});
const good = {
  cidr: '10.65.1.0/26',
  affinity: 'host:node1',
  allocations: [0, null, 1],
  unallocated: [1],
  attributes: [{ secondary: { node: 'node1' } }, { secondary: { node: 'node2' } }],
};

describe('IPAM blocks', () => {
  it('a block is read as libcalico-go reads it: its node, and the addresses in use on other nodes', () => {
    const r = validateResource(res('10.65.1.0-26', good));
    assert.ok(r.ok, JSON.stringify(r));
    const b = (r.ok && r.resource.kind === 'IPAMBlock' ? r.resource.spec : undefined) as IpamBlock;
    assert.equal(blockHost(b), 'node1');
    assert.equal(blockHost({ affinity: 'virtual:vm1' }), 'vm1');
    assert.equal(blockHost({ affinity: null }), '');
    assert.deepEqual(nonAffineAllocations(b), [{ address: '10.65.1.2', host: 'node2' }]);
    // An allocation whose attributes are missing is skipped, not a crash.
    assert.deepEqual(nonAffineAllocations({ ...b, allocations: [7] }), []);
    const [u] = ipamBlockProcessor.process(
      { kind: 'IPAMBlock', name: '10.65.1.0-26' },
      r.ok ? (r.resource as never) : undefined,
    );
    assert.deepEqual(u?.key, { type: 'Block', cidr: '10.65.1.0/26' });
  });

  it('refuses what is not a block: a non-canonical CIDR, bad allocations, a name that does not spell the CIDR', () => {
    for (const [spec, why] of [
      [{ ...good, cidr: '10.65.1.5/26' }, /canonical/],
      [{ ...good, cidr: 'banana' }, /canonical/],
      [{ ...good, allocations: [-1] }, /allocations/],
      [{ ...good, attributes: 'x' }, /attributes/],
    ] as const) {
      const r = validateResource(res('10.65.1.0-26', spec));
      assert.ok(!r.ok && why.test(r.error.message), `${JSON.stringify(spec)}: ${r.ok ? 'accepted' : r.error.message}`);
    }
    assert.throws(
      () => ipamBlockProcessor.process({ kind: 'IPAMBlock', name: 'not-a-cidr' }, undefined),
      (e: Error) => e instanceof ProcessorError && /not a block CIDR/.test(e.message),
    );
    const other = validateResource(res('10.65.1.0-26', { ...good, cidr: '10.65.2.0/26' }));
    assert.ok(other.ok);
    assert.throws(
      () =>
        ipamBlockProcessor.process(
          { kind: 'IPAMBlock', name: '10.65.1.0-26' },
          other.ok ? (other.resource as never) : undefined,
        ),
      /the name says 10\.65\.1\.0\/26, spec\.cidr says 10\.65\.2\.0\/26/,
    );
  });

  it("takes a block by Calico's own names for it (the Kubernetes datastore's CIDRToName, etcd's key), IPv4 and IPv6", () => {
    for (const [name, cidr] of [
      ['10-65-1-0-26', '10.65.1.0/26'],
      ['10.65.1.0-26', '10.65.1.0/26'],
      ['fd68-0-0-3---122', 'fd68:0:0:3::/122'],
      ['fd00---122', 'fd00::/122'],
    ] as const) {
      const r = validateResource(res(name, { ...good, cidr }));
      assert.ok(r.ok, `${name}: ${r.ok ? '' : r.error.message}`);
      assert.deepEqual(
        ipamBlockProcessor.process({ kind: 'IPAMBlock', name }, r.resource as never).map((u) => u.key),
        [{ type: 'Block', cidr }],
        name,
      );
      assert.deepEqual(
        ipamBlockProcessor.process({ kind: 'IPAMBlock', name }, undefined).map((u) => u.key),
        [{ type: 'Block', cidr }],
        `${name}, deleted: the CIDR from the name alone`,
      );
    }
    assert.equal(blockName('fd68:0:0:3::/122'), 'fd68-0-0-3---122');
    for (const name of ['10-65-1-1-26', '10-65-1-0', 'fd68-0000-0-3---122', '256-1-1-0-24', '-', '', '10-65-1-0-33'])
      assert.throws(
        () => ipamBlockProcessor.process({ kind: 'IPAMBlock', name }, undefined),
        (e: Error) => e instanceof ProcessorError && /not a block CIDR/.test(e.message),
        name,
      );
  });

  it('a v1 Block value from Typha is checked against its key; garbage is a clear error', () => {
    const key = { type: 'Block', cidr: '10.65.1.0/26' } as const;
    assert.equal(parseValue(key, JSON.stringify(good)).affinity, 'host:node1');
    assert.throws(() => parseValue(key, '{not json'), /not JSON/);
    assert.throws(
      () => parseValue(key, JSON.stringify({ ...good, cidr: '10.65.9.0/26' })),
      /not the key's 10\.65\.1\.0\/26/,
    );
    assert.throws(() => parseValue(key, JSON.stringify({ ...good, allocations: 'x' })), /IPAM block: allocations/);
  });
});
