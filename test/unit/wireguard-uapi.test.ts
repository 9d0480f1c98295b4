// The WireGuard UAPI codec and keys without a device: a get answer parsed as wgctrl reads
// it, a set request written as the protocol says, and garbage of every kind - truncated
// answers, bad lines, bad keys, values that would inject lines - refused with a clear error
// of our own, never another exception.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  generatePrivateKey,
  hexToKey,
  keyToHex,
  parseKey,
  publicKeyOf,
  WireguardKeyError,
} from '../../src/dataplane/wireguard/keys.js';
import { encodeSet, parseGet, WireguardUapiError } from '../../src/dataplane/wireguard/uapi.js';
import { Rng } from '../helpers/rng.js';

const K1 = publicKeyOf(generatePrivateKey());
const K2 = publicKeyOf(generatePrivateKey());

describe('WireGuard UAPI codec', () => {
  it('parses a get answer: device fields, then each peer from its public_key line', () => {
    const dev = parseGet(
      [
        `private_key=${keyToHex(K1)}`,
        'listen_port=51820',
        'fwmark=1048576',
        `public_key=${keyToHex(K2)}`,
        'endpoint=[fd99::12]:51821',
        'persistent_keepalive_interval=25',
        'last_handshake_time_sec=1700000000',
        'last_handshake_time_nsec=5',
        'rx_bytes=10',
        'tx_bytes=20',
        'allowed_ip=10.65.2.0/26',
        'allowed_ip=fd68:0:0:2::/122',
        'protocol_version=1',
        'errno=0',
        '',
        '',
      ].join('\n'),
    );
    assert.deepEqual(dev, {
      privateKey: K1,
      listenPort: 51820,
      fwmark: 1048576,
      peers: [
        {
          publicKey: K2,
          endpoint: '[fd99::12]:51821',
          allowedIps: ['10.65.2.0/26', 'fd68:0:0:2::/122'],
          persistentKeepalive: 25,
          lastHandshakeSec: 1700000000,
          rxBytes: 10,
          txBytes: 20,
        },
      ],
    });
  });

  it('writes a set request: keys in hex, replace_peers, a removal, a peer with its allowed IPs replaced', () => {
    assert.equal(
      encodeSet({
        privateKey: K1,
        listenPort: 51820,
        fwmark: 0x100000,
        replacePeers: true,
        peers: [
          { publicKey: K2, remove: true },
          { publicKey: K1, endpoint: '192.0.2.1:51820', allowedIps: ['10.65.1.0/26'], persistentKeepalive: 0 },
        ],
      }),
      [
        'set=1',
        `private_key=${keyToHex(K1)}`,
        'listen_port=51820',
        'fwmark=1048576',
        'replace_peers=true',
        `public_key=${keyToHex(K2)}`,
        'remove=true',
        `public_key=${keyToHex(K1)}`,
        'endpoint=192.0.2.1:51820',
        'persistent_keepalive_interval=0',
        'replace_allowed_ips=true',
        'allowed_ip=10.65.1.0/26',
        '',
        '',
      ].join('\n'),
    );
  });

  it('refuses garbage with its own errors: answers, requests and keys', () => {
    const refused = (f: () => unknown, re: RegExp) =>
      assert.throws(
        f,
        (e: Error) => (e instanceof WireguardUapiError || e instanceof WireguardKeyError) && re.test(e.message),
      );
    refused(() => parseGet(''), /no errno/);
    refused(() => parseGet('listen_port=1\n'), /no errno/);
    refused(() => parseGet('errno=2\n\n'), /errno=2/);
    refused(() => parseGet('listen_port\nerrno=0\n\n'), /not a key=value line/);
    refused(() => parseGet('listen_port=x\nerrno=0\n\n'), /not a number/);
    refused(() => parseGet('public_key=zz\nerrno=0\n\n'), /not a hex WireGuard key/);
    refused(() => encodeSet({ peers: [{ publicKey: K1, endpoint: '1.2.3.4:1\nremove=true' }] }), /newline/);
    refused(() => encodeSet({ peers: [{ publicKey: K1, allowedIps: ['10.0.0.0/8\nx=y'] }] }), /newline/);
    refused(() => encodeSet({ listenPort: 70000 }), /out of range/);
    refused(() => encodeSet({ fwmark: -1 }), /out of range/);
    refused(() => encodeSet({ peers: [{ publicKey: 'short' }] }), /not a WireGuard key/);
    refused(() => parseKey(`${K1.slice(0, 42)}!=`), /not a WireGuard key/);
    refused(() => publicKeyOf(''), /not a WireGuard key/);
    assert.equal(hexToKey(keyToHex(K2)), K2);
  });

  it('random garbage in a get answer is only ever our error (2,000 answers)', () => {
    const rng = new Rng(54);
    const rand = () => rng.next();
    const alphabet = 'abcdefghijklmnopqrstuvwxyz_=0123456789\n:/[].';
    for (let n = 0; n < 2000; n++) {
      let text = '';
      const len = Math.floor(rand() * 200);
      for (let i = 0; i < len; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
      if (rand() < 0.5) text += '\nerrno=0\n\n';
      try {
        parseGet(text);
      } catch (e) {
        assert.ok(e instanceof WireguardUapiError || e instanceof WireguardKeyError, `${JSON.stringify(text)}: ${e}`);
      }
    }
  });
});
