// The Slicer runs a long render in slices and gives the event loop a turn between them;
// drain() runs the same steps at once. The nftables builder's sliced rebuild and its
// member deltas must leave the same desired state as a synchronous full render.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { StringMap } from '../../src/collections/string-map.js';
import { defaultConfig } from '../../src/config/params.js';
import { NftDesiredBuilder } from '../../src/dataplane/backends/nft/desired-builder.js';
import { DesiredState, DirtyKeys } from '../../src/dataplane/desired-state.js';
import { ipSetElemSteps } from '../../src/dataplane/backends/nft/desired.js';
import { drain, Slicer, type Steps } from '../../src/dataplane/slicer.js';
import type { ElemSpec } from '../../src/dataplane/backends/nft/op-writer.js';

function drainValue<T>(g: Generator<void, T, undefined>): T {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
  }
}

function* counting(out: number[], n: number, spinMs = 0): Steps {
  for (let i = 0; i < n; i++) {
    const until = performance.now() + spinMs;
    while (performance.now() < until);
    out.push(i);
    yield;
  }
}

describe('Slicer', () => {
  it('drain() runs every step at once', () => {
    const out: number[] = [];
    drain(counting(out, 5));
    assert.deepEqual(out, [0, 1, 2, 3, 4]);
  });

  it('runs every step, and lets the loop run between slices', async () => {
    const out: number[] = [];
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const slicer = new Slicer(2);
    await slicer.run(counting(out, 40, 0.5));
    clearInterval(tick);
    assert.deepEqual(
      out,
      Array.from({ length: 40 }, (_, i) => i),
    );
    assert.ok(slicer.pauses >= 5, `paused ${slicer.pauses} times`);
    assert.ok(turns >= 3, `the loop ran ${turns} timers meanwhile`);
  });
});

describe('IP-set member deltas', () => {
  const ip = (n: number) => `10.9.${(n >> 8) & 255}.${n & 255}/32`;

  it('DesiredState records the net change of each set, and none for a set replaced whole', () => {
    const s = new DesiredState();
    s.apply([
      { type: 'IPSetUpdate', id: 'a', members: [ip(1), ip(2)], ipsetType: 'NET' },
      { type: 'IPSetUpdate', id: 'b', members: [ip(1)], ipsetType: 'NET' },
    ]);
    s.takeDirty();
    s.apply([
      { type: 'IPSetDeltaUpdate', id: 'a', addedMembers: [ip(3), ip(4)], removedMembers: [ip(1)] },
      { type: 'IPSetDeltaUpdate', id: 'a', addedMembers: [ip(1)], removedMembers: [ip(4)] },
      { type: 'IPSetDeltaUpdate', id: 'b', addedMembers: [ip(5)], removedMembers: [] },
      { type: 'IPSetUpdate', id: 'b', members: [ip(6)], ipsetType: 'NET' },
      { type: 'IPSetDeltaUpdate', id: 'b', addedMembers: [ip(7)], removedMembers: [] },
    ]);
    const d = s.takeDirty();
    assert.ok(d instanceof DirtyKeys);
    assert.deepEqual([...(d.get('ipset') ?? [])].sort(), ['a', 'b']);
    const a = d.memberDeltas.get('a');
    assert.deepEqual([...(a?.added ?? [])], [ip(3)], 'ip(4) came and went; ip(1) went and came back');
    assert.deepEqual([...(a?.removed ?? [])], []);
    assert.equal(d.memberDeltas.has('b'), false, 'b was replaced whole in this batch');
    assert.deepEqual([...(s.ipsets.get('b')?.members ?? [])], [ip(6), ip(7)]);
  });

  it('a big set of host addresses is converted 512 members a step, with no pass over all of them first', () => {
    const members = Array.from({ length: 5000 }, (_, i) => ip(i));
    let read = 0;
    const watched = new Proxy(members, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop)) read++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const out = new StringMap<ElemSpec>();
    const steps = ipSetElemSteps(4, 'net', watched, out);
    steps.next();
    assert.ok(read <= 1024, `the first step read ${read} members`);
    let n = 1;
    let r = steps.next();
    for (; !r.done; r = steps.next()) n++;
    assert.equal(r.value, 'hosts', 'host addresses only: a plain set of addresses');
    assert.ok(n >= 9, `${n} steps`);
    assert.equal(out.size, 5_000, 'one element per address');
    // A set holding a network is covered first (a network holds addresses), in one pass.
    const mixed = new StringMap<ElemSpec>();
    assert.equal(drainValue(ipSetElemSteps(4, 'net', ['10.0.0.0/8', '10.1.2.3/32', '192.0.2.1/32'], mixed)), 'net');
    assert.equal([...mixed.values()].filter((e) => e.text).length, 2, 'the /32 inside 10.0.0.0/8 is implied');
  });

  it('the nftables builder applied by deltas holds what a full render holds', async () => {
    const config = { ...defaultConfig(), Ipv6Support: false };
    const state = new DesiredState();
    const members = new Set(Array.from({ length: 600 }, (_, i) => ip(i)));
    state.apply([
      { type: 'IPSetUpdate', id: 'hosts', members: [...members], ipsetType: 'NET' },
      { type: 'IPSetUpdate', id: 'nets', members: ['10.8.0.0/16', ip(3)], ipsetType: 'NET' },
      { type: 'IPSetUpdate', id: 'ports', members: ['10.9.0.1,tcp:80'], ipsetType: 'IP_AND_PORT' },
    ]);
    state.takeDirty();
    const incremental = new NftDesiredBuilder(config, 4);
    await new Slicer(1).run(incremental.rebuildSteps(state));
    let next = 600;
    for (let round = 0; round < 10; round++) {
      const removed = [...members].filter((_, i) => i % (7 + round) === 0);
      const added = [ip(next++), ip(next++), ...(round === 3 ? ['10.9.0.0/24'] : [])];
      for (const m of removed) members.delete(m);
      for (const m of added) members.add(m);
      state.apply([
        { type: 'IPSetDeltaUpdate', id: 'hosts', addedMembers: added, removedMembers: removed },
        { type: 'IPSetDeltaUpdate', id: 'nets', addedMembers: [ip(1000 + round)], removedMembers: [] },
        { type: 'IPSetDeltaUpdate', id: 'ports', addedMembers: [`10.9.0.${round + 2},tcp:80`], removedMembers: [] },
      ]);
      incremental.update(state, state.takeDirty());
    }
    const full = new NftDesiredBuilder(config, 4);
    full.rebuild(state);
    for (const [name, set] of full.desired.sets)
      assert.deepEqual(
        [...(incremental.desired.sets.get(name)?.elems.keys() ?? [])].sort(),
        [...set.elems.keys()].sort(),
        name,
      );
  });
});
