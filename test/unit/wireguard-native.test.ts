// The kernel WireGuard client's JavaScript half without a kernel: a change encoded into
// native/wg/wg.h's stream, field by field, and garbage of every kind - bad keys, bad
// endpoints, bad CIDRs, out-of-range numbers - refused with EINVAL before anything is
// sent; the addon refuses a malformed stream the same way.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { generatePrivateKey, publicKeyOf } from '../../src/dataplane/wireguard/keys.js';
import { native } from '../../src/native/load.js';
import { encodeWgChange, parseEndpoint, WgEncodeError, wgSet } from '../../src/native/wg.js';

const PRIV = generatePrivateKey();
const PUB = publicKeyOf(PRIV);

describe('kernel WireGuard change stream', () => {
  it('encodes the device header and each peer with its allowed IPs', () => {
    const buf = Buffer.from(
      encodeWgChange({
        privateKey: PRIV,
        listenPort: 51820,
        fwmark: 0x100000,
        replacePeers: true,
        peers: [
          {
            publicKey: PUB,
            endpoint: '[fd99::2]:51821',
            allowedIps: ['10.65.1.0/26', 'fd65::1'],
            persistentKeepalive: 25,
          },
          { publicKey: PUB, remove: true, allowedIps: ['10.0.0.0/8'] },
        ],
      }),
    );
    assert.equal(buf[0], 1 | 2 | 4 | 8);
    assert.deepEqual(buf.subarray(1, 33), Buffer.from(PRIV, 'base64'));
    assert.equal(buf.readUInt16LE(33), 51820);
    assert.equal(buf.readUInt32LE(35), 0x100000);
    assert.equal(buf.readUInt32LE(39), 2);
    const p = buf.subarray(43);
    assert.deepEqual(p.subarray(0, 32), Buffer.from(PUB, 'base64'));
    assert.equal(p[32], 2 | 8 | 16, 'replace allowed IPs, endpoint, keepalive');
    assert.equal(p[33], 6);
    assert.equal(p.readUInt16LE(50), 51821);
    assert.equal(p.readUInt16LE(52), 25);
    assert.equal(p.readUInt32LE(54), 2);
    assert.deepEqual([p[58], p.subarray(59, 63).join('.'), p[75]], [4, '10.65.1.0', 26]);
    assert.deepEqual([p[76], p[93]], [6, 128]);
    const removed = p.subarray(94);
    assert.equal(removed[32], 1, 'a removal carries nothing else');
    assert.equal(removed.readUInt32LE(54), 0);
    assert.equal(removed.length, 58);
    // A private key of "" clears the device's key (all zeros, flag set).
    const cleared = Buffer.from(encodeWgChange({ privateKey: '' }));
    assert.equal(cleared[0], 2);
    assert.ok(cleared.subarray(1, 33).every((b) => b === 0));
  });

  it("makes private keys as `wg genkey` does (clamped), a thousand without Node's key-generation jobs", () => {
    for (let i = 0; i < 1000; i++) {
      const k = Buffer.from(generatePrivateKey(), 'base64');
      assert.equal(k.length, 32);
      assert.deepEqual([(k[0] as number) & 7, (k[31] as number) & 0xc0], [0, 0x40]);
    }
  });

  it('refuses garbage with EINVAL, never another exception', () => {
    const bad: Array<[string, () => unknown]> = [
      ['key', () => encodeWgChange({ peers: [{ publicKey: 'nope' }] })],
      ['short key', () => encodeWgChange({ privateKey: Buffer.alloc(31).toString('base64') })],
      ['endpoint', () => encodeWgChange({ peers: [{ publicKey: PUB, endpoint: '10.0.0.1' }] })],
      ['endpoint address', () => encodeWgChange({ peers: [{ publicKey: PUB, endpoint: '999.1.1.1:5' }] })],
      ['endpoint port', () => encodeWgChange({ peers: [{ publicKey: PUB, endpoint: '10.0.0.1:70000' }] })],
      ['cidr', () => encodeWgChange({ peers: [{ publicKey: PUB, allowedIps: ['10.0.0.0/33'] }] })],
      ['cidr text', () => encodeWgChange({ peers: [{ publicKey: PUB, allowedIps: ['pods'] }] })],
      ['cidr prefix', () => encodeWgChange({ peers: [{ publicKey: PUB, allowedIps: ['fd00::/1x'] }] })],
      ['port', () => encodeWgChange({ listenPort: -1 })],
      ['fwmark', () => encodeWgChange({ fwmark: 2 ** 32 })],
      ['keepalive', () => encodeWgChange({ peers: [{ publicKey: PUB, persistentKeepalive: 1.5 }] })],
    ];
    for (const [what, f] of bad)
      assert.throws(f, (e: unknown) => e instanceof WgEncodeError && e.code === 'EINVAL', what);
    assert.deepEqual(parseEndpoint('[fd00::1]:51821'), { family: 6, addr: 'fd00::1', port: 51821 });
  });

  it('the addon refuses a malformed stream or name before it opens a socket', async () => {
    const cases: Array<[string, Uint8Array]> = [
      ['short', new Uint8Array(3)],
      ['peers claimed', Buffer.concat([Buffer.alloc(39), Buffer.from([5, 0, 0, 0])])],
      ['trailing', Buffer.concat([Buffer.from(encodeWgChange({ listenPort: 1 })), Buffer.from([1])])],
    ];
    for (const [what, bytes] of cases)
      await assert.rejects(native.wgSet('wg0', bytes), (e: { code?: string }) => e.code === 'EINVAL', what);
    await assert.rejects(
      wgSet('a-name-too-long-for-a-link', { listenPort: 1 }),
      (e: { code?: string }) => e.code === 'EINVAL',
    );
    await assert.rejects(
      async () => native.wgSet('wg0', 'x' as unknown as Uint8Array),
      (e: { code?: string }) => e.code === 'EINVAL',
    );
  });
});
