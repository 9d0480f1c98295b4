// The IP-set op encoder (src/native/ipset.ts): members become fixed-size records, and
// anything the kernel would misread is refused here with the member named.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { encodeIpsetOps, initialHashsize, type IpsetFamily, type IpsetType } from '../../src/native/ipset.js';

const add = (type: IpsetType, family: IpsetFamily, members: string[]) =>
  Buffer.from(encodeIpsetOps([{ op: 'add', name: 'cali40s:x', type, family, members }]));

describe('IP-set op encoding', () => {
  it('writes each member as address, prefix, protocol and port', () => {
    const header = 1 + 4 + 1 + 'cali40s:x'.length + 6;
    assert.equal(
      add('hash:ip', 4, ['10.1.2.3']).subarray(header).toString('hex'),
      `0a010203${'00'.repeat(12)}20000000`,
    );
    assert.equal(
      add('hash:net', 4, ['10.1.0.0/16']).subarray(header).toString('hex'),
      `0a010000${'00'.repeat(12)}10000000`,
    );
    assert.equal(
      add('hash:ip,port', 4, ['10.1.2.3,udp:53']).subarray(header).toString('hex'),
      `0a010203${'00'.repeat(12)}20113500`,
    );
    assert.equal(add('hash:ip', 6, ['fd00::1']).subarray(header).toString('hex'), `fd00${'00'.repeat(13)}0180000000`);
    // The allocation-free IPv4 path and the general one agree.
    assert.deepEqual(
      add('hash:ip', 4, ['192.168.0.255']).subarray(header),
      add('hash:net', 4, ['192.168.0.255/32']).subarray(header),
    );
  });

  it('writes a create as type, family, maxelem and the initial hashsize (0: the kernel default)', () => {
    const create = (hashsize?: number) =>
      Buffer.from(
        encodeIpsetOps([
          {
            op: 'create',
            name: 'cali40s:x',
            type: 'hash:net',
            family: 6,
            maxelem: 65536,
            ...(hashsize ? { hashsize } : {}),
          },
        ]),
      )
        .subarray(1 + 4 + 1 + 'cali40s:x'.length)
        .toString('hex');
    assert.equal(create(8192), '02060000010000200000');
    assert.equal(create(), '02060000010000000000');
  });

  it('sizes a new set by its members: a power of two, at most its maxelem, the default up to 1,024', () => {
    assert.equal(initialHashsize(0, 1048576), 0);
    assert.equal(initialHashsize(1024, 1048576), 0);
    assert.equal(initialHashsize(1025, 1048576), 2048);
    assert.equal(initialHashsize(250_000, 1048576), 262144);
    assert.equal(initialHashsize(1_000_000, 1048576), 1048576);
    // More members than it may hold (the kernel refuses the rest): sized for what it holds.
    assert.equal(initialHashsize(5_000_000, 1048576), 1048576);
    assert.equal(initialHashsize(5_000, 3_000), 4096);
  });

  it('refuses members the kernel would misread, naming them', () => {
    const bad: Array<[IpsetType, IpsetFamily, string]> = [
      ['hash:ip', 4, '1.2.3'],
      ['hash:ip', 4, '1.2.3.256'],
      ['hash:ip', 4, '1..2.3'],
      ['hash:ip', 4, 'fd00::1'],
      ['hash:ip', 6, '10.0.0.1'],
      ['hash:net', 4, '10.0.0.0/33'],
      ['hash:net', 4, '10.0.0.0/0'],
      ['hash:net', 4, '10.0.0.0/x'],
      ['hash:ip', 6, 'fd00::1/64'],
      ['hash:ip,port', 4, '10.0.0.1'],
      ['hash:ip,port', 4, '10.0.0.1,icmp:8'],
      ['hash:ip,port', 4, '10.0.0.1,tcp:65536'],
    ];
    for (const [type, family, member] of bad)
      assert.throws(
        () => add(type, family, [member]),
        (e: Error) => e.message.includes(member),
        `${type} ${member}`,
      );
    assert.throws(() => encodeIpsetOps([{ op: 'flush', name: 'x'.repeat(32) }]), /invalid IP set name/);
    assert.throws(() => encodeIpsetOps([{ op: 'flush', name: 'has space' }]), /invalid IP set name/);
  });
});
