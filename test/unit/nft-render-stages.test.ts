// A cold render's staged parts (render-stages.ts), planned into nft text: what a part may
// hold before the rest of the ruleset exists, and what is left for the apply.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { emptyCommitted } from '../../src/dataplane/backends/nft/committed.js';
import {
  addElem,
  chainOf,
  type DesiredChain,
  type DesiredFamily,
  ipSetElems,
  ipSetSpec,
  mapElem,
  elemId,
} from '../../src/dataplane/backends/nft/desired.js';
import type { ElemSpec } from '../../src/dataplane/backends/nft/op-writer.js';
import { RenderStages } from '../../src/dataplane/backends/nft/render-stages.js';
import { NftTextSink } from '../../src/dataplane/backends/nft/sinks.js';
import { zeroStats } from '../../src/dataplane/backends/nft/writes.js';
import type { Rule } from '../../src/dataplane/render/model.js';
import { drain } from '../../src/dataplane/slicer.js';
import { SET_FLAG, TYPE } from '../../src/dataplane/backends/nft/consts.js';
import { StringMap } from '../../src/collections/string-map.js';

const accept = (set?: string): Rule => ({
  match: set ? [{ k: 'set', dir: 'src', set }] : [],
  action: { k: 'accept' },
});
const jump = (chain: string): Rule => ({ match: [], action: { k: 'jump', chain } });

function family(): DesiredFamily {
  return { family: 4, chains: new Map(), sets: new Map() };
}

function addSet(d: DesiredFamily, name: string, members: number): void {
  const list = Array.from({ length: members }, (_, i) => `10.0.${i >> 8}.${i & 255}/32`);
  const { elems, elemKind } = ipSetElems(4, 'net', list);
  d.sets.set(name, { name, spec: ipSetSpec(4, elemKind), elems, elemKind });
}

/** A render's put: the chain into the family, told to the stages. */
function put(d: DesiredFamily, stages: RenderStages, name: string, rules: Rule[]): DesiredChain {
  const ch = chainOf(`filter-${name}`, name, 'filter', rules, 4);
  d.chains.set(ch.name, ch);
  stages.put(ch.name, ch);
  return ch;
}

/** Plans the next part; its text and the record to run once it lands. */
function part(stages: RenderStages): { text: string; record: () => void } {
  const w = new NftTextSink();
  const record = drain(stages.plan(w, zeroStats()));
  return { text: w.text(), record: () => drain(record()) };
}

const chainsIn = (text: string) => [...text.matchAll(/^add chain ip calico (\S+)$/gm)].map((m) => m[1]);

