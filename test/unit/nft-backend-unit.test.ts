// The nftables backend's parts that need no kernel: the incremental desired state equals
// a full render after any sequence of changes; element keys; the native op-stream reader
// refuses malformed input with EINVAL (before any socket is opened).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { StringMap } from '../../src/collections/string-map.js';
import { partsAfter } from '../../src/dataplane/backends/nft/backend.js';
import { ASK_MAX, confirmedMissing, missingKeys, screenSet, Touched } from '../../src/dataplane/backends/nft/check.js';
import { emptyCommitted } from '../../src/dataplane/backends/nft/committed.js';
import { drain } from '../../src/dataplane/slicer.js';
import { NftDesiredBuilder } from '../../src/dataplane/backends/nft/desired-builder.js';
import { type DesiredFamily, desiredOf, elemId } from '../../src/dataplane/backends/nft/desired.js';
import { commentOf } from '../../src/dataplane/backends/nft/exprs.js';
import { addrKeyHex, cidrElems, ipPortKey, parseAddr, portRangeElems } from '../../src/dataplane/backends/nft/keys.js';
import { commentTlv, OP, OpWriter } from '../../src/dataplane/backends/nft/op-writer.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { NativeError } from '../../src/native/errors.js';
import { type NftDump, type NftDumpScope, nftAttr, nftCommit, nftDump, nftGetElems } from '../../src/native/nft.js';
import { Harness, profile, randomChange, tier } from '../helpers/calc-fixtures.js';
import { config } from '../helpers/render-fixtures.js';
import { Rng } from '../helpers/rng.js';
import { sharedChainsCase } from '../helpers/shared-chains.js';

function comparable(d: DesiredFamily) {
  return {
    chains: [...d.chains.values()].map((c) => [c.name, c.hashes.join(',')]).sort(),
    // With each set's layout: a set of hosts is a plain set, one holding a network an interval set.
    sets: [...d.sets.values()].map((s) => [s.name, s.spec.flags, [...s.elems.keys()].sort().join(' ')]).sort(),
  };
}

describe('nft backend: incremental desired state', () => {
  for (const [what, cfg] of [
    ['', config()],
    [' (kube-proxy IPVS support: endpoint marks numbered alike)', { ...config(), KubeIPVSSupport: 'Enabled' as const }],
  ] as const)
    it(`matches a full render after every step of a random sequence of changes${what}`, () => {
      const rng = new Rng(7);
      const rand = () => rng.next();
      const h = new Harness();
      const state = new DesiredState();
      const builders = [new NftDesiredBuilder(cfg, 4), new NftDesiredBuilder(cfg, 6)];
      h.put(tier('t1', 10), profile('kns.prod', {}));
      state.apply(h.flush());
      for (const b of builders) b.rebuild(state);
      state.takeDirty();
      // What an apply would have committed, kept up to date the way the backend records an
      // apply: a set with a delta by its delta, any other set whole. It must always equal
      // the desired elements, or an apply that writes only deltas would leave the kernel behind.
      const committed = builders.map(
        (b) => new Map([...b.desired.sets].map(([n, set]) => [n, new Set(set.elems.keys())])),
      );
      for (const b of builders) for (const set of b.desired.sets.values()) set.delta = undefined;
      for (let step = 0; step < 150; step++) {
        randomChange(h, rand);
        state.apply(h.flush());
        const dirty = state.takeDirty();
        builders.forEach((b, i) => {
          b.desired.dirty = { chains: new Set(), sets: new Set() };
          b.update(state, dirty);
          const full = desiredOf(renderRuleset(state, cfg, b.family, 'nftables'));
          assert.deepEqual(comparable(b.desired), comparable(full), `family ${b.family}, step ${step}`);
          const c = committed[i] as Map<string, Set<string>>;
          for (const name of b.desired.dirty.sets) {
            const set = b.desired.sets.get(name);
            const had = c.get(name);
            if (set?.delta && had) {
              for (const id of set.delta.removed.keys()) had.delete(id);
              for (const id of set.delta.added.keys()) had.add(id);
            } else if (set) c.set(name, new Set(set.elems.keys()));
            else c.delete(name);
            if (set) set.delta = undefined;
          }
          for (const [name, set] of b.desired.sets)
            assert.deepEqual([...(c.get(name) ?? [])].sort(), [...set.elems.keys()].sort(), `${name}, step ${step}`);
        });
      }
    });
});

