// The Typha benches' clients find the end of a compressed snapshot from its frames alone
// (bench/lib/snapshot-end.ts): never before the end marker, whatever the reads' sizes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { SnapshotEnd } from '../../bench/lib/snapshot-end.js';
import { frameStream } from '../../src/typha/snappy.js';

function snapshot(size: number): Buffer {
  const body = Buffer.alloc(size);
  for (let i = 0; i < size; i++) body[i] = (i * 7919) % 251;
  return frameStream(Buffer.concat([body, Buffer.from('...End of compressed snapshot.\x01')]));
}

describe('SnapshotEnd', () => {
  it('ends at the marker only, in reads of any size (one byte, frames split anywhere, all at once)', () => {
    const blob = snapshot(300_000);
    for (const step of [1, 7, 4096, 65_543, blob.length]) {
      const end = new SnapshotEnd();
      let ended = -1;
      for (let at = 0; at < blob.length; at += step) {
        const last = at + step >= blob.length;
        const done = end.push(blob.subarray(at, Math.min(blob.length, at + step)));
        if (done) ended = at;
        assert.equal(done, last, `read at ${at} of ${blob.length} (step ${step})`);
      }
      assert.ok(ended >= 0);
    }
  });

  it('does not end on a frame boundary before the marker', () => {
    const whole = snapshot(200_000);
    const head = frameStream(Buffer.alloc(70_000, 3));
    const end = new SnapshotEnd();
    assert.equal(end.push(head), false);
    assert.equal(end.push(whole), true);
  });
});
