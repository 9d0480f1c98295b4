// The calc graph's dense-ID arrays (and the benches' sample records) grow by copying.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { withSlot } from '../../src/calc/typed-arrays.js';

test('withSlot returns the array itself while the index fits', () => {
  const a = new Int32Array(4);
  assert.equal(withSlot(a, 3), a);
});

test('withSlot grows to at least twice the length, keeping the values and the type', () => {
  const a = new Float64Array([1.5, 2.5]);
  const b = withSlot(a, 2);
  assert.ok(b instanceof Float64Array);
  assert.equal(b.length, 4);
  assert.deepEqual([...b], [1.5, 2.5, 0, 0]);
});

test('withSlot grows past twice the length when the index is further', () => {
  const b = withSlot(new Uint8Array([7]), 9);
  assert.ok(b instanceof Uint8Array);
  assert.equal(b.length, 10);
  assert.equal(b[0], 7);
});