describe('nft backend: chains all workloads share', () => {
  it('re-renders rpf-skip and the floating-IP chains when a workload with rules there changes, and only then (rules counted as they change)', () => {
    const { cfg, h, state, steps } = sharedChainsCase();
    const b = new NftDesiredBuilder(cfg, 4);
    b.rebuild(state);
    for (const [what, change, rendered] of steps) {
      change();
      state.apply(h.flush());
      b.desired.dirty = { chains: new Set(), sets: new Set() };
      b.update(state, state.takeDirty());
      assert.equal(b.desired.dirty.chains.has('raw-cali-rpf-skip'), rendered, what);
      const full = desiredOf(renderRuleset(state, cfg, 4, 'nftables'));
      assert.deepEqual(comparable(b.desired), comparable(full), what);
      let walked = 0;
      for (const c of b.desired.chains.values()) walked += c.rules.length;
      assert.equal(b.ruleCount, walked, `${what}: the running count of rules`);
    }
    const rules = (name: string) => b.desired.chains.get(name)?.rules.length;
    assert.equal(rules('raw-cali-rpf-skip'), 0);
    assert.equal(rules('nat-cali-fip-dnat'), 0);
  });
});

describe('nft backend: a table read in parts', () => {
  it('reads at most 256 chains and about 2,048 expected rules a part (a long chain alone), then each set', async () => {
    // Endpoint chains of 400 rules (a jump per policy) and small policy chains.
    const rules = new Map<string, number>();
    for (let i = 0; i < 20; i++) rules.set(`filter-cali-tw-${i}`, 400);
    for (let i = 0; i < 600; i++) rules.set(`filter-cali-pi-${i}`, 3);
    rules.set('filter-cali-huge', 5000);
    const names = [...rules.keys()];
    const cat = {
      exists: true,
      chains: names.map((name) => ({ name })),
      sets: [{ name: 's1', flags: 4 }],
    } as unknown as NftDump;
    // The parts' chain lists (catalogue scopes aside).
    const chainsOf = (x: NftDumpScope) => ('rulesOf' in x ? x.rulesOf : []);
    const scopes: NftDumpScope[] = [];
    const read = async (scope: NftDumpScope) => {
      scopes.push(scope);
      const elements = { count: 0 };
      return { exists: true, chains: [], sets: [{ name: 's1', flags: 0, elements }] } as unknown as NftDump;
    };
    const parts = [];
    for await (const p of partsAfter(cat, read, (n) => rules.get(n) ?? 1)) parts.push(p);
    const chainParts = scopes.map(chainsOf).filter((x) => x.length);
    assert.deepEqual(chainParts.flat(), names, 'every chain once, in order');
    for (const part of chainParts) {
      assert.ok(part.length <= 256);
      const sum = part.reduce((a, n) => a + (rules.get(n) ?? 0), 0);
      assert.ok(sum <= 2048 || part.length === 1, `${part.length} chains, ${sum} rules`);
    }
    assert.deepEqual(chainParts.at(-1), ['filter-cali-huge']);
    assert.equal(chainParts[0]?.length, 5, 'five endpoint chains of 400 rules');
    // Then the set, with the catalogue's flags.
    assert.deepEqual(scopes.at(-1), { rulesOf: [], elementsOf: ['s1'] });
    assert.deepEqual(parts.at(-1), { set: { name: 's1', flags: 4, elements: { count: 0 } } });
    // Without expected counts (a read-back at start): 256 chains a part.
    scopes.length = 0;
    for await (const _ of partsAfter(cat, read));
    assert.deepEqual(
      scopes
        .map(chainsOf)
        .filter((x) => x.length)
        .map((x) => x.length),
      [256, 256, 109],
    );
  });
});

