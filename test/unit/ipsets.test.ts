// IPSets (iptables mode's IP sets, as Felix's ipsets.IPSets) against an in-memory kernel
// that behaves as the ipset netlink commands do: new sets are created and filled,
// changes go as deltas, a type change is rewritten under a temporary name and swapped in,
// deletions wait for applyDeletions, tampering is repaired after a resync, foreign sets
// are never touched, and a kernel failure names the set and member.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { IptablesDesiredBuilder } from '../../src/dataplane/backends/iptables/desired-builder.js';
import { SET_TYPE } from '../../src/dataplane/backends/iptables/rules-backend.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { canonicalMember, IPSets } from '../../src/dataplane/ipsets/ipsets.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { drain, Slicer } from '../../src/dataplane/slicer.js';
import { createLogger } from '../../src/log.js';
import { Harness, profile, randomChange, tier } from '../helpers/calc-fixtures.js';
import { FakeKernel } from '../helpers/fake-ipsets.js';
import { config } from '../helpers/render-fixtures.js';
import { Rng } from '../helpers/rng.js';

const log = createLogger({ severity: 'Fatal' });

const setup = () => {
  const kernel = new FakeKernel();
  const sets = new IPSets(4, { maxSize: 1048576, log, dataplane: kernel });
  return { kernel, sets };
};
const members = (k: FakeKernel, name: string) => [...(k.sets.get(name)?.members ?? [])].sort();

describe('IPSets (iptables mode)', () => {
  it('creates and fills new sets, then sends only deltas', async () => {
    const { kernel, sets } = setup();
    sets.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1/32', '10.1.0.0/16']);
    sets.addOrReplace('cali40n:p', 'hash:ip,port', ['10.0.0.1,tcp:80']);
    assert.deepEqual(await sets.applyUpdates(), { created: 2, rewritten: 0, added: 3, removed: 0, destroyed: 0 });
    assert.deepEqual(members(kernel, 'cali40s:a'), ['10.0.0.1/32', '10.1.0.0/16']);
    kernel.log.length = 0;
    sets.addMembers('cali40s:a', ['10.0.0.2']);
    sets.removeMembers('cali40s:a', ['10.1.0.0/16']);
    assert.deepEqual(await sets.applyUpdates(), { created: 0, rewritten: 0, added: 1, removed: 1, destroyed: 0 });
    assert.deepEqual(kernel.log, ['del cali40s:a 1', 'add cali40s:a 1']);
    assert.deepEqual(members(kernel, 'cali40s:a'), ['10.0.0.1/32', '10.0.0.2/32']);
    kernel.log.length = 0;
    assert.deepEqual(await sets.applyUpdates(), { created: 0, rewritten: 0, added: 0, removed: 0, destroyed: 0 });
    assert.deepEqual(kernel.log, [], 'nothing changed, nothing sent');
  });

  it('rewrites a set whose size changed under a temporary name and swaps it in; one of another type is made again', async () => {
    const { kernel, sets } = setup();
    sets.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1']);
    await sets.applyUpdates();
    kernel.log.length = 0;
    const bigger = new IPSets(4, { maxSize: 2097152, log, dataplane: kernel });
    bigger.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1', '10.0.0.2']);
    assert.equal((await bigger.applyUpdates()).rewritten, 1);
    assert.deepEqual(kernel.log, ['create cali4t0', 'add cali4t0 2', 'swap cali4t0 cali40s:a', 'destroy cali4t0']);
    assert.equal(kernel.sets.get('cali40s:a')?.maxelem, 2097152);
    kernel.log.length = 0;
    bigger.addOrReplace('cali40s:a', 'hash:ip', ['10.0.0.9']);
    assert.equal((await bigger.applyUpdates()).rewritten, 1);
    assert.deepEqual(kernel.log, ['destroy cali40s:a', 'create cali40s:a', 'add cali40s:a 1']);
    assert.equal(kernel.sets.get('cali40s:a')?.type, 'hash:ip');
    assert.deepEqual(members(kernel, 'cali40s:a'), ['10.0.0.9']);
  });

  it('destroys removed sets only in applyDeletions, and never a foreign one', async () => {
    const { kernel, sets } = setup();
    kernel.sets.set('KUBE-x', { type: 'hash:ip', family: 4, maxelem: 65536, members: new Set(['1.1.1.1']) });
    kernel.sets.set('cali40s:stale', { type: 'hash:net', family: 4, maxelem: 1048576, members: new Set() });
    sets.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1']);
    await sets.applyUpdates();
    assert.ok(kernel.sets.has('cali40s:stale'), 'not before the rules moved off it');
    assert.equal(await sets.applyDeletions(), 1);
    assert.ok(!kernel.sets.has('cali40s:stale'));
    sets.remove('cali40s:a');
    await sets.applyUpdates();
    assert.ok(kernel.sets.has('cali40s:a'));
    assert.equal(await sets.applyDeletions(), 1);
    assert.deepEqual([...kernel.sets.keys()], ['KUBE-x']);
  });

  it('repairs tampering after a resync, and removes leftover temporary sets', async () => {
    const { kernel, sets } = setup();
    sets.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1', '10.0.0.2']);
    await sets.applyUpdates();
    kernel.sets.get('cali40s:a')?.members.clear();
    kernel.sets.get('cali40s:a')?.members.add('6.6.6.6/32');
    kernel.sets.set('cali4t7', { type: 'hash:net', family: 4, maxelem: 1048576, members: new Set() });
    sets.markResync();
    const s = await sets.applyUpdates();
    assert.deepEqual({ added: s.added, removed: s.removed }, { added: 2, removed: 1 });
    assert.deepEqual(members(kernel, 'cali40s:a'), ['10.0.0.1/32', '10.0.0.2/32']);
    assert.ok(!kernel.sets.has('cali4t7'));
  });

  it('a kernel failure names the set and member, and the next apply reads back', async () => {
    const { kernel, sets } = setup();
    kernel.failMember = '10.0.0.2/32';
    sets.addOrReplace('cali40s:a', 'hash:net', ['10.0.0.1', '10.0.0.2']);
    await assert.rejects(sets.applyUpdates(), /add cali40s:a member 10\.0\.0\.2\/32 \(errno 4105\)/);
    kernel.failMember = undefined;
    await sets.applyUpdates();
    assert.deepEqual(members(kernel, 'cali40s:a'), ['10.0.0.1/32', '10.0.0.2/32']);
  });

  it('sliced: a thousand sets are read back, planned and recorded between turns of the loop, to the same kernel', async () => {
    const run = async (slicer?: Slicer) => {
      const kernel = new FakeKernel();
      const sets = new IPSets(4, { maxSize: 1024, log, dataplane: kernel });
      const fill = (k: number) => {
        for (let i = 0; i < 1000; i++) {
          const members = Array.from({ length: 50 }, (_, j) => `10.${i >> 8}.${i & 255}.${(j + k) % 256}/32`);
          drain(sets.addOrReplaceSteps(`cali40s:set${i}`, 'hash:net', members));
        }
      };
      fill(0);
      await sets.applyUpdates(slicer);
      // A resync reads all of it back, and a change of every set's members follows.
      sets.markResync();
      fill(7);
      const stats = await sets.applyUpdates(slicer);
      return { log: kernel.log, stats, members: [...kernel.sets].map(([n, x]) => [n, [...x.members].sort()]) };
    };
    const slicer = new Slicer(0);
    const sliced = await run(slicer);
    assert.deepEqual(sliced, await run());
    assert.deepEqual(sliced.stats, { created: 0, rewritten: 0, added: 7000, removed: 7000, destroyed: 0 });
    // Between sets at least: read back, planned and recorded, twice over for the first apply.
    assert.ok(slicer.pauses >= 4000, `the loop got ${slicer.pauses} turns`);
  });

  it("refuses names that are not ours, and compares members in the kernel's spelling", () => {
    const { sets } = setup();
    assert.throws(() => sets.addOrReplace('KUBE-x', 'hash:ip', []), /not one of ours/);
    assert.equal(canonicalMember('hash:ip', 4, '10.0.0.1/32'), '10.0.0.1');
    assert.equal(canonicalMember('hash:net', 4, '10.0.0.1'), '10.0.0.1/32');
    assert.equal(canonicalMember('hash:net', 6, 'FD00:0::1/128'), 'fd00::1/128');
    assert.equal(canonicalMember('hash:ip,port', 6, 'FD00::1,tcp:80'), 'fd00::1,tcp:80');
  });
});

