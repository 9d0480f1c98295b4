// Snappy's framing format against golang/snappy (the package Typha uses), both ways, and
// hostile framed input: clean GobErrors, never a crash.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

import { GobError } from '../../src/typha/gob/wire.js';
import { crc32c, frameStream, maskedCrc, SnappyFrameDecoder, STREAM_IDENTIFIER } from '../../src/typha/snappy.js';
import { goStandInBinary } from '../helpers/typha-standin.js';

const haveGo = spawnSync('go', ['version']).status === 0;
const sample = () =>
  Buffer.from(
    Array.from({ length: 50_000 }, (_, i) => `{"key":"/calico/v1/host/node${i % 97}/config/P${i}","v":${i}}\n`).join(
      '',
    ),
  );

describe('snappy framing', () => {
  it("CRC-32C and its mask (the format's check values)", () => {
    assert.equal(crc32c(Buffer.from('123456789')).toString(16), 'e3069283');
    // Eight bytes per step, the rest one by one: every length and offset agrees with the plain
    // bitwise definition.
    const bitwise = (d: Uint8Array) => {
      let c = -1;
      for (const b of d) {
        c ^= b;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      }
      return (c ^ -1) >>> 0;
    };
    const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 131 + 7) & 0xff));
    for (let at = 0; at < 9; at++)
      for (let len = 0; len < 70; len++)
        assert.equal(crc32c(data.subarray(at, at + len)), bitwise(data.subarray(at, at + len)));
    assert.equal(crc32c(data), bitwise(data));
    // Summed natively: anything but bytes is a NativeError, never a crash.
    for (const bad of ['123', 123, null, [1, 2], new Uint16Array(4)])
      assert.throws(() => crc32c(bad as never), { code: 'EINVAL' });
    assert.equal(maskedCrc(Buffer.alloc(0)), 0xa282ead8);
  });

  it('golang/snappy reads our stream and we read its, in any chunking', async (t) => {
    if (!haveGo) {
      assert.ok(!process.env.CI, 'go is required on CI');
      t.skip('go is not installed');
      return;
    }
    const bin = await goStandInBinary();
    const data = sample();
    const ours = frameStream(data);
    assert.ok(ours.length < data.length / 3, `compressed: ${ours.length} of ${data.length}`);
    assert.ok(execFileSync(bin, ['snappy-unframe'], { input: ours, maxBuffer: 1 << 28 }).equals(data));
    const theirs = execFileSync(bin, ['snappy-frame'], { input: data, maxBuffer: 1 << 28 });
    for (const step of [1, 3, 4096, theirs.length]) {
      const dec = new SnappyFrameDecoder();
      const parts: Buffer[] = [];
      for (let i = 0; i < theirs.length; i += step) parts.push(dec.push(theirs.subarray(i, i + step)));
      assert.ok(Buffer.concat(parts).equals(data), `in ${step}-byte pieces`);
      assert.equal(dec.buffered, 0);
    }
  });

  it('refuses what is not a sound stream', () => {
    const good = frameStream(sample());
    const cases: Array<[Buffer, RegExp]> = [
      [good.subarray(STREAM_IDENTIFIER.length), /before the stream identifier/],
      [Buffer.concat([Buffer.from([0xff, 6, 0, 0]), Buffer.from('sNaPpZ')]), /bad stream identifier/],
      [Buffer.concat([STREAM_IDENTIFIER, Buffer.from([0x02, 1, 0, 0, 0])]), /reserved chunk type/],
      [Buffer.concat([STREAM_IDENTIFIER, Buffer.from([0x00, 0xff, 0xff, 0xff])]), /a chunk of/],
      [Buffer.concat([STREAM_IDENTIFIER, Buffer.from([0x01, 2, 0, 0, 0, 0])]), /without its checksum/],
      [
        (() => {
          const b = Buffer.from(good);
          b[STREAM_IDENTIFIER.length + 5] = (b[STREAM_IDENTIFIER.length + 5] as number) ^ 1;
          return b;
        })(),
        /checksum mismatch/,
      ],
      [
        Buffer.concat([STREAM_IDENTIFIER, Buffer.from([0x00, 9, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f])]),
        /corrupt block|a block of/,
      ],
    ];
    for (const [bytes, re] of cases)
      assert.throws(
        () => new SnappyFrameDecoder().push(bytes),
        (e: Error) => e instanceof GobError && re.test(e.message),
        re.source,
      );
    // Skippable chunks are skipped.
    const padded = Buffer.concat([
      STREAM_IDENTIFIER,
      Buffer.from([0xfe, 2, 0, 0, 0, 0]),
      good.subarray(STREAM_IDENTIFIER.length),
    ]);
    assert.ok(new SnappyFrameDecoder().push(padded).equals(sample()));
  });
});