describe('nft backend: a plain set dumped beside commits (screenSet)', () => {
  const key = (n: number) => Buffer.from([10, 1, n >> 8, n & 255]).toString('hex');
  const spec = (n: number) => ({ key: key(n), flags: 0 });
  // A dump of set "s" listing `listed` (plain: no flags).
  const dump = (listed: number[]): NftDump['sets'][number] => {
    const bytes = Buffer.from(listed.map(key).join(''), 'hex');
    return {
      name: 's',
      flags: 0,
      keyType: 7,
      keyLen: 4,
      dataType: 0,
      elements: {
        count: listed.length,
        keys: { bytes: new Uint8Array(bytes), ends: Uint32Array.from(listed, (_, i) => 4 * (i + 1)) },
        flags: new Uint32Array(listed.length),
      },
    };
  };
  const committed = (ns: number[]) => {
    const c = emptyCommitted();
    c.sets.set('s', new StringMap(ns.map((n) => [elemId(spec(n)), spec(n)])));
    c.layouts.set('s', 0);
    return c;
  };

  it('reports an element we did not commit at once, and only collects the committed ones it did not list', () => {
    const c = committed([1, 2, 3, 4]);
    const t = new Touched();
    const missing: string[] = [];
    assert.equal(drain(screenSet(dump([1, 3]), c, t, missing)), false);
    assert.deepEqual(missing, [elemId(spec(2)), elemId(spec(4))]);
    assert.deepEqual(missingKeys('s', missing, c).keys, [key(2), key(4)]);
    assert.equal(drain(screenSet(dump([1, 2, 3, 4, 9]), c, t, [])), true, 'an element nobody committed');
    t.sets.set('s', new Set([elemId(spec(9))]));
    assert.equal(drain(screenSet(dump([1, 2, 3, 4, 9]), c, t, [])), false, 'unless an apply wrote it meanwhile');
  });

  it('counts as drift a missing element the kernel does not have, unless an apply wrote or removed it since', () => {
    const c = committed([1, 2, 3]);
    const t = new Touched();
    const ids = [elemId(spec(2)), elemId(spec(3))];
    assert.equal(confirmedMissing('s', ids, [true, true], c, t), false);
    assert.equal(confirmedMissing('s', ids, [true, false], c, t), true);
    t.sets.set('s', new Set([elemId(spec(3))]));
    assert.equal(confirmedMissing('s', ids, [true, false], c, t), false);
    c.sets.get('s')?.delete(elemId(spec(2)));
    assert.equal(confirmedMissing('s', ids, [false, true], c, t), false, 'recorded as removed since');
    assert.deepEqual(missingKeys('s', ids, c).ids, [elemId(spec(3))], 'nothing to ask for a removed one');
  });

  it('gives up asking past ASK_MAX missing elements: the set is read again holding commits back', () => {
    const all = Array.from({ length: ASK_MAX + 2 }, (_, i) => i);
    const missing: string[] = [];
    assert.equal(drain(screenSet(dump([0]), committed(all), new Touched(), missing)), true);
    assert.equal(missing.length, ASK_MAX);
    assert.equal(drain(screenSet({ ...dump([]), gone: true }, committed([1]), new Touched(), [])), true, 'a set gone');
  });
});

