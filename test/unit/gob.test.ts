// The gob codec (src/typha/gob) against Go's own encoding/gob:
// - upstream's canned Envelope vector (typha/pkg/syncproto/sync_proto_test.go) decodes, in
//   one piece and byte by byte (Go splits that value across messages);
// - the golden stream Go wrote (test/fixtures/typha-gob, every Typha message type: uint64
//   beyond 2^53, time.Time, durations, byte slices, interface-held revisions, nil) decodes
//   to the values the Go program put in, and every prefix of it is a prefix of the values;
// - what our encoder writes, Go decodes to the same values (when `go` is installed; on
//   CI it must be), and our decoder too;
// - hostile streams are GobErrors, never other exceptions or unbounded buffering; type
//   definitions have a budget (issue 51 D1: a 1 MiB struct of 1.04 M empty fields).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { GobDecoder } from '../../src/typha/gob/decoder.js';
import { GobEncoder, type Schema } from '../../src/typha/gob/encoder.js';
import { decodeTime, encodeTime } from '../../src/typha/gob/time.js';
import { frame, GobError, Writer } from '../../src/typha/gob/wire.js';
import { ENVELOPE, SCHEMAS } from '../../src/typha/syncproto.js';
import { structBomb, smallTypes } from '../helpers/gob-bomb.js';
import { Rng } from '../helpers/rng.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const PKG = 'github.com/projectcalico/typha/pkg/syncproto.';
const CANNED =
  'Iv+BAwEBCEVudmVsb3BlAf+CAAEBAQdNZXNzYWdlARAAAAD/jP+CATtnaXRodWIuY29tL3Byb2plY3RjYWxpY28vdHlwaGEvcGtnL3N5bmNwcm90by5Nc2dDbGllbnRIZWxsb/+DAwEBDk1zZ0NsaWVudEhlbGxvAf+EAAEEAQhIb3N0bmFtZQEMAAEESW5mbwEMAAEHVmVyc2lvbgEMAAEKU3luY2VyVHlwZQEMAAAAKv+EJgEIaG9zdG5hbWUBBGluZm8BB3ZlcnNpb24BCnN5bmNlcnR5cGUAAA==';

const time = (unix: number, nanos: number, offset?: number) =>
  encodeTime(offset === undefined ? { unix, nanos } : { unix, nanos, offset });
const PING = time(1795446245, 123456789);
const PONG = time(1795446245 - 3600, 987654321, 3600);

// What main.go's golden() holds, as our decoder gives it back.
const GOLDEN: unknown[] = [
  {
    Message: {
      name: `${PKG}MsgClientHello`,
      value: {
        Hostname: 'node1',
        Info: 'palisade golden',
        Version: 'v3.30.0',
        SyncerType: 'felix',
        SupportsDecoderRestart: true,
        SupportedCompressionAlgorithms: ['snappy'],
        SupportsModernPolicyKeys: true,
        ClientConnID: 18446744073709551615n,
      },
    },
  },
  {
    Message: {
      name: `${PKG}MsgServerHello`,
      value: { Version: 'v3.30.0', SyncerType: 'felix', SupportsNodeResourceUpdates: true, ServerConnID: 42 },
    },
  },
  { Message: { name: `${PKG}MsgSyncStatus`, value: { SyncStatus: 1 } } },
  {
    Message: {
      name: `${PKG}MsgKVs`,
      value: {
        KVs: [
          {
            Key: '/calico/v1/config/LogSeverityScreen',
            Value: Buffer.from('"Info"'),
            Revision: { name: 'string', value: '12' },
            UpdateType: 1,
          },
          {
            Key: '/calico/v1/host/node1/workload/k8s/prod%2fweb/endpoint/eth0',
            Value: Buffer.from('{"state":"active","name":"cali12345678901"}'),
            Revision: { name: 'string', value: '13' },
            V3ResourceVersion: '7',
            TTL: 90_000_000_000,
            UpdateType: 2,
          },
          { Key: '/calico/v1/policy/TierInfo/default', Revision: { name: 'string', value: '14' }, UpdateType: 3 },
        ],
      },
    },
  },
  { Message: { name: `${PKG}MsgSyncStatus`, value: { SyncStatus: 2 } } },
  { Message: { name: `${PKG}MsgPing`, value: { Timestamp: PING } } },
  { Message: { name: `${PKG}MsgPong`, value: { PingTimestamp: PING, PongTimestamp: PONG } } },
  { Message: { name: `${PKG}MsgDecoderRestart`, value: { Message: 'restart', CompressionAlgorithm: 'snappy' } } },
  { Message: { name: `${PKG}MsgACK`, value: {} } },
  {},
];

const REGISTRY: Array<[string, Schema]> = Object.entries(SCHEMAS).map(([type, schema]) => [`${PKG}Msg${type}`, schema]);

const golden = () => readFileSync(`${root}/test/fixtures/typha-gob/golden.bin`);
const haveGo = spawnSync('go', ['version']).status === 0;

