// The member calculator's StringSet against a Set model: random interleavings of adds and
// deletes that grow, shrink and wrap the table's runs, and churn at a steady size, which
// must not grow the table (what V8's Set does once, and what `bench churn` measures).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { StringSet } from '../../src/collections/string-set.js';
import { Rng } from '../helpers/rng.js';

function check(set: StringSet, model: Set<string>, pool: readonly string[]): void {
  assert.equal(set.size, model.size);
  for (const m of pool) assert.equal(set.has(m), model.has(m), `has(${m})`);
  const listed = set.toArray();
  assert.equal(listed.length, model.size);
  assert.deepEqual(new Set(listed), model);
  assert.deepEqual([...set].sort(), [...listed].sort());
}

/** An address per number, as an IP set's members. */
const addr = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;

describe('StringSet', () => {
  for (const seed of [1, 2, 3]) {
    it(`random adds and deletes keep exactly the model's members (seed ${seed})`, () => {
      const rng = new Rng(seed);
      // Members as IP sets hold them: addresses that differ in their last characters,
      // address-and-port members, and a few short or non-ASCII strings.
      const pool = Array.from({ length: 700 }, (_, n) =>
        n % 7 === 0
          ? `m${n}é`
          : n % 3
            ? `10.${n % 4}.${(n >> 4) & 255}.${n & 15}/32`
            : `fd00::${n.toString(16)},tcp:${n}`,
      );
      const set = new StringSet();
      const model = new Set<string>();
      for (let step = 0; step < 30_000; step++) {
        const m = pool[rng.int(pool.length)] as string;
        // Phases that fill and drain, so the table grows, shrinks and empties runs.
        const deleting = Math.floor(step / 3000) % 2 === 1 ? 0.75 : 0.3;
        if (rng.next() < deleting) assert.equal(set.delete(m), model.delete(m), `delete(${m})`);
        else {
          assert.equal(set.add(m), !model.has(m), `add(${m})`);
          model.add(m);
        }
        if (step % 500 === 0) check(set, model, pool);
      }
      check(set, model, pool);
    });
  }

  it('churn at a steady size neither grows nor shrinks the table', () => {
    const set = new StringSet();
    const n = 10_000;
    for (let i = 0; i < n; i++) set.add(addr(i));
    const before = set.slotCount;
    // Ten times the set's size in replacements: a member out, a new one in.
    for (let i = 0; i < 10 * n; i++) {
      assert.ok(set.delete(addr(i)));
      assert.ok(set.add(addr(i + n)));
    }
    assert.equal(set.size, n);
    assert.equal(set.slotCount, before);
  });

  it('grows by its members and gives the room back when they go', () => {
    const set = new StringSet();
    assert.equal(set.slotCount, 8);
    for (let i = 0; i < 100_000; i++) set.add(`m${i}`);
    // At most three quarters full.
    assert.equal(set.slotCount, 262_144);
    for (let i = 0; i < 100_000; i++) set.delete(`m${i}`);
    assert.equal(set.size, 0);
    assert.equal(set.slotCount, 8);
    assert.deepEqual(set.toArray(), []);
    assert.equal(set.delete('m1'), false);
  });

  it('reserves room for members to come in one resize, keeping those it has', () => {
    const set = new StringSet(['a', 'b']);
    set.reserve(1000);
    // (2 + 1,000) at most three quarters full.
    assert.equal(set.slotCount, 2048);
    for (let i = 0; i < 1000; i++) set.add(addr(i));
    assert.equal(set.slotCount, 2048);
    assert.equal(set.size, 1002);
    assert.ok(set.has('a') && set.has('b'));
    set.reserve(0);
    assert.equal(set.slotCount, 2048, 'reserving never shrinks');
  });

  it('is built from a list with its table sized once, duplicates counted once', () => {
    const list = Array.from({ length: 1000 }, (_, i) => addr(i % 700));
    const set = new StringSet(list);
    assert.equal(set.size, 700);
    // Sized for the list (1,000 at most three quarters full), not regrown as it fills.
    assert.equal(set.slotCount, 2048);
    assert.deepEqual(new Set(set), new Set(list));
    assert.equal(new StringSet([]).slotCount, 8);
    // An iterator that is its own iterable, done for good once done.
    const it = new StringSet(['a'])[Symbol.iterator]();
    assert.deepEqual([...it], ['a']);
    assert.deepEqual(it.next(), { value: undefined, done: true });
  });

  it('clones share nothing', () => {
    const a = new StringSet(Array.from({ length: 5000 }, (_, i) => addr(i)));
    const b = a.clone();
    for (let i = 0; i < 2500; i++) b.delete(addr(i));
    for (let i = 5000; i < 9000; i++) b.add(addr(i));
    a.add('other');
    assert.equal(a.size, 5001);
    assert.equal(b.size, 6500);
    assert.ok(a.has(addr(0)) && !b.has(addr(0)));
    assert.ok(!a.has(addr(8999)) && b.has(addr(8999)));
    assert.ok(!b.has('other'));
  });
});