describe('nft backend: encodings', () => {
  it('encodes interval elements one past the end, none at the top of the range', () => {
    const hex = (e: { key: string; flags: number }) => `${e.key}/${e.flags}`;
    assert.deepEqual(cidrElems('10.1.2.0/24', 4).map(hex), ['0a010200/0', '0a010300/1']);
    assert.deepEqual(cidrElems('255.255.255.0/24', 4).map(hex), ['ffffff00/0']);
    assert.deepEqual(cidrElems('fd00::/8', 6).map(hex), [
      'fd000000000000000000000000000000/0',
      'fe000000000000000000000000000000/1',
    ]);
    assert.deepEqual(portRangeElems(8000, 8100).map(hex), ['1f40/0', '1fa5/1']);
    assert.equal(ipPortKey('10.0.0.1,tcp:8080', 4).toString('hex'), '0a000001' + '06000000' + '1f900000');
  });

  it('writes names as UTF-8 with their byte length, ASCII or not, however the buffer grows', () => {
    const str = (s: string) => {
      const b = Buffer.from(s, 'utf8');
      const n = Buffer.alloc(2);
      n.writeUInt16LE(b.length);
      return Buffer.concat([n, b]);
    };
    const w = new OpWriter();
    const names = ['cali-fw-eth0', 'cali-é€x', 'x'.repeat(5000), `${'y'.repeat(3000)}ü`];
    for (const name of names) w.chainFlush(4, 'calico', name);
    const tag = (i: number) => Buffer.from([OP.chainFlush, 2, i, 0, 0, 0]);
    const want = Buffer.concat(names.flatMap((name, i) => [tag(i), str('calico'), str(name)]));
    assert.deepEqual(Buffer.from(w.bytes()), want);
  });

  it('reads an address key a char at a time as parseAddr reads it, and leaves anything else to parseAddr', () => {
    const rng = new Rng(11);
    const octet = () => String(Math.floor(rng.next() * 256));
    for (let i = 0; i < 5000; i++) {
      const addr = [octet(), octet(), octet(), octet()].join('.');
      assert.equal(addrKeyHex(addr, 4), parseAddr(addr, 4).toString('hex'), addr);
    }
    for (const addr of ['0.0.0.0', '255.255.255.255', '10.65.0.1', 'fd00::1', '::ffff:10.0.0.1'])
      assert.equal(
        addrKeyHex(addr, addr.includes(':') ? 6 : 4),
        parseAddr(addr, addr.includes(':') ? 6 : 4).toString('hex'),
      );
    assert.throws(() => addrKeyHex('fd00::1', 4), /not an IPv4 address/);
    assert.throws(() => addrKeyHex('10.0.0.1', 6), /not an IPv6 address/);
  });

  it('writes a string attribute as the latin1 C string a Buffer of it was', () => {
    const bytes = (v: Uint8Array | string) => {
      const w = new OpWriter();
      w.ruleAdd(4, 'calico', 'c', new Uint8Array(0), [{ name: 'lookup', attrs: [[7, v]] }], 1);
      return Buffer.from(w.bytes());
    };
    for (const s of ['cali40s-a', '', 'filter-cali-fw-eth0', 'pr\u00e9fix'])
      assert.deepEqual(bytes(s), bytes(Buffer.from(`${s}\0`, 'latin1')), s);
  });

  it("writes a rule's comment as the userdata TLV a Buffer of it was, ASCII or not", () => {
    const rule = (udata: Uint8Array | string) => {
      const w = new OpWriter();
      w.ruleAdd(4, 'calico', 'c', udata, [{ name: 'counter', attrs: [] }], 1);
      return Buffer.from(w.bytes());
    };
    for (const c of ['cali:0123456789abcdef;', '', 'cali:x; Allow_from_ns=dev', 'pr\u00e9fix €', 'a'.repeat(128)]) {
      assert.deepEqual(rule(c), rule(commentTlv(c)), c);
      assert.equal(commentOf(commentTlv(c)), c);
    }
  });

  it("describes each op in words only when asked (a refused op's error names it)", () => {
    const w = new OpWriter();
    w.tableAdd(4, 'calico');
    w.chainAdd(4, 'calico', 'filter-cali-fw-eth0');
    w.chainFlush(4, 'calico', 'filter-cali-fw-eth0');
    w.setAdd(4, 'calico', 'cali40s-a', 1, { flags: 0, keyType: 7, keyLen: 4 });
    w.elems(true, 4, 'calico', 'cali40s-a', 0, [{ key: '0a000001', flags: 0 }]);
    w.elems(false, 4, 'calico', 'cali40s-a', 0, []);
    w.ruleAdd(4, 'calico', 'filter-cali-fw-eth0', new Uint8Array(0), [], 3);
    w.ruleAdd(4, 'calico', 'filter-cali-fw-eth0', new Uint8Array(0), [], 'Drop if no policies passed packet');
    w.ruleDel(4, 'calico', 'filter-cali-fw-eth0', 42n);
    w.setFlush(4, 'calico', 'cali40s-a');
    w.setDel(4, 'calico', 'cali40s-a');
    w.chainDel(4, 'calico', 'filter-cali-fw-eth0');
    w.tableDel(4, 'calico');
    assert.deepEqual(
      Array.from({ length: w.length + 1 }, (_, i) => w.describe(i)),
      [
        'table calico',
        'chain filter-cali-fw-eth0',
        'flush chain filter-cali-fw-eth0',
        'set cali40s-a',
        'add 1 elements to cali40s-a',
        'delete 0 elements from cali40s-a',
        'rule in filter-cali-fw-eth0: #3',
        'rule in filter-cali-fw-eth0: Drop if no policies passed packet',
        'delete rule 42 in filter-cali-fw-eth0',
        'flush set cali40s-a',
        'delete set cali40s-a',
        'delete chain filter-cali-fw-eth0',
        'delete table calico',
        undefined,
      ],
    );
  });

  it('round-trips the rule comment through nft userdata', () => {
    assert.equal(commentOf(commentTlv('cali:abc')), 'cali:abc');
    assert.equal(commentOf(Buffer.alloc(0)), undefined);
  });
});

