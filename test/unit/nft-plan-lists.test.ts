// The plan's lists built in steps (plan-lists.ts): the same lists as building them at once
// (a Set of both states' names, the wanted chains stably sorted by table, the base chains
// last), with a turn for the loop along the way on a node of 17,500 chains.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { DesiredChain } from '../../src/dataplane/backends/nft/desired.js';
import { baseLastSteps, byTableSteps, pickSteps, unionSteps } from '../../src/dataplane/backends/nft/plan-lists.js';
import { TABLES, type TableName } from '../../src/dataplane/render/model.js';

/** Runs the steps to the end; what they return and how many turns they gave the loop. */
function run<T>(steps: Generator<void, T, undefined>): { value: T; turns: number } {
  let turns = 0;
  for (;;) {
    const r = steps.next();
    if (r.done) return { value: r.value, turns };
    turns++;
  }
}

function chains(n: number): Map<string, DesiredChain> {
  const out = new Map<string, DesiredChain>();
  const order: TableName[] = ['filter', 'nat', 'raw', 'mangle', 'filter'];
  for (let i = 0; i < n; i++) {
    const table = order[(i * 7) % order.length] as TableName;
    const name = `${table}-cali-c${i}`;
    const base = i % 97 === 0 ? { hook: 1, prio: 0, type: 'filter' } : undefined;
    out.set(name, { name, table, rules: [], hashes: [], ...(base ? { base } : {}) });
  }
  return out;
}

describe('nft plan lists, built in steps', () => {
  it('are the lists built at once: union, picked, stably by table, base chains last', () => {
    const desired = chains(17_500);
    const committed = new Map([...chains(18_000)].filter((_, i) => i % 3 !== 0));
    const names = run(unionSteps(desired.keys(), committed.keys()));
    assert.deepEqual([...names.value], [...new Set([...desired.keys(), ...committed.keys()])]);
    assert.ok(names.turns >= 20, `a turn every 1,024 names (${names.turns})`);

    const picked = run(pickSteps(names.value, desired));
    assert.deepEqual(
      picked.value,
      [...names.value].flatMap((n) => desired.get(n) ?? []),
    );

    const byTable = run(byTableSteps(picked.value));
    const sorted = [...picked.value].sort((a, b) => TABLES.indexOf(a.table) - TABLES.indexOf(b.table));
    assert.deepEqual(
      byTable.value.map((c) => c.name),
      sorted.map((c) => c.name),
    );
    assert.ok(byTable.turns >= 30);

    const notBase = run(byTableSteps(desired.values(), (c) => !c.base)).value;
    assert.deepEqual(
      notBase.map((c) => c.name),
      sorted.filter((c) => !c.base && desired.has(c.name)).map((c) => c.name),
    );

    const ordered = run(baseLastSteps(byTable.value)).value;
    assert.deepEqual(
      ordered.map((c) => c.name),
      [...byTable.value.filter((c) => !c.base), ...byTable.value.filter((c) => c.base)].map((c) => c.name),
    );
  });

  it('give no turn for a small plan', () => {
    const few = chains(10);
    assert.equal(run(byTableSteps(few.values())).turns, 0);
    assert.equal(run(unionSteps(few.keys(), [])).turns, 0);
  });
});
