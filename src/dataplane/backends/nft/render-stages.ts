// A cold start's staged transactions (backend.ts STAGE_RULES), planned from the chains as
// the render puts them, so the kernel commits one part while the event loop renders the
// next (a cold render of 29,000 rules is ~300 ms of the loop, which otherwise all came
// before the first commit). A part holds what the kernel can take before the rest
// exists: the sets rendered so far, and chains whose jumps and lookups name chains and
// sets written before or in the same part; another waits for a later part. A chain that
// dispatches through a verdict map (whose elements come with the workloads), or names
// what is never rendered, is left for the apply, which compares everything with what the
// parts committed, as after any staged transaction; so is a chain the render put again
// after its part was planned.
import { nftSetName } from '../../render/names.js';
import type { Action } from '../../render/model.js';
import type { Steps } from '../../slicer.js';
import type { CommittedFamily } from './committed.js';
import { type DesiredChain, type DesiredFamily, type DesiredSet, layoutOf } from './desired.js';
import type { PlanSink } from './sinks.js';
import { nftChainName } from './text.js';
import { type ApplyStats, isMap, writeNewSet, writeRules } from './writes.js';

/** The chains (nft names) a chain's rules jump to and the sets they look up. */
interface Refs {
  chains: readonly string[];
  sets: readonly string[];
}

const NONE: readonly string[] = [];

/** A chain's references, or undefined when a rule dispatches through a verdict map (the parts do not write maps). */
function refsOf(ch: DesiredChain): Refs | undefined {
  let chains: string[] | undefined;
  let sets: string[] | undefined;
  for (const r of ch.rules) {
    const a = r.action;
    if (a.k === 'vmap') return undefined;
    const to = targetOf(a);
    if (to !== undefined) (chains ??= []).push(nftChainName(ch.table, to));
    for (const m of r.match) if (m.k === 'set' || m.k === 'ipPortSet') (sets ??= []).push(nftSetName(m.set));
  }
  return { chains: chains ?? NONE, sets: sets ?? NONE };
}

/** An action's jump or goto target, a mark's verdict's included. */
function targetOf(a: Action): string | undefined {
  if (a.k === 'jump' || a.k === 'goto') return a.chain;
  return a.k === 'setMark' && a.then ? targetOf(a.then) : undefined;
}

/** The elements of the family's sets (verdict maps aside); undefined: it has none yet. */
function setElements(d: DesiredFamily): number | undefined {
  let n: number | undefined;
  for (const s of d.sets.values()) if (!isMap(s)) n = (n ?? 0) + s.elems.size;
  return n;
}

export class RenderStages {
  readonly #d: DesiredFamily;
  readonly #c: CommittedFamily;
  readonly #table: string;
  readonly #stageRules: number;
  /** Chains put since the last part, in order, and their rules (as put). */
  readonly #pending = new Set<string>();
  /**
   * The references of each chain pending or waiting, read when it was put (the render's
   * slices pay for them a chain at a time; read at a part, 1,366 chains held the loop
   * 4.5-9 ms in one step). Read again when the chain the render holds is another object.
   */
  readonly #refs = new Map<string, { ch: DesiredChain; refs: Refs | undefined }>();
  #pendingRules = 0;
  /** Chains that name a chain or a set not written yet, tried again with each part. */
  readonly #waiting = new Set<string>();
  /** Chains a part wrote, with their rules: a later put is the apply's to compare. */
  readonly #written = new Set<string>();
  /** Sets the parts wrote, as the objects they wrote. */
  readonly #sets = new Map<string, DesiredSet>();
  #parts = 0;
  /** Whether the sets go in a part ahead of the chains (decided at the first chain after them). */
  #setsFirst: boolean | undefined;

  constructor(d: DesiredFamily, c: CommittedFamily, table: string, stageRules: number) {
    this.#d = d;
    this.#c = c;
    this.#table = table;
    this.#stageRules = stageRules;
  }

