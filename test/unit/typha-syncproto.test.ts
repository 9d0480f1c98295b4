// Typha's messages over the gob codec: the golden stream Go wrote becomes typed messages
// (uint64 connection ids, SyncStatus names, revisions, TTLs, times), typed messages encode
// and decode back unchanged, and envelopes that are not Typha messages are refused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { GobDecoder } from '../../src/typha/gob/decoder.js';
import { GobError } from '../../src/typha/gob/wire.js';
import { encodeMessage, toMessage, type TyphaMessage, typhaEncoder } from '../../src/typha/syncproto.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('Typha messages', () => {
  it('reads the golden stream as typed messages', () => {
    const envelopes = new GobDecoder().push(readFileSync(`${root}/test/fixtures/typha-gob/golden.bin`));
    const msgs = envelopes.slice(0, -1).map(toMessage);
    assert.deepEqual(
      msgs.map((m) => m.type),
      ['ClientHello', 'ServerHello', 'SyncStatus', 'KVs', 'SyncStatus', 'Ping', 'Pong', 'DecoderRestart', 'ACK'],
    );
    const hello = msgs[0] as Extract<TyphaMessage, { type: 'ClientHello' }>;
    assert.equal(hello.clientConnId, 18446744073709551615n);
    assert.deepEqual(hello.supportedCompressionAlgorithms, ['snappy']);
    assert.equal((msgs[2] as Extract<TyphaMessage, { type: 'SyncStatus' }>).status, 'resync-in-progress');
    const kvs = (msgs[3] as Extract<TyphaMessage, { type: 'KVs' }>).kvs;
    assert.deepEqual(
      kvs.map((u) => [u.key, u.value.toString(), u.revision, u.v3ResourceVersion, u.ttlNanos, u.updateType]),
      [
        ['/calico/v1/config/LogSeverityScreen', '"Info"', '12', '', 0, 1],
        [
          '/calico/v1/host/node1/workload/k8s/prod%2fweb/endpoint/eth0',
          '{"state":"active","name":"cali12345678901"}',
          '13',
          '7',
          90_000_000_000,
          2,
        ],
        ['/calico/v1/policy/TierInfo/default', '', '14', '', 0, 3],
      ],
    );
    assert.deepEqual((msgs[5] as Extract<TyphaMessage, { type: 'Ping' }>).timestamp, {
      unix: 1795446245,
      nanos: 123456789,
    });
    assert.throws(() => toMessage(envelopes.at(-1)), /without a message/);
  });

  it('encodes typed messages that decode back unchanged', () => {
    const enc = typhaEncoder();
    const msgs: TyphaMessage[] = [
      {
        type: 'ClientHello',
        hostname: 'node1',
        info: 'palisade',
        version: 'v3.30.0',
        syncerType: 'felix',
        supportsDecoderRestart: false,
        supportedCompressionAlgorithms: [],
        supportsModernPolicyKeys: true,
        clientConnId: 7n,
      },
      { type: 'SyncStatus', status: 'in-sync' },
      {
        type: 'Pong',
        pingTimestamp: { unix: 1795446245, nanos: 5 },
        pongTimestamp: { unix: 1795446246, nanos: 6, offset: 3600 },
      },
      {
        type: 'KVs',
        kvs: [
          {
            key: '/calico/v1/config/X',
            value: Buffer.from('"1"'),
            revision: '3',
            v3ResourceVersion: '',
            ttlNanos: 0,
            updateType: 1,
          },
        ],
      },
      { type: 'ACK' },
    ];
    const stream = Buffer.concat(msgs.map((m) => encodeMessage(enc, m)));
    assert.deepEqual(new GobDecoder().push(stream).map(toMessage), msgs);
  });

  it('refuses envelopes that are not Typha messages', () => {
    const bad = [
      { Message: { name: 'main.Other', value: {} } },
      { Message: { name: 'github.com/projectcalico/typha/pkg/syncproto.MsgNope', value: {} } },
      { Message: { name: 'github.com/projectcalico/typha/pkg/syncproto.MsgSyncStatus', value: { SyncStatus: 9 } } },
      { Message: { name: 'github.com/projectcalico/typha/pkg/syncproto.MsgKVs', value: { KVs: [{ Key: 1 }] } } },
      {
        Message: {
          name: 'github.com/projectcalico/typha/pkg/syncproto.MsgKVs',
          value: { KVs: [{ Key: 'k', Revision: { name: 'int64', value: 3 } }] },
        },
      },
      { Message: { name: 'github.com/projectcalico/typha/pkg/syncproto.MsgPing', value: { Timestamp: 'now' } } },
      'not an envelope',
    ];
    for (const b of bad) assert.throws(() => toMessage(b), GobError, JSON.stringify(b));
  });
});