describe("IPSets fed by the iptables builder's member deltas", () => {
  it('keeps the kernel equal to a full render through random changes, sending members that changed, not whole sets', async () => {
    const rng = new Rng(5);
    const h = new Harness();
    const state = new DesiredState();
    const { kernel, sets } = setup();
    const b = new IptablesDesiredBuilder(config(), 4);
    h.put(tier('t1', 10), profile('kns.prod', {}));
    state.apply(h.flush());
    b.rebuild(state);
    state.takeDirty();
    // As the rules backend's apply hands them over (rules-backend.ts, #updateSets).
    let deltaSets = 0;
    const push = async () => {
      const taken = b.takeSets();
      for (const s of taken.changed) sets.addOrReplace(s.name, SET_TYPE[s.kind], s.members);
      for (const d of taken.deltas) {
        sets.removeMembers(d.name, d.removed);
        sets.addMembers(d.name, d.added);
      }
      for (const name of taken.removed) sets.remove(name);
      deltaSets += taken.deltas.length;
      kernel.log.length = 0;
      await sets.applyUpdates();
      await sets.applyDeletions();
    };
    await push();
    for (let step = 0; step < 200; step++) {
      randomChange(h, () => rng.next());
      state.apply(h.flush());
      b.update(state, state.takeDirty());
      await push();
      const full = renderRuleset(state, config(), 4, 'iptables');
      const want = [...full.sets.values()]
        .map((s) => [s.name, s.members.map((m) => canonicalMember(SET_TYPE[s.kind], 4, m)).sort()] as const)
        .sort();
      const have = [...kernel.sets.keys()].sort().map((name) => [name, members(kernel, name)] as const);
      assert.deepEqual(have, want, `step ${step}`);
    }
    assert.ok(deltaSets > 20, `sets changed by member deltas: ${deltaSets}`);
  });
});
