// IPSetMemberCalculator against a brute-force model: random sources (shared addresses,
// named ports, profiles), sets activated, deactivated and re-activated (also within one
// batch), flushes at random points. After each flush the members the listener was told
// about must equal what a full recomputation gives, and each add/remove must be a change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { IPSetMemberCalculator, type IPSetMemberListener, type MemberSource } from '../../src/calc/ipset-members.js';
import type { IPSetData } from '../../src/calc/rule-scanner.js';
import type { EndpointPort } from '../../src/model/internal.js';
import { parseSelector } from '../../src/native/selector.js';
import { Rng } from '../helpers/rng.js';

class Recorder implements IPSetMemberListener {
  readonly sets = new Map<string, Set<string>>();
  onIPSetAdded(id: string): void {
    assert.ok(!this.sets.has(id), `set ${id} added twice`);
    this.sets.set(id, new Set());
  }
  onIPSetRemoved(id: string): void {
    assert.ok(this.sets.delete(id), `set ${id} removed but not there`);
  }
  onMembersAdded(id: string, members: string[]): void {
    const s = this.sets.get(id);
    assert.ok(s, `members added to unknown set ${id}`);
    for (const m of members) {
      assert.ok(!s.has(m), `${m} added twice to ${id}`);
      s.add(m);
    }
  }
  onMembersRemoved(id: string, members: string[]): void {
    const s = this.sets.get(id);
    assert.ok(s, `members removed from unknown set ${id}`);
    for (const m of members) assert.ok(s.delete(m), `${m} removed from ${id} but not there`);
  }
}

/**
 * As the EventSequencer with a membership source: a set added since the last flush is
 * read whole from the calculator at flush, and its members must not be reported one by
 * one meanwhile; later changes come as deltas.
 */
