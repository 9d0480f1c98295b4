// A cold apply in stages (backend.ts, STAGE_RULES): what the render has made so far is
// committed while the render goes on, so the kernel's work runs beside the render and
// the planning instead of after them. Only what no hook reaches is staged: chains other
// than base chains, with the sets and the jump targets their rules name (a target not
// staged yet is created empty). A chain whose rules name a verdict map, or a set or a
// chain not rendered yet, is left for the last transaction, as is what the render makes after the
// last part. That transaction is planned as any apply is, against what the staged parts
// recorded, so a chain or set the render changed after it was staged is written again.
import type { Action, Family, Rule } from '../../render/model.js';
import { nftSetName } from '../../render/names.js';
import type { CommittedFamily } from './committed.js';
import { SET_FLAG } from './consts.js';
import { type DesiredChain, type DesiredFamily, type DesiredSet, layoutOf } from './desired.js';
import type { ElemSpec } from './op-writer.js';
import type { PlanSink } from './sinks.js';
import { nftChainName } from './text.js';
import type { Steps } from '../../slicer.js';

/** Set elements per op (a set may hold every endpoint of the cluster). */
export const ELEM_CHUNK = 1024;
/** Elements copied between two turns of the event loop. */
export const COMPARE_CHUNK = 8192;

export const isMap = (s: DesiredSet) => (s.spec.flags & SET_FLAG.map) !== 0;

/** Writes elements ELEM_CHUNK to an op, a step each. */
export function* writeElems(w: PlanSink, add: boolean, f: Family, t: string, name: string, list: ElemSpec[]): Steps {
  for (let i = 0; i < list.length; i += ELEM_CHUNK) {
    w.elems(add, f, t, name, 0, list.length <= ELEM_CHUNK ? list : list.slice(i, i + ELEM_CHUNK));
    yield;
  }
}

/** Creates a set with its elements (the kernel wants a transaction-unique id on every new set, named or not). */
export function* writeNewSet(w: PlanSink, f: Family, t: string, s: DesiredSet, counts: { elemsAdded: number }): Steps {
  w.setAdd(f, t, s.name, w.nextSetId(), s.spec);
  yield* writeElems(w, true, f, t, s.name, [...s.elems.values()]);
  counts.elemsAdded += s.elems.size;
}

// A set's elements copied as committed, with a turn for the loop every COMPARE_CHUNK
// (one Map copy of a 500,000-element set held the loop for tens of ms).
export function* copyElems(elems: Map<string, ElemSpec>): Generator<void, Map<string, ElemSpec>, undefined> {
  const copy = new Map<string, ElemSpec>();
  let i = 0;
  for (const [id, e] of elems) {
    copy.set(id, e);
    if (++i % COMPARE_CHUNK === 0) yield;
  }
  return copy;
}

/** What one staged transaction wrote, for the record once it has committed. */
export interface StagedPart {
  table: boolean;
  sets: Array<{ name: string; layout: number; elems: Map<string, ElemSpec> }>;
  /** Jump targets created empty. */
  empty: string[];
  /** Chains written whole, with their rules' hashes. */
  chains: Array<[string, string[]]>;
}

export interface StageCounts {
  chainsWritten: number;
  rulesWritten: number;
  elemsAdded: number;
}

/** A part's commit, recorded: the committed state then holds what it wrote. */
export function recordPart(c: CommittedFamily, part: StagedPart): void {
  if (part.table) c.exists = true;
  for (const s of part.sets) {
    c.layouts.set(s.name, s.layout);
    c.sets.set(s.name, s.elems);
  }
  for (const name of part.empty) if (!c.chains.has(name)) c.chains.set(name, []);
  for (const [name, hashes] of part.chains) c.chains.set(name, hashes);
}

