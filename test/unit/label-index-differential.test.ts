// Randomized differential test: thousands of random selectors and label sets, driven
// through the native LabelIndex (and Selector.evaluate) and compared with the brute-force
// evaluator in test/helpers/selector-model.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { LabelIndex, parseSelector, type Selector } from 'palisade';

import { MatchSet } from '../helpers/match-set.js';
import { Rng } from '../helpers/rng.js';
import { type Ast, evaluate, type LabelMap, randomAst, randomLabels, render } from '../helpers/selector-model.js';

describe('differential: selector evaluation', () => {
  it('agrees with the brute-force evaluator on 5,000 selectors x 20 label sets', () => {
    const rng = new Rng(42);
    const labelSets = Array.from({ length: 20 }, () => randomLabels(rng, 5));
    let checked = 0;
    for (let i = 0; i < 5000; i++) {
      const ast = randomAst(rng);
      const text = render(rng, ast);
      const sel = parseSelector(text);
      const again = parseSelector(sel.canonical);
      // Not always equal after one round, as in Calico: !(!(x)) prints as "!!x", which
      // parses back to x. One more round must be a fixpoint.
      assert.equal(parseSelector(again.canonical).canonical, again.canonical, `canonical form of ${text} settles`);
      for (const l of labelSets) {
        const want = evaluate(ast, l);
        assert.equal(sel.evaluate(l), want, `${text} on ${JSON.stringify(l)}`);
        assert.equal(again.evaluate(l), want, `${sel.canonical} on ${JSON.stringify(l)}`);
        checked++;
      }
    }
    assert.equal(checked, 100_000);
  });
});

interface Model {
  items: Map<number, { labels: LabelMap; parents: number[] }>;
  parents: Map<number, LabelMap>;
  sels: Map<number, Ast>;
}

function effective(m: Model, item: number): LabelMap {
  const it = m.items.get(item)!;
  const out: LabelMap = { ...it.labels };
  for (const p of it.parents) {
    for (const [k, v] of Object.entries(m.parents.get(p) ?? {})) if (!Object.hasOwn(out, k)) out[k] = v;
  }
  return out;
}

function expected(m: Model): string[] {
  const out: string[] = [];
  for (const id of m.items.keys()) {
    const l = effective(m, id);
    for (const [s, ast] of m.sels) if (evaluate(ast, l)) out.push(`${s}/${id}`);
  }
  return out.sort();
}

// `started`: part of a step's batch is applied on the index's own thread (startFlush)
// while the rest is queued, as the member calculator does with a snapshot.
function run(seed: number, steps: number, batch: number, padKeys = 0, started = false): void {
  const rng = new Rng(seed);
  const idx = new LabelIndex();
  const set = new MatchSet();
  const m: Model = { items: new Map(), parents: new Map(), sels: new Map() };
  if (padKeys) {
    // An item holding many unrelated keys pushes the real keys' string IDs past 64, so
    // the index's 64-bit key masks collide, as they do in a real cluster.
    const pad: LabelMap = {};
    for (let i = 0; i < padKeys; i++) pad[`pad-${i}`] = `v${i}`;
    m.items.set(999, { labels: pad, parents: [] });
    idx.upsertItem(999, pad);
  }
  const parsed = new Map<string, Selector>();
  for (let step = 0; step < steps; step++) {
    for (let b = 0; b < batch; b++) {
      const r = rng.int(20);
      if (r < 7) {
        const id = rng.int(60);
        const labels = randomLabels(rng);
        const parents = Array.from({ length: rng.int(3) }, () => rng.int(6));
        m.items.set(id, { labels, parents: [...new Set(parents)] });
        idx.upsertItem(id, labels, parents);
      } else if (r < 9) {
        const id = rng.int(60);
        m.items.delete(id);
        idx.deleteItem(id);
      } else if (r < 11) {
        const id = rng.int(6);
        const labels = randomLabels(rng);
        m.parents.set(id, labels);
        idx.upsertParent(id, labels);
      } else if (r < 12) {
        const id = rng.int(6);
        m.parents.delete(id);
        idx.deleteParent(id);
      } else if (r < 18) {
        const id = rng.int(40);
        const ast = randomAst(rng);
        const text = render(rng, ast);
        let s = parsed.get(text);
        if (!s) parsed.set(text, (s = parseSelector(text)));
        m.sels.set(id, ast);
        idx.upsertSelector(id, s);
      } else {
        const id = rng.int(40);
        m.sels.delete(id);
        idx.deleteSelector(id);
      }
      if (started && rng.int(8) === 0) {
        const earlier = idx.started ? idx.finishFlush() : undefined;
        idx.startFlush();
        if (earlier) set.apply(earlier);
      }
    }
    set.apply(idx.flush());
    const want = expected(m);
    assert.deepEqual(set.sorted(), want, `seed ${seed} step ${step}`);
    assert.equal(idx.stats().matches, want.length);
  }
}

describe('differential: label index', () => {
  it('one op per flush: 3,000 steps', () => run(1, 3000, 1));
  it('batches of 25 ops per flush: 400 steps', () => run(2, 400, 25));
  it('batches of 200 ops per flush: 60 steps', () => run(3, 60, 200));
  it('key IDs past 64 (colliding key masks): 2,000 steps', () => run(4, 2000, 1, 200));
  it('batches of 25 ops, parts applied on the native thread: 400 steps', () => run(5, 400, 25, 0, true));
  it('batches of 200 ops, parts applied on the native thread: 60 steps', () => run(6, 60, 200, 0, true));
});

describe('differential: selectors added together to a full index', () => {
  // Many new selectors in one flush are matched in one pass over the items (the
  // snapshot's order: endpoints first, then their IP-set selectors); a few walk their
  // candidates one by one. Both must give the brute-force answer.
  for (const [label, count] of [
    ['300 selectors in one flush (one pass)', 300],
    ['one selector (candidate walk)', 1],
  ] as const) {
    it(label, () => {
      const rng = new Rng(77 + count);
      const idx = new LabelIndex();
      const set = new MatchSet();
      const m: Model = { items: new Map(), parents: new Map(), sels: new Map() };
      for (let p = 0; p < 6; p++) {
        const labels = randomLabels(rng);
        m.parents.set(p, labels);
        idx.upsertParent(p, labels);
      }
      for (let id = 0; id < 400; id++) {
        const labels = randomLabels(rng);
        const parents = [...new Set(Array.from({ length: rng.int(3) }, () => rng.int(6)))];
        m.items.set(id, { labels, parents });
        idx.upsertItem(id, labels, parents);
      }
      // An existing selector: new ones are merged into items' match lists beside it.
      const first = randomAst(rng);
      m.sels.set(count, first);
      idx.upsertSelector(count, parseSelector(render(rng, first)));
      set.apply(idx.flush());
      for (let i = 0; i < count; i++) {
        const ast = randomAst(rng);
        const id = i < count / 2 ? i : count + 1 + i;
        m.sels.set(id, ast);
        idx.upsertSelector(id, parseSelector(render(rng, ast)));
      }
      set.apply(idx.flush());
      const want = expected(m);
      assert.ok(want.length > count, 'the selectors match something');
      assert.deepEqual(set.sorted(), want);
      // And the index goes on from there: an item changes, a new selector is replaced.
      const labels = randomLabels(rng);
      m.items.set(3, { labels, parents: [] });
      idx.upsertItem(3, labels);
      const again = randomAst(rng);
      m.sels.set(0, again);
      idx.upsertSelector(0, parseSelector(render(rng, again)));
      set.apply(idx.flush());
      assert.deepEqual(set.sorted(), expected(m));
    });
  }
});