describe('gob codec', () => {
  it("decodes upstream's canned Envelope, whole and byte by byte", () => {
    const want = [
      {
        Message: {
          name: `${PKG}MsgClientHello`,
          value: { Hostname: 'hostname', Info: 'info', Version: 'version', SyncerType: 'syncertype' },
        },
      },
    ];
    const bytes = Buffer.from(CANNED, 'base64');
    assert.deepEqual(new GobDecoder().push(bytes), want);
    const d = new GobDecoder();
    const got: unknown[] = [];
    for (const b of bytes) got.push(...d.push(Buffer.from([b])));
    assert.deepEqual(got, want);
  });

  it('decodes the golden stream Go wrote: every message type, in any chunking', () => {
    const bytes = golden();
    assert.deepEqual(new GobDecoder().push(bytes), GOLDEN);
    const rng = new Rng(3);
    for (let round = 0; round < 20; round++) {
      const d = new GobDecoder();
      const got: unknown[] = [];
      for (let at = 0; at < bytes.length; ) {
        const n = 1 + rng.int(64);
        got.push(...d.push(bytes.subarray(at, at + n)));
        at += n;
        assert.deepEqual(got, GOLDEN.slice(0, got.length), 'a prefix of the stream gives a prefix of the values');
      }
      assert.deepEqual(got, GOLDEN);
    }
  });

  it('writes integers of every width as the BigInt path does (numbers below 2^32 take a faster one)', () => {
    const bytes = (f: (w: Writer) => void) => {
      const w = new Writer();
      f(w);
      return w.take().toString('hex');
    };
    for (const v of [
      0,
      1,
      127,
      128,
      255,
      256,
      65_535,
      65_536,
      2 ** 24 - 1,
      2 ** 24,
      2 ** 31 - 1,
      2 ** 31,
      2 ** 32 - 1,
      2 ** 32,
    ])
      assert.equal(
        bytes((w) => w.uint(v)),
        bytes((w) => w.uint(BigInt(v))),
        `uint ${v}`,
      );
    for (const v of [0, 1, -1, 63, -64, 64, -65, 2 ** 30, -(2 ** 30), 2 ** 31 - 1, -(2 ** 31) + 1, -(2 ** 31), 2 ** 31])
      assert.equal(
        bytes((w) => w.int(v)),
        bytes((w) => w.int(BigInt(v))),
        `int ${v}`,
      );
    assert.throws(() => new Writer().uint(-1), GobError);
    // Strings written in place: their UTF-8 length, then their bytes.
    assert.equal(
      bytes((w) => w.string('héllo')),
      bytes((w) => w.bytes(Buffer.from('héllo'))),
    );
  });

  it('reads and writes time.Time as Go marshals it', () => {
    assert.equal(PING.toString('hex'), '010000000ee2964ce5075bcd15ffff');
    assert.deepEqual(decodeTime(PING), { unix: 1795446245, nanos: 123456789 });
    assert.deepEqual(decodeTime(PONG), { unix: 1795442645, nanos: 987654321, offset: 3600 });
    assert.throws(() => decodeTime(Buffer.from('0300', 'hex')), GobError);
  });

  it('encodes what our decoder reads back, and what Go decodes to the same values', (t) => {
    const enc = new GobEncoder(REGISTRY);
    const stream = Buffer.concat(GOLDEN.map((v) => enc.encode(v, ENVELOPE)));
    assert.deepEqual(new GobDecoder().push(stream), GOLDEN);
    if (!haveGo) {
      assert.ok(!process.env.CI, 'go is required on CI (scripts/setup.sh --with-test-tools installs golang-go)');
      t.skip("go is not installed: Go's decoding of our stream is not checked");
      return;
    }
    const build = spawnSync(
      process.execPath,
      [
        '-e',
        `import(${JSON.stringify(`${root}/scripts/lib/gob-fixture.mjs`)}).then((m) => process.stdout.write(m.buildGobFixture(${JSON.stringify(`${root}/`)})))`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(build.status, 0, build.stderr);
    const r = spawnSync(build.stdout, ['decode'], { input: stream, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; value: Record<string, unknown> | null });
    assert.equal(lines.length, GOLDEN.length);
    assert.deepEqual(
      lines.map((l) => l.type),
      ['ClientHello', 'ServerHello', 'SyncStatus', 'KVs', 'SyncStatus', 'Ping', 'Pong', 'DecoderRestart', 'ACK']
        .map((t) => `main.Msg${t}`)
        .concat('<nil>'),
    );
    // The same stream Go itself writes, decoded by Go, prints the same lines.
    const fromGo = spawnSync(build.stdout, ['decode'], { input: golden(), encoding: 'utf8' });
    assert.equal(fromGo.stdout, r.stdout);
  });

  it('refuses hostile streams with a GobError, and never buffers without bound', () => {
    const refuses = (bytes: Buffer, re: RegExp) =>
      assert.throws(
        () => new GobDecoder({ maxMessageBytes: 1 << 16 }).push(bytes),
        (e: unknown) => e instanceof GobError && re.test(e.message),
      );
    refuses(Buffer.from([0xfc, 0x7f, 0xff, 0xff, 0xff]), /a message of \d+ bytes/);
    refuses(frame(Buffer.from([0x02, 0x05, 0x01])), /singleton value without its 0 delta/);
    refuses(frame(Buffer.from([0xff, 0x82, 0x00])), /type id 65 is not defined/);
    refuses(frame(Buffer.from([0x0c, 0x00, 0xfc, 0x7f, 0xff, 0xff, 0xff])), /cannot fit/);
    refuses(frame(Buffer.from([0x04, 0x00, 0x02, 0x09])), /bytes left over after a value/);
    refuses(frame(Buffer.from([0x01, 0x01])), /type id 1 is reserved/);
    refuses(smallTypes(1, -2), /type id 63 is reserved/);
    // Newer Go (1.26 here) numbers a stream's types from 64, Go 1.19 from 65: both are taken.
    const w = new Writer();
    w.int(64);
    w.uint(1);
    w.string('x');
    w.uint(0);
    assert.deepEqual(new GobDecoder().push(Buffer.concat([smallTypes(1, -1), frame(w.take())])), [{ F: 'x' }]);
    refuses(Buffer.from([0x00]), /an empty message/);
    // A slice of slices of ... nested past the limit.
    let s: Schema = { t: 'string' };
    let v: unknown = 'x';
    for (let i = 0; i < 40; i++) {
      s = { t: 'slice', name: `[]${i}`, elem: s };
      v = [v];
    }
    // (Its 40 slice types are more than the budget before a first value allows.)
    assert.throws(
      () => new GobDecoder().push(new GobEncoder().encode(v, s)),
      (e: unknown) => e instanceof GobError && /before the first value/.test(e.message),
    );
    assert.throws(
      () => new GobDecoder({ maxTypesBeforeValue: 64 }).push(new GobEncoder().encode(v, s)),
      (e: unknown) => e instanceof GobError && /nested deeper/.test(e.message),
    );
    // Random corruption of the golden stream: values or GobErrors, nothing else.
    const rng = new Rng(9);
    const bytes = golden();
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(bytes);
      for (let k = 0; k < 1 + rng.int(4); k++) b[rng.int(b.length)] = rng.int(256);
      try {
        new GobDecoder({ maxMessageBytes: 4096 }).push(b);
      } catch (e) {
        assert.ok(e instanceof GobError, `mutation ${i}: ${(e as Error).stack}`);
      }
    }
  });

  it('keeps type definitions to a budget: fields per struct, types and bytes per stream, few before a value', () => {
    const refuses = (dec: GobDecoder, bytes: Buffer, re: RegExp) =>
      assert.throws(
        () => dec.push(bytes),
        (e: unknown) => e instanceof GobError && re.test(e.message),
      );
    // D1's probe: a 1 MiB message of one struct type with ~1.04 M empty fields, refused
    // before a field is kept (the heap does not grow by the ~70 MB they would cost).
    const bomb = structBomb(65, 1 << 20);
    assert.ok(bomb.length > 1 << 20 && bomb.length < (1 << 20) + 8);
    const heap0 = process.memoryUsage().heapUsed;
    refuses(new GobDecoder({ maxMessageBytes: 1 << 20 }), bomb, /a struct type of 10\d{5} fields \(the limit is 64\)/);
    refuses(new GobDecoder({ maxMessageBytes: 16 << 20 }), structBomb(65, 16 << 20), /the limit is 64/);
    assert.ok(process.memoryUsage().heapUsed - heap0 < 32 << 20, 'the refused definitions were kept');
    // Before the first value only what a hello needs; after it, the stream's budget.
    const fresh = () => new GobDecoder({ maxMessageBytes: 1 << 20 });
    assert.deepEqual(fresh().push(smallTypes(8)), []);
    refuses(fresh(), smallTypes(9), /more than 8 type definitions before the first value/);
    const golden0 = golden();
    const afterValue = () => {
      const d = fresh();
      assert.equal(d.push(golden0).length, GOLDEN.length);
      return d;
    };
    assert.deepEqual(afterValue().push(smallTypes(40, 100)), []);
    refuses(afterValue(), smallTypes(64, 100), /more than 64 type definitions in one stream/);
    // Definitions of long names: the bytes run out before the count does.
    refuses(afterValue(), smallTypes(40, 100, 'F'.repeat(1000)), /type definitions of more than 32768 bytes/);
    // A definition repeated (Go never does; a retry after a partial value reads it again) costs nothing more.
    const d = afterValue();
    const one = smallTypes(1, 100);
    assert.deepEqual(d.push(one), []);
    for (let i = 0; i < 100; i++) assert.deepEqual(d.push(one), []);
    // The limits are the caller's to set.
    assert.deepEqual(new GobDecoder({ maxStructFields: 1 << 20 }).push(structBomb(65, 4096)), []);
  });
});
