import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { LabelIndex, MAX_ID, NativeError, parseSelector } from 'palisade';

import { describeChanges, MatchSet } from '../helpers/match-set.js';

const sel = (s: string) => parseSelector(s);

describe('LabelIndex: every operator through the index', () => {
  const items: Record<number, Record<string, string>> = {
    1: { app: 'web', tier: 'fe', version: 'v1.2' },
    2: { app: 'db', tier: 'be' },
    3: { app: 'web', tier: 'be', canary: 'true' },
    4: {},
  };
  const cases: Array<[string, number[]]> = [
    ['app == "web"', [1, 3]],
    ['app != "web"', [2, 4]],
    ['app in {"db", "cache"}', [2]],
    ['app not in {"db"}', [1, 3, 4]],
    ['has(canary)', [3]],
    ['!has(canary)', [1, 2, 4]],
    ['version contains ".2"', [1]],
    ['version starts with "v1"', [1]],
    ['app ends with "eb"', [1, 3]],
    ['all()', [1, 2, 3, 4]],
    ['', [1, 2, 3, 4]],
    ['global()', [1, 2, 3, 4]],
    ['app == "web" && tier == "be"', [3]],
    ['app == "db" || has(canary)', [2, 3]],
    ['!(app == "web")', [2, 4]],
    ['app == "web" && app == "db"', []],
    ['app in {}', []],
    ['(app == "web" || app == "db") && !has(canary)', [1, 2]],
  ];
  for (const [text, expected] of cases) {
    for (const order of ['items first', 'selector first'] as const) {
      it(`${JSON.stringify(text)} (${order})`, () => {
        const idx = new LabelIndex();
        const set = new MatchSet();
        const addItems = () => {
          for (const [id, labels] of Object.entries(items)) idx.upsertItem(Number(id), labels);
        };
        if (order === 'items first') {
          addItems();
          set.apply(idx.flush());
          idx.upsertSelector(7, sel(text));
        } else {
          idx.upsertSelector(7, sel(text));
          set.apply(idx.flush());
          addItems();
        }
        set.apply(idx.flush());
        assert.deepEqual(set.sorted(), expected.map((i) => `7/${i}`).sort());
        for (const i of expected) assert.deepEqual([...(idx.matchesOf(i) ?? [])], [7]);
      });
    }
  }
});

describe('LabelIndex: inheritance from parents', () => {
  it('own labels win, then the first parent with the key', () => {
    const idx = new LabelIndex();
    const set = new MatchSet();
    idx.upsertParent(10, { env: 'prod', team: 'a' });
    idx.upsertParent(11, { env: 'dev', team: 'b', zone: 'z1' });
    idx.upsertItem(1, { team: 'own' }, [10, 11]);
    idx.upsertSelector(1, sel('env == "prod"'));
    idx.upsertSelector(2, sel('team == "own"'));
    idx.upsertSelector(3, sel('zone == "z1"'));
    idx.upsertSelector(4, sel('team == "a" || team == "b"'));
    set.apply(idx.flush());
    assert.deepEqual(set.sorted(), ['1/1', '2/1', '3/1']);
  });

  it('follows parent label changes, deletes and re-adds', () => {
    const idx = new LabelIndex();
    const set = new MatchSet();
    idx.upsertSelector(1, sel('env == "prod"'));
    idx.upsertSelector(2, sel('!has(env)'));
    idx.upsertItem(1, {}, [10]);
    idx.upsertItem(2, { env: 'dev' }, [10]);
    set.apply(idx.flush());
    assert.deepEqual(set.sorted(), ['2/1'], 'parent not known yet: no labels from it');

    idx.upsertParent(10, { env: 'prod' });
    assert.deepEqual(describeChanges(idx.flush()), ['+1/1', '-2/1']);

    idx.upsertParent(10, { env: 'prod' });
    assert.equal(idx.flush().length, 0, 'same labels again: no change');

    idx.upsertParent(10, { env: 'staging' });
    assert.deepEqual(describeChanges(idx.flush()), ['-1/1']);

    idx.deleteParent(10);
    assert.deepEqual(describeChanges(idx.flush()), ['+2/1']);

    idx.upsertParent(10, { env: 'prod' });
    assert.deepEqual(describeChanges(idx.flush()), ['+1/1', '-2/1']);
    assert.equal(idx.stats().parents, 1);
  });

  it('re-evaluates when an item changes its parent list or order', () => {
    const idx = new LabelIndex();
    idx.upsertParent(1, { env: 'prod' });
    idx.upsertParent(2, { env: 'dev' });
    idx.upsertSelector(5, sel('env == "dev"'));
    idx.upsertItem(9, {}, [1, 2]);
    assert.equal(idx.flush().length, 0);
    idx.upsertItem(9, {}, [2, 1]);
    assert.deepEqual(describeChanges(idx.flush()), ['+5/9']);
    idx.upsertItem(9, {}, [1]);
    assert.deepEqual(describeChanges(idx.flush()), ['-5/9']);
    idx.upsertItem(9, { env: 'dev' }, [1]);
    assert.deepEqual(describeChanges(idx.flush()), ['+5/9']);
    idx.upsertItem(9, { env: 'dev' }, [1, 1, 2]);
    assert.equal(idx.flush().length, 0, 'duplicate parents do not change inheritance');
  });
});