describe('nft render stages', () => {
  it('sends big sets ahead at the first chain after them, then parts of about stageRules rules', () => {
    const d = family();
    const c = emptyCommitted();
    const stages = new RenderStages(d, c, 'calico', 4);
    addSet(d, 'cali40a', 10);
    put(d, stages, 'cali-pi-1', [accept('cali40a')]);
    assert.ok(stages.ready, 'sets of 10 elements go ahead of parts of 4 rules');
    const first = part(stages);
    assert.match(first.text, /^add table ip calico$/m);
    assert.match(first.text, /^add set ip calico cali40a /m);
    assert.deepEqual(chainsIn(first.text), ['filter-cali-pi-1']);
    first.record();
    assert.equal(c.exists, true);
    assert.equal(c.sets.get('cali40a')?.size, 10);
    assert.deepEqual(c.chains.get('filter-cali-pi-1'), d.chains.get('filter-cali-pi-1')?.hashes);
    put(d, stages, 'cali-pi-2', [accept(), accept()]);
    assert.equal(stages.ready, false);
    put(d, stages, 'cali-pi-3', [accept(), accept()]);
    assert.equal(stages.ready, true);
    const second = part(stages);
    assert.doesNotMatch(second.text, /add (table|set)/);
    assert.deepEqual(chainsIn(second.text), ['filter-cali-pi-2', 'filter-cali-pi-3']);
  });

  it('small sets wait for the first part of rules', () => {
    const d = family();
    const stages = new RenderStages(d, emptyCommitted(), 'calico', 100);
    addSet(d, 'cali40a', 10);
    put(d, stages, 'cali-pi-1', [accept('cali40a')]);
    assert.equal(stages.ready, false);
    assert.equal(stages.parts, 0);
  });

  it('a chain waits for the chain it jumps to, and goes with it in the same part', () => {
    const d = family();
    const stages = new RenderStages(d, emptyCommitted(), 'calico', 1);
    put(d, stages, 'cali-tw-a', [jump('cali-pi-x')]);
    put(d, stages, 'cali-tw-b', [jump('cali-tw-a')]);
    assert.deepEqual(chainsIn(part(stages).text), [], 'their target is not rendered yet');
    put(d, stages, 'cali-pi-x', [accept()]);
    const text = part(stages).text;
    // All created before any rule: the jumps name chains of the same part.
    assert.deepEqual(chainsIn(text), ['filter-cali-tw-a', 'filter-cali-tw-b', 'filter-cali-pi-x']);
    assert.ok(text.indexOf('add rule') > text.lastIndexOf('add chain'));
  });

  it("a chain that looks up a set rendered later waits for it; one that dispatches through a map, or jumps to a chain never rendered, is the apply's", () => {
    const d = family();
    const stages = new RenderStages(d, emptyCommitted(), 'calico', 1);
    const map = new StringMap<ElemSpec>();
    const e = mapElem('cali123', 'goto', 'filter-cali-tw-cali123');
    map.set(elemId(e), e);
    d.sets.set('filter-cali-to-wl-dispatch', {
      name: 'filter-cali-to-wl-dispatch',
      spec: { flags: SET_FLAG.map, keyType: TYPE.ifname, keyLen: 16, text: 'type ifname : verdict;' },
      elems: map,
    });
    put(d, stages, 'cali-to-wl', [{ match: [], action: { k: 'vmap', iface: 'out', map: 'cali-to-wl-dispatch' } }]);
    put(d, stages, 'cali-late', [accept('cali40late')]);
    put(d, stages, 'cali-dangling', [jump('cali-nowhere')]);
    put(d, stages, 'cali-ok', [accept()]);
    const first = part(stages);
    assert.doesNotMatch(first.text, /dispatch/, 'maps are not written by the parts');
    assert.deepEqual(chainsIn(first.text), ['filter-cali-ok']);
    addSet(d, 'cali40late', 2);
    put(d, stages, 'cali-more', [accept()]);
    const second = part(stages);
    assert.match(second.text, /^add set ip calico cali40late /m);
    assert.deepEqual(chainsIn(second.text), ['filter-cali-late', 'filter-cali-more']);
    put(d, stages, 'cali-last', [accept()]);
    assert.deepEqual(chainsIn(part(stages).text), ['filter-cali-last'], 'the dangling jump still waits');
  });

  it('a chain put again before its part goes by its last rules; one the render dropped is not written', () => {
    const d = family();
    const stages = new RenderStages(d, emptyCommitted(), 'calico', 1);
    put(d, stages, 'cali-tw-a', [jump('cali-pi-x')]);
    put(d, stages, 'cali-tw-b', [accept()]);
    put(d, stages, 'cali-tw-c', [accept()]);
    d.chains.delete('filter-cali-tw-c');
    // Pending, its jump gone: it no longer waits for cali-pi-x.
    put(d, stages, 'cali-tw-a', [accept()]);
    assert.deepEqual(chainsIn(part(stages).text), ['filter-cali-tw-a', 'filter-cali-tw-b']);
    // Waiting, then put again with a jump to a chain that exists: taken with the next part.
    put(d, stages, 'cali-tw-d', [jump('cali-pi-y')]);
    put(d, stages, 'cali-pi-z', [accept()]);
    assert.deepEqual(chainsIn(part(stages).text), ['filter-cali-pi-z']);
    put(d, stages, 'cali-tw-d', [jump('cali-pi-z')]);
    put(d, stages, 'cali-pi-w', [accept()]);
    assert.deepEqual(chainsIn(part(stages).text), ['filter-cali-tw-d', 'filter-cali-pi-w']);
  });

  it("a chain put again after its part is the apply's; the sets staged are those the render kept as written", () => {
    const d = family();
    const c = emptyCommitted();
    const stages = new RenderStages(d, c, 'calico', 2);
    addSet(d, 'cali40a', 3);
    addSet(d, 'cali40b', 3);
    addSet(d, 'cali40c', 3);
    put(d, stages, 'cali-pi-1', [accept('cali40a'), accept('cali40b')]);
    const first = part(stages);
    first.record();
    put(d, stages, 'cali-pi-1', [accept()]);
    assert.equal(stages.ready, false);
    assert.deepEqual(chainsIn(part(stages).text), []);
    // Replaced, and changed by a member delta: both compared by the apply.
    addSet(d, 'cali40b', 4);
    const cset = d.sets.get('cali40c');
    assert.ok(cset);
    for (const [id, elem] of ipSetElems(4, 'net', ['10.9.9.9/32']).elems) addElem(cset, id, elem);
    assert.deepEqual([...stages.stagedSets()], ['cali40a']);
  });
});