class WholeSetRecorder extends Recorder {
  readonly readsNewSetsWhole = true;
  readonly #pending = new Set<string>();
  override onIPSetAdded(id: string): void {
    super.onIPSetAdded(id);
    this.#pending.add(id);
  }
  override onIPSetRemoved(id: string): void {
    super.onIPSetRemoved(id);
    this.#pending.delete(id);
  }
  override onMembersAdded(id: string, members: string[]): void {
    assert.ok(!this.#pending.has(id), `members of new set ${id} reported one by one`);
    super.onMembersAdded(id, members);
  }
  override onMembersRemoved(id: string, members: string[]): void {
    assert.ok(!this.#pending.has(id), `members of new set ${id} reported one by one`);
    super.onMembersRemoved(id, members);
  }
  afterFlush(calc: IPSetMemberCalculator): void {
    for (const id of this.#pending) this.sets.set(id, new Set(calc.members(id)));
    this.#pending.clear();
  }
}

const SELECTORS = ["app == 'a'", "app == 'b'", 'has(tier)', "env == 'prod'", "app == 'a' && env != 'prod'", 'all()'];
const ADDRS = ['10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32', '10.1.0.0/16', 'fd00::1/128', 'fd00::2/128'];
const PORTS: EndpointPort[] = [
  { name: 'http', protocol: 'tcp', port: 80 },
  { name: 'http', protocol: 'tcp', port: 8080 },
  { name: 'dns', protocol: 17, port: 53 },
];

function setData(n: number): IPSetData {
  const text = SELECTORS[n % SELECTORS.length] as string;
  const selector = parseSelector(text);
  if (n < SELECTORS.length) return { uid: `s${n}`, type: 'NET', selector };
  const [namedPort, namedPortProtocol] = n % 2 ? ['http', 'tcp'] : ['dns', 'udp'];
  return {
    uid: `n${n}`,
    type: 'IP_AND_PORT',
    selector,
    namedPort,
    namedPortProtocol: namedPortProtocol as 'tcp' | 'udp',
  };
}

function expected(
  sets: Map<string, IPSetData>,
  sources: Map<string, MemberSource>,
  profiles: Map<string, Record<string, string>>,
) {
  const out = new Map<string, Set<string>>();
  for (const [uid, set] of sets) {
    const members = new Set<string>();
    for (const src of sources.values()) {
      const labels: Record<string, string> = {};
      for (const p of [...src.parents].reverse()) Object.assign(labels, profiles.get(p) ?? {});
      Object.assign(labels, src.labels);
      if (!set.selector?.evaluate(labels)) continue;
      if (!set.namedPort) {
        for (const n of src.nets) members.add(n);
        continue;
      }
      for (const p of src.ports) {
        const proto =
          typeof p.protocol === 'number' ? ({ 6: 'tcp', 17: 'udp' } as Record<number, string>)[p.protocol] : p.protocol;
        if (p.name !== set.namedPort || proto !== set.namedPortProtocol) continue;
        for (const n of src.nets) {
          const [a, len] = n.split('/');
          if ((len === '32' && !a?.includes(':')) || len === '128')
            members.add(`${a},${set.namedPortProtocol}:${p.port}`);
        }
      }
    }
    out.set(uid, members);
  }
  return out;
}

function run(seed: number, steps: number, drainWords?: number, whole = false): void {
  const rng = new Rng(seed);
  const rec = whole ? new WholeSetRecorder() : new Recorder();
  const calc = new IPSetMemberCalculator(rec, drainWords);
  const sets = new Map<string, IPSetData>();
  const sources = new Map<string, MemberSource>();
  const profiles = new Map<string, Record<string, string>>();
  for (let step = 0; step < steps; step++) {
    const r = rng.next();
    if (r < 0.45) {
      const labels: Record<string, string> = {};
      if (rng.chance(0.7)) labels.app = rng.pick(['a', 'b', 'c']);
      if (rng.chance(0.3)) labels.tier = 'x';
      const nets = ADDRS.filter(() => rng.chance(0.3));
      const ports = PORTS.filter(() => rng.chance(0.4));
      const parents = rng.chance(0.5) ? [rng.pick(['p1', 'p2'])] : [];
      const src = { labels, parents, nets, ports };
      const key = `src${rng.int(12)}`;
      sources.set(key, src);
      calc.onSourceUpdate(key, src);
    } else if (r < 0.6) {
      const key = `src${rng.int(12)}`;
      sources.delete(key);
      calc.onSourceRemove(key);
    } else if (r < 0.8) {
      const data = setData(rng.int(SELECTORS.length * 2));
      const old = sets.get(data.uid);
      if (old && rng.chance(0.5)) {
        sets.delete(data.uid);
        calc.onIPSetInactive(old);
      } else if (!old) {
        sets.set(data.uid, data);
        calc.onIPSetActive(data);
      } else {
        // Deactivated and re-activated in one batch.
        calc.onIPSetInactive(old);
        calc.onIPSetActive(data);
        sets.set(data.uid, data);
      }
    } else if (r < 0.9) {
      const name = rng.pick(['p1', 'p2']);
      const labels = rng.chance(0.2) ? undefined : { env: rng.pick(['prod', 'dev']) };
      if (labels) profiles.set(name, labels);
      else profiles.delete(name);
      calc.onProfileLabels(name, labels);
    } else {
      calc.flush();
      if (rec instanceof WholeSetRecorder) rec.afterFlush(calc);
      assert.deepEqual(rec.sets, expected(sets, sources, profiles), `seed ${seed} step ${step}`);
    }
  }
  calc.flush();
  if (rec instanceof WholeSetRecorder) rec.afterFlush(calc);
  assert.deepEqual(rec.sets, expected(sets, sources, profiles), `seed ${seed} final`);
}

describe('calc: IPSetMemberCalculator', () => {
  it('matches a brute-force recomputation over 200 random histories', () => {
    for (let seed = 1; seed <= 200; seed++) run(seed, 150);
  });

  it('gives the same results when the index is drained early, mid-batch', () => {
    for (let seed = 1; seed <= 200; seed++) run(seed, 150, 1 + (seed % 40));
  });

  it('reports no member of a new set one by one to a listener that reads new sets whole', () => {
    for (let seed = 1; seed <= 200; seed++) run(seed, 150, seed % 2 ? undefined : 1 + (seed % 40), true);
  });
});
