// The IdAllocator's open-addressing table against a Map model: random interleavings of
// allocations and releases, so that runs wrap around the table, slots are emptied in the
// middle of runs, and the table grows with freed IDs in use.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { IdAllocator } from '../../src/calc/id-allocator.js';
import { Rng } from '../helpers/rng.js';

function check(ids: IdAllocator, model: Map<string, number>, pool: string[]): void {
  assert.equal(ids.size, model.size);
  for (const k of pool) assert.equal(ids.get(k), model.get(k), `get(${k})`);
  assert.deepEqual(new Map(ids.entries()), model);
  for (const [k, id] of model) assert.equal(ids.key(id), k);
}

describe('IdAllocator', () => {
  for (const seed of [1, 2, 3]) {
    it(`random ids and releases keep every live key's ID (seed ${seed})`, () => {
      const rng = new Rng(seed);
      // Keys that differ in their last characters, as endpoint keys do, and some short ones.
      const pool = Array.from({ length: 600 }, (_, n) =>
        n % 5 ? `wep:node${n % 7}/k8s/namespace-${n % 3}/wep-${n}/eth0` : `k${n}`,
      );
      const ids = new IdAllocator();
      const model = new Map<string, number>();
      for (let step = 0; step < 20_000; step++) {
        const key = pool[rng.int(pool.length)] as string;
        // Phases that fill and drain, so the table grows and then empties runs.
        const releasing = Math.floor(step / 2500) % 2 === 1 ? 0.7 : 0.3;
        if (rng.next() < releasing) {
          ids.release(key);
          model.delete(key);
        } else {
          const id = ids.id(key);
          const had = model.get(key);
          if (had !== undefined) assert.equal(id, had, `id(${key}) changed`);
          else {
            assert.ok(![...model.values()].includes(id), `id ${id} given twice`);
            model.set(key, id);
          }
        }
        if (step % 500 === 0) check(ids, model, pool);
      }
      check(ids, model, pool);
    });
  }

  it('reuses freed IDs, so IDs stay dense', () => {
    const ids = new IdAllocator();
    for (let n = 0; n < 100; n++) assert.equal(ids.id(`key-${n}`), n);
    for (let n = 0; n < 100; n += 2) ids.release(`key-${n}`);
    const reused = new Set(Array.from({ length: 50 }, (_, n) => ids.id(`new-${n}`)));
    assert.deepEqual(
      [...reused].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, n) => n * 2),
    );
    assert.equal(ids.size, 100);
    assert.throws(() => ids.key(1000), /no key for id 1000/);
    ids.release('absent');
    assert.equal(ids.get('absent'), undefined);
  });
});