describe('LabelIndex: deletes', () => {
  it('deleting an item stops all its matches', () => {
    const idx = new LabelIndex();
    idx.upsertSelector(1, sel('has(a)'));
    idx.upsertSelector(2, sel('all()'));
    idx.upsertItem(3, { a: '1' });
    assert.deepEqual(describeChanges(idx.flush()), ['+1/3', '+2/3']);
    idx.deleteItem(3);
    assert.deepEqual(describeChanges(idx.flush()), ['-1/3', '-2/3']);
    idx.deleteItem(3);
    assert.equal(idx.flush().length, 0, 'deleting twice is harmless');
    assert.equal(idx.matchesOf(3), null);
    assert.equal(idx.stats().items, 0);
  });

  it('deleting a selector stops all its matches', () => {
    const idx = new LabelIndex();
    for (let i = 0; i < 5; i++) idx.upsertItem(i, { app: i % 2 ? 'odd' : 'even' });
    idx.upsertSelector(4, sel('app == "even"'));
    assert.deepEqual(describeChanges(idx.flush()), ['+4/0', '+4/2', '+4/4']);
    idx.deleteSelector(4);
    assert.deepEqual(describeChanges(idx.flush()), ['-4/0', '-4/2', '-4/4']);
    idx.deleteSelector(4);
    assert.equal(idx.flush().length, 0);
    assert.equal(idx.stats().selectors, 0);
  });

  it('changing a selector emits only the difference', () => {
    const idx = new LabelIndex();
    for (let i = 0; i < 4; i++) idx.upsertItem(i, { n: String(i) });
    idx.upsertSelector(1, sel('n in {"0", "1", "2"}'));
    idx.flush();
    idx.upsertSelector(1, sel('n in {"1", "2", "3"}'));
    assert.deepEqual(describeChanges(idx.flush()), ['+1/3', '-1/0']);
    idx.upsertSelector(1, sel("n in {'3', '2', '1'}"));
    assert.equal(idx.flush().length, 0, 'same canonical selector: no change');
  });

  it('a deleted then re-added item matches again', () => {
    const idx = new LabelIndex();
    idx.upsertSelector(1, sel('a == "x"'));
    idx.upsertItem(1, { a: 'x' });
    idx.deleteItem(1);
    idx.upsertItem(1, { a: 'x' });
    const set = new MatchSet();
    set.apply(idx.flush());
    assert.deepEqual(set.sorted(), ['1/1'], 'one batch: transitions in order add up');
  });
});

