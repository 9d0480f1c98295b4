// The cold stager's choices without a kernel: what a staged part writes, in which order
// (sets and jump targets before the rules that name them), and what it leaves for the
// last transaction (base chains; chains naming a verdict map, or a set or chain the
// render has not made, or a base chain); parts of about STAGE_RULES rules.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { emptyCommitted } from '../../src/dataplane/backends/nft/committed.js';
import { HOOK, SET_FLAG, TYPE } from '../../src/dataplane/backends/nft/consts.js';
import { chainOf, type DesiredFamily, ipSetElems, ipSetSpec } from '../../src/dataplane/backends/nft/desired.js';
import { NftTextSink } from '../../src/dataplane/backends/nft/sinks.js';
import { ColdStager, recordPart } from '../../src/dataplane/backends/nft/stager.js';
import type { Rule } from '../../src/dataplane/render/model.js';
import { drain } from '../../src/dataplane/slicer.js';

const accept = (match: Rule['match'] = []): Rule => ({ match, action: { k: 'accept' } });
const jump = (chain: string): Rule => ({ match: [], action: { k: 'jump', chain } });

function desired(): DesiredFamily {
  const d: DesiredFamily = { family: 4, chains: new Map(), sets: new Map() };
  const { elems, elemKind } = ipSetElems(4, 'net', ['10.0.0.1/32', '10.0.0.2/32']);
  d.sets.set('cali40s-a', { name: 'cali40s-a', spec: ipSetSpec(4, elemKind), elems, elemKind });
  d.sets.set('filter-cali-to-wl', {
    name: 'filter-cali-to-wl',
    spec: { flags: SET_FLAG.map, keyType: TYPE.ifname, keyLen: 16, dataType: 0xffffff00, dataLen: 0 },
    elems: new Map(),
  });
  const chain = (name: string, rules: Rule[], base?: { hook: number; prio: number; type: string }) =>
    d.chains.set(`filter-${name}`, chainOf(`filter-${name}`, name, 'filter', rules, 4, base));
  chain('FORWARD', [jump('cali-A')], { hook: HOOK.FORWARD, prio: 0, type: 'filter' });
  chain('cali-A', [accept([{ k: 'set', dir: 'src', set: 'cali40s:a' }]), jump('cali-B')]);
  chain('cali-vmap', [{ match: [], action: { k: 'vmap', iface: 'out', map: 'cali-to-wl' } }]);
  chain('cali-unset', [accept([{ k: 'set', dir: 'dst', set: 'cali40s:not-yet' }])]);
  chain('cali-nochain', [jump('cali-not-yet')]);
  chain('cali-tobase', [jump('FORWARD')]);
  chain('cali-B', [accept(), accept()]);
  return d;
}

describe('nft: the cold stager', () => {
  it("writes a part's sets and jump targets before its rules, and leaves what it cannot stage for the last transaction", () => {
    const d = desired();
    const c = emptyCommitted();
    const stager = new ColdStager(d, c, 'calico', 100);
    assert.equal(stager.due(), false, '5 rules pending, parts of 100');
    const w = new NftTextSink();
    const counts = { chainsWritten: 0, rulesWritten: 0, elemsAdded: 0 };
    const part = drain(stager.plan(w, counts));
    assert.ok(part);
    assert.deepEqual(
      w.lines.map((l) => l.replace(/ comment .*/, '').replace(/ \{.*/, ' {…')),
      [
        'add table ip calico',
        'add set ip calico cali40s-a {…',
        'add element ip calico cali40s-a {…',
        'add chain ip calico filter-cali-B',
        'add chain ip calico filter-cali-A',
        'add rule ip calico filter-cali-A ip saddr @cali40s-a counter accept',
        'add rule ip calico filter-cali-A counter jump filter-cali-B',
        'add rule ip calico filter-cali-B counter accept',
        'add rule ip calico filter-cali-B counter accept',
      ],
    );
    assert.deepEqual(counts, { chainsWritten: 2, rulesWritten: 4, elemsAdded: 2 });
    assert.deepEqual(
      part.chains.map(([name]) => name),
      ['filter-cali-A', 'filter-cali-B'],
    );
    assert.deepEqual(part.empty, ['filter-cali-B']);
    // Recorded once committed: the target's rules (staged after it was made empty) stand.
    recordPart(c, part);
    assert.equal(c.exists, true);
    assert.deepEqual(c.chains.get('filter-cali-B'), d.chains.get('filter-cali-B')?.hashes);
    assert.equal(c.sets.get('cali40s-a')?.size, 2);
    // Nothing left to stage: the others wait for the last transaction.
    assert.equal(drain(stager.plan(new NftTextSink(), counts)), undefined);
  });

  it('takes whole chains, about its part size of rules at a time, and follows chains the render adds later', () => {
    const d: DesiredFamily = { family: 4, chains: new Map(), sets: new Map() };
    const add = (i: number) =>
      d.chains.set(
        `filter-cali-c${i}`,
        chainOf(`filter-cali-c${i}`, `c${i}`, 'filter', [accept(), accept(), accept()], 4),
      );
    for (let i = 0; i < 3; i++) add(i);
    const stager = new ColdStager(d, emptyCommitted(), 'calico', 5);
    assert.equal(stager.due(), true);
    const names = () => {
      const part = drain(stager.plan(new NftTextSink(), { chainsWritten: 0, rulesWritten: 0, elemsAdded: 0 }));
      return part?.chains.map(([name]) => name);
    };
    assert.deepEqual(names(), ['filter-cali-c0', 'filter-cali-c1']);
    assert.equal(stager.due(), false, 'one chain of 3 rules pending');
    for (let i = 3; i < 6; i++) add(i);
    assert.equal(stager.due(), true, 'the chains added since are taken in');
    assert.deepEqual(names(), ['filter-cali-c2', 'filter-cali-c3']);
    assert.deepEqual(names(), ['filter-cali-c4', 'filter-cali-c5']);
    assert.equal(names(), undefined);
  });
});