  /** The render put a chain (desired-builder's putChain). */
  put(name: string, ch: DesiredChain): void {
    // The render puts the IP sets before the chains that use them (rebuildSteps). Sets
    // with as many elements as a part has rules go ahead at the first chain after them:
    // they are the biggest single piece of the kernel's work.
    if (!this.#parts && this.#setsFirst === undefined) {
      const n = setElements(this.#d);
      if (n !== undefined) this.#setsFirst = n >= this.#stageRules;
    }
    if (ch.base || this.#written.has(name)) return;
    this.#refs.set(name, { ch, refs: refsOf(ch) });
    if (this.#pending.has(name) || this.#waiting.has(name)) return;
    this.#pending.add(name);
    this.#pendingRules += ch.rules.length;
  }

  /** Enough rules for a part. */
  get ready(): boolean {
    return this.#pendingRules >= this.#stageRules || (!!this.#setsFirst && !this.#parts);
  }

  /** Parts planned so far. */
  get parts(): number {
    return this.#parts;
  }

  /**
   * Plans the next part: the sets rendered since the last one (the first part also
   * writes the table), then the chains put since it that the kernel can take. Returns
   * the record of what it commits, for the committed state once it has landed.
   */
  *plan(w: PlanSink, stats: ApplyStats): Generator<void, () => Steps, undefined> {
    const f = this.#d.family;
    const first = this.#parts++ === 0;
    if (first && !this.#c.exists) w.tableAdd(f, this.#table);
    // Sets as the render completes them (it puts a set once its elements are all in).
    const sets: DesiredSet[] = [];
    for (const s of this.#d.sets.values()) {
      if (isMap(s) || this.#sets.has(s.name)) continue;
      yield* writeNewSet(w, f, this.#table, s, stats);
      this.#sets.set(s.name, s);
      sets.push(s);
    }
    const chains = yield* this.#takeReady();
    // All created first: a rule may jump to a chain written after it in the part.
    for (let i = 0; i < chains.length; i++) {
      w.chainAdd(f, this.#table, (chains[i] as DesiredChain).name);
      if ((i & 255) === 255) yield;
    }
    yield;
    for (const ch of chains) {
      this.#written.add(ch.name);
      yield* writeRules(w, f, this.#table, ch, stats);
    }
    return () => this.#record(first, sets, chains);
  }

  // The chains the kernel can take now, from those put since the last part and those
  // still waiting. One that jumps to a chain neither written nor taken with it, or looks
  // up a set not written, waits for a later part (the render may put them later); one
  // that dispatches through a verdict map is the apply's.
  *#takeReady(): Generator<void, DesiredChain[], undefined> {
    const names = new Map<string, { ch: DesiredChain; refs: Refs }>();
    let n = 0;
    for (const list of [this.#waiting, this.#pending])
      for (const name of list) {
        const ch = this.#d.chains.get(name);
        if (!ch) continue;
        const put = this.#refs.get(name);
        const refs = put?.ch === ch ? put.refs : refsOf(ch);
        if (refs) names.set(name, { ch, refs });
        if ((++n & 255) === 0) yield;
      }
    this.#pending.clear();
    this.#pendingRules = 0;
    this.#waiting.clear();
    // Until no chain is dropped: a dropped one may be another's target.
    for (let dropped = true; dropped; ) {
      dropped = false;
      for (const [name, { refs }] of names) {
        if ((++n & 1023) === 0) yield;
        if (this.#canTake(refs, names)) continue;
        names.delete(name);
        this.#waiting.add(name);
        dropped = true;
      }
    }
    for (const name of this.#refs.keys()) if (!this.#waiting.has(name)) this.#refs.delete(name);
    return [...names.values()].map((x) => x.ch);
  }

  // Whether every chain the rules jump to is written or among `names`, and every set they
  // look up is written.
  #canTake(refs: Refs, names: ReadonlyMap<string, unknown>): boolean {
    for (const c of refs.chains) if (!this.#written.has(c) && !names.has(c)) return false;
    for (const s of refs.sets) if (!this.#sets.has(s)) return false;
    return true;
  }

  /**
   * The sets the parts wrote that the render has not replaced since (the apply compares
   * the others whole). A set changes by member deltas only after the render.
   */
  stagedSets(): Set<string> {
    const out = new Set<string>();
    for (const [name, s] of this.#sets) if (this.#d.sets.get(name) === s && !s.delta) out.add(name);
    return out;
  }

  // A turn of the loop after each set (the first part copies nearly every IP set's elements).
  *#record(first: boolean, sets: DesiredSet[], chains: DesiredChain[]): Steps {
    const c = this.#c;
    if (first) c.exists = true;
    for (const s of sets) {
      c.layouts.set(s.name, layoutOf(s.spec));
      c.sets.set(s.name, s.elems.clone());
      yield;
    }
    for (const ch of chains) c.chains.set(ch.name, ch.hashes);
  }
}
