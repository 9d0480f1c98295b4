// The route batch encoder writes addresses in place (writeAddress); it must agree with
// addressBytes, the allocating reference, for both families, at any offset.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { addressBytes, writeAddress } from '../../src/model/net.js';
import { encodeRouteOps } from '../../src/native/rtnl.js';

describe('address bytes', () => {
  it('writeAddress equals addressBytes for IPv4 and IPv6 at an offset', () => {
    for (const a of [
      '0.0.0.0',
      '10.65.3.192',
      '255.255.255.255',
      '192.0.2.1',
      '::',
      '2001:db8::1',
      'fd00:10:244::a:b',
      '::ffff:102:304',
    ]) {
      const buf = new Uint8Array(24).fill(0xee);
      writeAddress(buf, 3, a);
      const want = addressBytes(a);
      assert.deepEqual(Buffer.from(buf.subarray(3, 3 + want.length)), want, a);
      assert.equal(buf[2], 0xee, `${a}: nothing before`);
      assert.equal(buf[3 + want.length], 0xee, `${a}: nothing after`);
    }
  });

  it('a route op carries its prefix length, destination, gateway and preferred source', () => {
    const buf = encodeRouteOps([
      {
        op: 'routeReplace',
        dst: '10.65.3.192/26',
        ifindex: 7,
        gateway: '10.200.0.5',
        onlink: true,
        scope: 'universe',
        prefsrc: '192.0.2.9',
      },
    ]);
    assert.equal(buf[10], 26);
    assert.deepEqual([...buf.subarray(11, 15)], [10, 65, 3, 192]);
    assert.deepEqual([...buf.subarray(35, 39)], [10, 200, 0, 5]);
    assert.deepEqual([...buf.subarray(53, 57)], [192, 0, 2, 9]);
    const host = encodeRouteOps([{ op: 'routeReplace', dst: '2001:db8::7', ifindex: 7, scope: 'link' }]);
    assert.equal(host[10], 128);
    assert.equal(host[5], 6);
  });
});