describe('LabelIndex: string lifetime', () => {
  it('frees label strings nothing uses any more and reuses their IDs', () => {
    const idx = new LabelIndex();
    idx.upsertSelector(1, sel('app == "web"'));
    for (let i = 0; i < 100; i++) idx.upsertItem(i, { app: 'web', 'pod-template-hash': `h${i}` });
    idx.flush();
    // app, web, pod-template-hash and 100 hashes
    assert.equal(idx.internedStrings, 103);
    assert.equal(idx.stats().strings, 103);
    // Churn: every pod gets a new hash; the old ones must go.
    for (let round = 1; round <= 5; round++) {
      for (let i = 0; i < 100; i++) idx.upsertItem(i, { app: 'web', 'pod-template-hash': `h${round}-${i}` });
      idx.flush();
      assert.equal(idx.internedStrings, 103, `round ${round}`);
      assert.equal(idx.stats().strings, 103, `round ${round}`);
    }
    for (let i = 0; i < 100; i++) idx.deleteItem(i);
    idx.flush();
    assert.equal(idx.stats().strings, 2, 'the selector keeps "app" and "web"');
    assert.equal(idx.internedStrings, 2, 'their IDs stay valid while they live');
    idx.deleteSelector(1);
    idx.flush();
    assert.equal(idx.stats().strings, 0);
    assert.equal(idx.internedStrings, 0);
  });

  it('a string freed and used again in one batch survives', () => {
    const idx = new LabelIndex();
    idx.upsertSelector(1, sel('a == "x"'));
    idx.deleteSelector(1);
    idx.upsertItem(1, { a: 'x' });
    idx.deleteItem(1);
    idx.upsertItem(2, { a: 'x' });
    idx.upsertSelector(3, sel('a == "x"'));
    assert.deepEqual(describeChanges(idx.flush()), ['+3/2']);
    idx.upsertParent(1, { a: 'x' });
    idx.deleteItem(2);
    idx.flush();
    assert.equal(idx.internedStrings, 2, 'the parent still uses them');
    idx.deleteParent(1);
    idx.deleteSelector(3);
    idx.flush();
    assert.equal(idx.internedStrings, 0);
    assert.equal(idx.stats().strings, 0);
    idx.upsertItem(5, { a: 'x' });
    idx.upsertSelector(6, sel('has(a)'));
    assert.deepEqual(describeChanges(idx.flush()), ['+6/5'], 'reused IDs work');
  });
});

describe('LabelIndex: a batch applied on its own thread (startFlush)', () => {
  it("finishFlush() returns its transitions; flush() returns a started batch's and its own, in order", () => {
    const idx = new LabelIndex();
    for (let i = 0; i < 50_000; i++) idx.upsertItem(i, { mod: String(i % 10) });
    idx.upsertSelector(0, sel('mod == "3"'));
    idx.startFlush();
    assert.ok(idx.started);
    assert.equal(idx.pendingWords, 0, 'the queue was handed over');
    idx.upsertItem(3, { mod: 'x' }); // queued while the batch runs
    const first = idx.finishFlush();
    assert.ok(!idx.started);
    assert.equal(first.length, 5_000);
    assert.deepEqual(describeChanges(idx.flush()), ['-0/3']);
    idx.upsertSelector(1, sel('mod == "4"'));
    idx.startFlush();
    idx.deleteItem(4);
    const both = describeChanges(idx.flush());
    assert.equal(both.length, 5_001);
    assert.equal(both.filter((c) => c.startsWith('+1/')).length, 5_000, "the started batch's first");
    assert.equal(both.at(-1), '-1/4', 'then the later one');
    assert.equal(idx.stats().matches, 4_999 + 4_999);
  });

  it('reads wait for a started batch', () => {
    const idx = new LabelIndex();
    for (let i = 0; i < 20_000; i++) idx.upsertItem(i, { a: 'x' });
    idx.upsertSelector(7, sel('a == "x"'));
    idx.startFlush();
    assert.equal(idx.stats().items, 20_000);
    assert.deepEqual([...(idx.matchesOf(19_999) ?? [])], [7]);
    assert.equal(idx.finishFlush().length, 20_000, 'the transitions wait for whoever takes them');
  });

  it('frees no string the caller may still be queuing: the next flush() does', () => {
    const idx = new LabelIndex();
    idx.upsertItem(1, { a: 'x' });
    idx.flush();
    idx.deleteItem(1); // "a" and "x" lose their last user...
    idx.startFlush();
    idx.upsertItem(2, { a: 'x' }); // ...and are queued again under the same IDs
    idx.upsertSelector(3, sel('a == "x"'));
    assert.deepEqual(describeChanges(idx.flush()), ['+3/2']);
    assert.equal(idx.internedStrings, 2);
    idx.deleteItem(2);
    idx.deleteSelector(3);
    idx.startFlush();
    assert.equal(idx.finishFlush().length, 1);
    assert.equal(idx.internedStrings, 2, 'not freed by a started batch');
    idx.flush();
    assert.equal(idx.internedStrings, 0);
    assert.equal(idx.stats().strings, 0);
  });

  it('a malformed batch is refused at start, with nothing changed and nothing started', async () => {
    const { native } = await import('../../src/native/load.js');
    const raw = new native.LabelIndex();
    const ids = (...v: number[]) => new Uint32Array(v);
    const einval = (re: RegExp) => (e: unknown) =>
      e instanceof NativeError && e.code === 'EINVAL' && re.test(e.message);
    assert.throws(
      () => raw.applyStart(ids(3, 1, 1, 0, 0, 7), 6, ids(0, 1), ['a', 'x'], []),
      einval(/undefined string/),
    );
    assert.throws(() => raw.applyStart(ids(4, 1), 3, ids(), [], []), einval(/ops length/));
    assert.throws(() => (raw.applyStart as (...a: unknown[]) => void)(), einval(/expected/));
    assert.equal(raw.finishApply(), undefined);
    // The strings of the refused batch were not taken: the same definitions work.
    const ops = ids(3, 1, 1, 0, 0, 1);
    raw.applyStart(ops, ops.length, ids(0, 1), ['a', 'x'], []);
    ops.fill(0); // the caller's buffer is its own again at once
    assert.equal(raw.finishApply(), undefined);
    assert.equal(raw.stats().items, 1);
  });
});