describe('nft backend: native op stream validation', () => {
  const rejects = async (bytes: Uint8Array | readonly Uint8Array[], re: RegExp) => {
    await assert.rejects(
      nftCommit(bytes),
      (e: unknown) => e instanceof NativeError && e.code === 'EINVAL' && re.test(e.message),
    );
  };
  it('refuses truncated streams, unknown ops and unknown expressions with EINVAL', async () => {
    const w = new OpWriter();
    w.tableAdd(4, 'calico');
    const good = w.bytes();
    await rejects(good.subarray(0, good.length - 2), /truncated/);
    await rejects(Uint8Array.of(99, 2, 0, 0, 0, 0), /unknown nft op 99/);
    const bad = new OpWriter();
    bad.ruleAdd(4, 'calico', 'c', new Uint8Array(0), [{ name: 'no-such-expr', attrs: [] }], 'x');
    await rejects(bad.bytes(), /unknown nftables expression "no-such-expr"/);
    await assert.rejects(
      nftCommit('x' as unknown as Uint8Array),
      (e: unknown) => e instanceof NativeError && e.code === 'EINVAL',
    );
  });
  it('writes a long stream in parts of whole ops (nothing written is copied again); the native side reads the parts in order', async () => {
    const w = new OpWriter();
    const udata = new Uint8Array(64);
    const exprs = [{ name: 'counter', attrs: [] }];
    for (let i = 0; i < 20_000; i++) w.ruleAdd(4, 'calico', `chain-${i % 100}`, udata, exprs, `rule ${i}`);
    // One op larger than a part goes whole into a part of its own.
    const keys = Array.from({ length: 150_000 }, (_, i) => ({
      key: (i >>> 0).toString(16).padStart(8, '0'),
      flags: 0,
    }));
    w.elems(true, 4, 'calico', 's', 0, keys);
    w.ruleAdd(4, 'calico', 'last', udata, exprs, 'the last rule');
    const parts = w.parts();
    assert.ok(parts.length >= 3, `${parts.length} parts`);
    for (const p of parts) {
      assert.ok([OP.ruleAdd, OP.elemAdd].includes(p[0] as 11 | 9), 'each part starts with an op');
      assert.equal(p[1], 2, 'of family ip');
    }
    assert.ok(parts.some((p) => p.length > 1_000_000 && p[0] === OP.elemAdd));
    assert.deepEqual(Buffer.from(w.bytes()), Buffer.concat(parts));
    assert.equal(w.length, 20_002);
    // An op cut at a part's end is a truncated stream; a part that is not bytes is EINVAL.
    const [first, ...rest] = parts as [Uint8Array, ...Uint8Array[]];
    await rejects([first.subarray(0, first.length - 3), ...rest], /truncated/);
    await rejects([first, 'x'] as unknown as Uint8Array[], /part 1 of the ops is not a Uint8Array/);
    // The parts are read in order: a bad op in the last part is found after the others parsed.
    await rejects([...parts, Uint8Array.of(99, 2, 0, 0, 0, 0)], /unknown nft op 99/);
  });

  it('bounds every attribute, key and name before libnftnl copies it (a 4 KB cmp once aborted the process)', async () => {
    const attr = nftAttr;
    const rule = (exprs: Array<{ name: string; attrs: Array<[number, Uint8Array]> }>, udata = new Uint8Array(0)) => {
      const w = new OpWriter();
      w.ruleAdd(4, 'calico', 'c', udata, exprs, 'x');
      return w.bytes();
    };
    await rejects(
      rule([{ name: 'cmp', attrs: [[attr('cmp.data'), new Uint8Array(4096)]] }]),
      /cmp\.data must be 1 to 64 bytes/,
    );
    await rejects(rule([{ name: 'cmp', attrs: [[attr('cmp.sreg'), new Uint8Array(2)]] }]), /cmp\.sreg must be 4 bytes/);
    await rejects(rule([{ name: 'lookup', attrs: [[attr('lookup.set'), Buffer.from('no-nul')]] }]), /NUL-terminated/);
    await rejects(
      rule([{ name: 'log', attrs: [[attr('log.prefix'), Buffer.from(`${'x'.repeat(300)}\0`)]] }]),
      /at most 255/,
    );
    await rejects(rule([{ name: 'meta', attrs: [[999, new Uint8Array(4)]] }]), /not one palisade uses/);
    await rejects(rule([], new Uint8Array(300)), /userdata longer than 256/);
    // Found by fuzzing: libnftnl leaks these, so they are refused before it sees them.
    const u32 = (v: number) => Buffer.from(new Uint32Array([v]).buffer);
    await rejects(
      rule([
        {
          name: 'lookup',
          attrs: [
            [attr('lookup.set'), Buffer.from('a\0')],
            [attr('lookup.set'), Buffer.from('b\0')],
          ],
        },
      ]),
      /set twice/,
    );
    await rejects(
      rule([{ name: 'immediate', attrs: [[attr('immediate.chain'), Buffer.from('c\0')]] }]),
      /must follow a jump or goto/,
    );
    await rejects(
      rule([
        {
          name: 'immediate',
          attrs: [
            [attr('immediate.verdict'), u32(1)],
            [attr('immediate.chain'), Buffer.from('c\0')],
          ],
        },
      ]),
      /must follow a jump or goto/,
    );
    const longName = new OpWriter();
    longName.tableAdd(4, 'x'.repeat(1000));
    await rejects(longName.bytes(), /longer than 255 bytes/);
    const elems = new OpWriter();
    elems.elems(true, 4, 'calico', 's', 0, [{ key: '00'.repeat(100), flags: 0 }]);
    await rejects(elems.bytes(), /element key must be 1 to 64 bytes/);
    // Keys travel as hex: anything else is refused before it reaches the kernel.
    for (const key of ['0g', '0a0', 'zz'])
      assert.throws(() => new OpWriter().elems(true, 4, 'calico', 's', 0, [{ key, flags: 0 }]), /not hex bytes/);
    await assert.rejects(
      nftDump(2, 'x'.repeat(1_000_000)),
      (e: unknown) => e instanceof NativeError && e.code === 'EINVAL',
    );
    // A scope (a refresh's part) names chains and sets; anything else is EINVAL, not a crash.
    const einval = (e: unknown) => e instanceof NativeError && e.code === 'EINVAL';
    const badScopes: unknown[] = [
      7,
      'all',
      {},
      { rulesOf: 'filter-cali-INPUT', elementsOf: [] },
      { rulesOf: [], elementsOf: [3] },
      { rulesOf: [''], elementsOf: [] },
      { rulesOf: ['x'.repeat(256)], elementsOf: [] },
      { rulesOf: ['a\0b'], elementsOf: [] },
    ];
    for (const scope of badScopes)
      await assert.rejects(nftDump(2, 'calico', scope as never), einval, JSON.stringify(scope));
  });

  it('asks for set elements only with whole keys of one length, and names of 1 to 255 bytes (EINVAL before any socket)', async () => {
    await assert.rejects(nftGetElems(2, 'calico', 's', ['0a000001', '0a00']), /key 1 \(0a00\) is not 4 bytes of hex/);
    await assert.rejects(nftGetElems(2, 'calico', 's', ['0a00000z']), /not 4 bytes of hex/);
    const einval = (e: unknown) => e instanceof NativeError && e.code === 'EINVAL';
    await assert.rejects(nftGetElems(2, '', 's', ['0a000001']), einval);
    await assert.rejects(nftGetElems(2, 'calico', 'x'.repeat(256), ['0a000001']), einval);
    await assert.rejects(nftGetElems(2, 'calico', 's', ['00'.repeat(65)]), einval, 'a key over 64 bytes');
    assert.deepEqual(await nftGetElems(2, 'calico', 's', []), []);
  });

  it('sends nothing for an empty stream', async () => {
    assert.deepEqual(await nftCommit(new Uint8Array(0)), { ops: 0, messages: 0, bytes: 40 });
  });
});
