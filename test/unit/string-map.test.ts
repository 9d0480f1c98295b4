// The nftables sets' StringMap against a Map model: random sets, replacements and deletes
// that grow, shrink and wrap the index's runs; insertion order while never deleted from
// (an interval set's elements are written in it); clones that share nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { StringMap } from '../../src/collections/string-map.js';
import { Rng } from '../helpers/rng.js';

function check(map: StringMap<number>, model: Map<string, number>, pool: readonly string[]): void {
  assert.equal(map.size, model.size);
  for (const k of pool) {
    assert.equal(map.has(k), model.has(k), `has(${k})`);
    assert.equal(map.get(k), model.get(k), `get(${k})`);
  }
  assert.deepEqual(new Map(map), model);
  assert.deepEqual(new Map(map.entries()), model);
  assert.deepEqual(
    [...map.keys()],
    [...map].map(([k]) => k),
  );
  assert.deepEqual(
    [...map.values()],
    [...map].map(([, v]) => v),
  );
}

describe('StringMap', () => {
  for (const seed of [1, 2, 3]) {
    it(`random sets and deletes keep exactly the model's entries (seed ${seed})`, () => {
      const rng = new Rng(seed);
      // Keys as set elements have them: hex keys with flags, differing in their last characters.
      const pool = Array.from({ length: 700 }, (_, n) => `0a00${(n & 0xffff).toString(16).padStart(4, '0')}/${n % 3}`);
      const map = new StringMap<number>();
      const model = new Map<string, number>();
      for (let step = 0; step < 30_000; step++) {
        const k = pool[rng.int(pool.length)] as string;
        const deleting = Math.floor(step / 3000) % 2 === 1 ? 0.75 : 0.3;
        if (rng.next() < deleting) assert.equal(map.delete(k), model.delete(k), `delete(${k})`);
        else {
          assert.equal(map.set(k, step), map);
          model.set(k, step);
        }
        if (step % 500 === 0) check(map, model, pool);
      }
      check(map, model, pool);
    });
  }

  it('keeps insertion order until deleted from; a delete moves the last entry into its place', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `k${i}`);
    const map = new StringMap(keys.map((k, i) => [k, i] as const));
    assert.deepEqual([...map.keys()], keys);
    // A replaced value keeps its place.
    map.set('k10', -1);
    assert.equal([...map.keys()].indexOf('k10'), 10);
    map.delete('k1');
    assert.deepEqual([...map.keys()].slice(0, 3), ['k0', 'k4999', 'k2']);
    map.delete('k4998');
    assert.equal(map.size, 4998);
    assert.deepEqual([...map.keys()].slice(-2), ['k4996', 'k4997']);
  });

  it('clones share nothing, and clear empties', () => {
    const a = new StringMap<number>([
      ['x', 1],
      ['y', 2],
    ]);
    const b = a.clone();
    b.set('z', 3);
    b.delete('x');
    a.set('y', 20);
    assert.deepEqual(
      [...a],
      [
        ['x', 1],
        ['y', 20],
      ],
    );
    // 'z', the last, took deleted 'x''s place.
    assert.deepEqual(
      [...b],
      [
        ['z', 3],
        ['y', 2],
      ],
    );
    // A big one, cloned and then grown: the clone's index must have room of its own.
    const big = new StringMap(Array.from({ length: 20_000 }, (_, i) => [`e${i}`, i] as const));
    const copy = big.clone();
    for (let i = 20_000; i < 40_000; i++) copy.set(`e${i}`, i);
    assert.equal(big.size, 20_000);
    assert.equal(copy.get('e39999'), 39_999);
    assert.equal(big.get('e39999'), undefined);
    for (let i = 0; i < 20_000; i++) assert.equal(big.get(`e${i}`), i);
    copy.clear();
    assert.equal(copy.size, 0);
    assert.deepEqual([...copy], []);
    copy.set('again', 1);
    assert.deepEqual([...copy], [['again', 1]]);
  });

  it('churn at a steady size and emptying give the room back', () => {
    const map = new StringMap<number>();
    for (let i = 0; i < 100_000; i++) map.set(`m${i}`, i);
    const slots = map.slotCount;
    for (let i = 0; i < 300_000; i++) {
      assert.ok(map.delete(`m${i}`));
      map.set(`m${i + 100_000}`, i);
    }
    assert.equal(map.size, 100_000);
    assert.equal(map.slotCount, slots);
    for (let i = 300_000; i < 400_000; i++) assert.ok(map.delete(`m${i}`));
    assert.equal(map.size, 0);
    assert.equal(map.get('m399999'), undefined);
    assert.equal(map.slotCount, 8);
  });
});