describe('LabelIndex: batches and validation', () => {
  it('one flush returns the transitions of every queued call', () => {
    const idx = new LabelIndex();
    for (let i = 0; i < 1000; i++) idx.upsertItem(i, { mod: String(i % 10) });
    idx.upsertSelector(0, sel('mod == "3"'));
    idx.upsertSelector(1, sel('mod in {"3", "4"}'));
    assert.ok(idx.pendingWords > 0);
    const c = idx.flush();
    assert.equal(idx.pendingWords, 0);
    assert.equal(c.length, 300);
    assert.equal(idx.stats().matches, 300);
  });

  it('release() frees a big transition buffer at once and leaves the changes empty', async () => {
    // Counted as external memory (native code reports the buffer to V8 and takes it back
    // in the deleter), which holds whatever the allocator (glibc, or ASan's).
    const external = () => process.memoryUsage().external;
    const idx = new LabelIndex();
    for (let i = 0; i < 100_000; i++) idx.upsertItem(i, { mod: String(i % 10) });
    idx.flush();
    for (let s = 0; s < 20; s++) idx.upsertSelector(s, sel(`mod != "${s % 10}"`));
    const c = idx.flush();
    assert.equal(c.length, 1_800_000);
    const held = external();
    c.release();
    c.release(); // twice is harmless
    assert.equal(c.length, 0);
    // The backing store's deleter runs on the next turn of the event loop, not at a GC.
    await new Promise((r) => setTimeout(r, 20));
    const freedMb = (held - external()) / 2 ** 20;
    assert.ok(freedMb >= 13, `about 14 MB freed, not ${freedMb.toFixed(1)}`);
    // A small (copied) result and the empty one are left alone.
    idx.upsertItem(5, { mod: 'x' });
    const small = idx.flush();
    small.release();
    assert.ok(small.length > 0);
    idx.flush().release();
  });

  it('rejects bad ids and labels in TypeScript before queueing anything', () => {
    const idx = new LabelIndex();
    assert.throws(() => idx.upsertItem(-1, {}), RangeError);
    assert.throws(() => idx.upsertItem(MAX_ID, {}), RangeError);
    assert.throws(() => idx.upsertItem(1.5, {}), RangeError);
    assert.throws(() => idx.upsertItem(1, {}, [Number.NaN]), RangeError);
    assert.throws(() => idx.upsertParent(1, { a: 2 as unknown as string }), TypeError);
    assert.throws(() => idx.upsertItem(1, { a: 'x', b: null as unknown as string }), TypeError);
    assert.equal(idx.pendingWords, 0, 'nothing half-queued');
    assert.equal(idx.flush().length, 0);
  });

  it('native code refuses a malformed batch with EINVAL and changes nothing', async () => {
    const { native } = await import('../../src/native/load.js');
    const raw = new native.LabelIndex();
    const s = new native.NativeSelector('a == "x"');
    const ids = (...v: number[]) => new Uint32Array(v);
    // apply(ops, opsLength, ...) with the whole array as the batch
    const apply = (
      ops: Uint32Array,
      newIds: Uint32Array,
      strs: string[],
      sels: never[] | (typeof s)[],
      out: number[],
    ) => raw.apply(ops, ops.length, newIds, strs, sels as never, out);
    const rel: number[] = [];
    const einval = (re: RegExp) => (e: unknown) =>
      e instanceof NativeError && e.code === 'EINVAL' && re.test(e.message);
    // releaseChanges takes only an ArrayBuffer (what apply returned); anything else is EINVAL.
    for (const junk of [undefined, 7, 'buf', new Uint32Array(4), {}])
      assert.throws(() => raw.releaseChanges(junk as never), einval(/expected an ArrayBuffer/));
    // A good op followed by a truncated one: neither may be applied.
    assert.throws(() => apply(ids(3, 1, 1, 0, 0, 1, 5, 2), ids(0, 1), ['a', 'x'], [s], rel), einval(/truncated/));
    assert.equal(raw.stats().items, 0);
    assert.throws(() => apply(ids(3, 1, 1, 0, 0, 7), ids(0, 1), ['a', 'x'], [], rel), einval(/undefined string/));
    assert.throws(() => apply(ids(5, 1, 0), ids(), [], [{} as never], rel), einval(/not a NativeSelector/));
    assert.throws(() => apply(ids(4, 1 << 24), ids(), [], [], rel), einval(/out of range/));
    assert.throws(
      () => apply(new Int32Array([4, 1]) as unknown as Uint32Array, ids(), [], [], rel),
      einval(/Uint32Array/),
    );
    assert.throws(() => apply(ids(3, 1, 0xffffffff, 0), ids(), [], [], rel), einval(/past the batch/));
    assert.throws(() => apply(ids(), ids(0, 1), ['a', 'a'], [], rel), einval(/defined twice/));
    assert.throws(() => apply(ids(), ids(0), ['a', 'b'], [], rel), einval(/more newStrings/));
    assert.throws(() => raw.apply(ids(4, 1), 3, ids(), [], [], rel), einval(/ops length/));
    // The strings of a refused batch were not taken, so a correct retry works.
    const ok = apply(ids(3, 1, 1, 0, 0, 1, 5, 2, 0), ids(0, 1), ['a', 'x'], [s], rel);
    assert.deepEqual([...new Uint32Array(ok!)], [2, (1 | 0x8000_0000) >>> 0]);
    assert.throws(() => apply(ids(), ids(1), ['y'], [], rel), einval(/already defined/));
    // While the selector still uses "a" and "x", deleting the item releases nothing...
    apply(ids(4, 1), ids(), [], [], rel);
    assert.deepEqual(rel, []);
    assert.equal(raw.stats().strings, 2);
    // ...deleting the selector frees both and hands their IDs back.
    apply(ids(6, 2), ids(), [], [], rel);
    assert.deepEqual(rel.sort(), [0, 1]);
    assert.equal(raw.stats().strings, 0);
  });

  it('stats describe where selectors were filed', () => {
    const idx = new LabelIndex();
    idx.upsertSelector(1, sel('a == "x"'));
    idx.upsertSelector(2, sel('a in {"x", "y"} && b != "z"'));
    idx.upsertSelector(3, sel('has(a)'));
    idx.upsertSelector(4, sel('a != "x"'));
    idx.upsertSelector(5, sel('a == "x" && a == "y"'));
    idx.flush();
    const st = idx.stats();
    assert.equal(st.selectors, 5);
    assert.equal(st.selectorsByValue, 2);
    assert.equal(st.selectorsByKey, 1);
    assert.equal(st.selectorsUnindexed, 1);
    assert.equal(st.selectorsNever, 1);
  });
});