/** The sets and chains a chain's rules name; undefined when one is a verdict map (left for the last transaction). */
function references(ch: DesiredChain): { sets: string[]; targets: string[] } | undefined {
  const sets: string[] = [];
  const targets: string[] = [];
  const verdict = (a: Action | undefined): boolean => {
    if (!a) return true;
    if (a.k === 'vmap') return false;
    if (a.k === 'jump' || a.k === 'goto') targets.push(nftChainName(ch.table, a.chain));
    return a.k === 'setMark' ? verdict(a.then) : true;
  };
  for (const r of ch.rules as Rule[]) {
    for (const m of r.match) if (m.k === 'set' || m.k === 'ipPortSet') sets.push(nftSetName(m.set));
    if (!verdict(r.action)) return undefined;
  }
  return { sets, targets };
}

export class ColdStager {
  readonly #d: DesiredFamily;
  readonly #table: string;
  readonly #stageRules: number;
  /** Created in the kernel by a staged part (sent; recorded when it commits). */
  readonly #sets = new Set<string>();
  readonly #chains = new Set<string>();
  #tableAdded: boolean;
  /** The render's chains, followed as it adds them (a Map's iterator sees later entries until it is exhausted). */
  #iter: Iterator<DesiredChain> | undefined;
  #seen = 0;
  readonly #pending: DesiredChain[] = [];
  #pendingRules = 0;

  constructor(d: DesiredFamily, c: CommittedFamily, table: string, stageRules: number) {
    this.#d = d;
    this.#table = table;
    this.#stageRules = stageRules;
    this.#tableAdded = c.exists;
  }

  /** Takes in the chains rendered since the last call; whether a part is due. */
  due(): boolean {
    const chains = this.#d.chains;
    this.#iter ??= chains.values();
    // Never past the last entry: an exhausted iterator would not see what the render adds next.
    while (this.#seen < chains.size) {
      const r = this.#iter.next();
      if (r.done) break;
      this.#seen++;
      if (r.value.base) continue;
      this.#pending.push(r.value);
      this.#pendingRules += r.value.rules.length;
    }
    return this.#pendingRules >= this.#stageRules;
  }

  /** Plans the next part (whole chains, about STAGE_RULES rules) into `w`; what it wrote, undefined if nothing. */
  *plan(w: PlanSink, counts: StageCounts): Generator<void, StagedPart | undefined, undefined> {
    const f = this.#d.family;
    const t = this.#table;
    const part: StagedPart = { table: false, sets: [], empty: [], chains: [] };
    let rules = 0;
    while (this.#pending.length && rules < this.#stageRules) {
      const ch = this.#pending.shift() as DesiredChain;
      this.#pendingRules -= ch.rules.length;
      const refs = references(ch);
      if (!refs) continue;
      const sets = refs.sets.map((name) => this.#d.sets.get(name));
      if (sets.some((s) => !s || isMap(s))) continue;
      // A jump may only name a chain the render has made, never a base chain.
      if (refs.targets.some((name) => !this.#d.chains.get(name) || this.#d.chains.get(name)?.base)) continue;
      if (!this.#tableAdded) {
        w.tableAdd(f, t);
        this.#tableAdded = part.table = true;
      }
      for (const s of sets as DesiredSet[]) {
        if (this.#sets.has(s.name)) continue;
        this.#sets.add(s.name);
        yield* writeNewSet(w, f, t, s, counts);
        part.sets.push({ name: s.name, layout: layoutOf(s.spec), elems: yield* copyElems(s.elems) });
      }
      for (const name of refs.targets) {
        if (this.#chains.has(name)) continue;
        this.#chains.add(name);
        w.chainAdd(f, t, name);
        if (name !== ch.name) part.empty.push(name);
      }
      if (!this.#chains.has(ch.name)) {
        this.#chains.add(ch.name);
        w.chainAdd(f, t, ch.name);
      }
      for (let i = 0; i < ch.rules.length; i++) {
        w.rule(f, t, ch, i);
        if ((i & 63) === 63) yield;
      }
      part.chains.push([ch.name, ch.hashes]);
      rules += ch.rules.length;
      counts.chainsWritten++;
      counts.rulesWritten += ch.rules.length;
      yield;
    }
    return part.chains.length ? part : undefined;
  }
}
