// A refresh that runs beside applies instead of stopping them. A read-back used to be
// part of an apply: at 250,000 set elements the dump and its parse held every update
// for seconds. Here the table is read in parts, each between two commits (a commit
// waits for one part at most; a plain set's elements are read beside commits and
// screened, screenSet), and each part is compared, sliced, while applies go on.
// What it compares is the kernel against what we committed, not against the desired
// state: everything an apply writes after the check began is marked as touched (a
// chain, a set created or deleted, a set's elements by id) and left out, since the
// dump may predate it. What differs otherwise was changed behind our back: the next
// apply adopts the dumped content for those names and repairs them.
import { StringMap } from '../../../collections/string-map.js';
import type { NftDump } from '../../../native/nft.js';
import type { Family } from '../../render/model.js';
import { baseOf, chainHashes, type CommittedFamily, dumpedElem, dumpedElems, sameList } from './committed.js';
import { SET_FLAG } from './consts.js';
import { type DesiredFamily, elemId } from './desired.js';
import { otherLayout } from './relayout.js';
import type { ElemSpec } from './op-writer.js';
import type { Steps } from '../../slicer.js';

/** What applies wrote to one family since a check began. */
export class Touched {
  readonly chains = new Set<string>();
  /** Per set: the element ids written, or true (the set was created or deleted). */
  readonly sets = new Map<string, Set<string> | true>();
  /** An apply compared and wrote everything (after a read-back or a rebuild): the dump is stale. */
  whole = false;

  /**
   * An apply is about to record `d`'s changes as committed (`full`: everything). Called
   * before the committed state changes, so whatever changed is already marked. Marked is
   * what the apply wrote: a chain it rewrote, a set's elements it added or removed (a set
   * compared whole writes only the difference, so only that is marked), a set it created
   * or deleted whole.
   */
  recording(d: DesiredFamily, c: CommittedFamily | undefined, full: boolean): void {
    if (full || !d.dirty || !c) {
      this.whole = true;
      return;
    }
    for (const name of d.dirty.chains) {
      const ch = d.chains.get(name);
      const declared = ch?.base && c.bases.get(name);
      if (!ch || !sameList(c.chains.get(name), ch.hashes) || (declared && declared !== baseOf(ch.base!)))
        this.chains.add(name);
    }
    for (const name of d.dirty.sets) {
      const s = d.sets.get(name);
      const had = c.sets.get(name);
      const marks = this.sets.get(name);
      if (marks === true) continue;
      // Created, deleted, or deleted and created anew in another layout.
      if (!s || !had || otherLayout(c, s)) {
        this.sets.set(name, true);
        continue;
      }
      const ids = marks ?? new Set<string>();
      this.sets.set(name, ids);
      if (s.delta) {
        for (const id of s.delta.removed.keys()) ids.add(id);
        for (const id of s.delta.added.keys()) ids.add(id);
        continue;
      }
      for (const id of had.keys()) if (!s.elems.has(id)) ids.add(id);
      for (const id of s.elems.keys()) if (!had.has(id)) ids.add(id);
    }
  }
}

/** The dumped content of what drifted (undefined: absent from the kernel). */
export interface Patch {
  chains: Map<string, string[] | undefined>;
  bases: Map<string, string>;
  sets: Map<string, StringMap<ElemSpec> | undefined>;
  /** The layouts of the dumped sets in `sets`. */
  layouts: Map<string, number>;
}

export const emptyPatch = (): Patch => ({ chains: new Map(), bases: new Map(), sets: new Map(), layouts: new Map() });

export interface CheckReport {
  family: Family;
  chains: string[];
  sets: string[];
}

/**
 * The catalogue (chains with their hooks, set headers) against the committed state:
 * chains and sets we committed that the kernel no longer has, and base chains declared
 * otherwise than desired. Chains and sets only the kernel has are found by their parts.
 */
export function compareCatalogue(
  cat: NftDump,
  c: CommittedFamily,
  t: Touched,
  d: DesiredFamily,
  out: CheckReport,
  patch: Patch,
): void {
  const chains = new Set<string>();
  for (const ch of cat.chains) {
    chains.add(ch.name);
    const want = d.chains.get(ch.name)?.base;
    if (ch.hook === undefined || !want || baseOf(ch) === baseOf(want) || t.chains.has(ch.name)) continue;
    out.chains.push(ch.name);
    patch.chains.set(ch.name, c.chains.get(ch.name));
    patch.bases.set(ch.name, baseOf(ch));
  }
  for (const name of c.chains.keys())
    if (!chains.has(name) && !t.chains.has(name)) {
      out.chains.push(name);
      patch.chains.set(name, undefined);
    }
  const sets = new Set(cat.sets.map((s) => s.name));
  for (const name of c.sets.keys())
    if (!sets.has(name) && !t.sets.has(name)) {
      out.sets.push(name);
      patch.sets.set(name, undefined);
    }
}

/**
 * A part's chains (their rules) against the committed state. Steps: per 1,024 rules.
 * Between steps applies may record; a chain is judged against the committed state and
 * the touched marks of the step that judges it.
 */
export function* compareRules(part: NftDump, c: CommittedFamily, t: Touched, out: CheckReport, patch: Patch): Steps {
  const lists: string[][] = [];
  yield* chainHashes(part, lists);
  for (let i = 0; i < part.chains.length; i++) {
    const ch = part.chains[i]!;
    if (t.whole) return;
    if (t.chains.has(ch.name)) continue;
    // (A chain gone since the catalogue lists no rules: it differs, and the repair's
    // commit fails, so the retry reads everything back.)
    const had = c.chains.get(ch.name);
    const hashes = lists[i] as string[];
    if (sameList(had, hashes)) continue;
    // (A base chain the catalogue found misdeclared is reported once, with its rules as dumped.)
    if (!patch.chains.has(ch.name)) out.chains.push(ch.name);
    patch.chains.set(ch.name, hashes);
  }
}

/** A part's set (its elements; `flags` from the catalogue) against the committed state. */
export function* compareSet(
  s: NftDump['sets'][number],
  c: CommittedFamily,
  t: Touched,
  out: CheckReport,
  patch: Patch,
): Steps {
  if (s.gone) {
    if (c.sets.has(s.name) && !t.sets.has(s.name)) {
      out.sets.push(s.name);
      patch.sets.set(s.name, undefined);
    }
    return;
  }
  const layout = s.flags & SET_FLAG.interval;
  if (!relaid(s, c, t) && !(yield* setDrifted(s, c, t))) return;
  out.sets.push(s.name);
  const elems = new StringMap<ElemSpec>();
  yield* dumpedElems(s, elems);
  patch.sets.set(s.name, elems);
  patch.layouts.set(s.name, layout);
}

// A set re-created behind our back in another layout has drifted whatever it holds.
function relaid(s: NftDump['sets'][number], c: CommittedFamily, t: Touched): boolean {
  return c.sets.has(s.name) && !t.sets.has(s.name) && c.layouts.get(s.name) !== (s.flags & SET_FLAG.interval);
}

/**
 * Committed elements a screened set may leave unlisted, to be asked for one by one
 * (about 2 µs each); a set missing more is read again whole, holding commits back.
 */
export const ASK_MAX = 4096;

/**
 * A plain set (no map, no intervals; `flags` from the catalogue) dumped beside commits,
 * which the kernel lets skip elements: it resumes a dump by counting elements from the
 * set's start, and a commit between two parts of it moves what the count lands on.
 * What it lists is true (each element was there at some moment), so an untouched element
 * we did not commit is drift. A committed element it does not list is only pushed to
 * `missing`, to be asked for (confirmedMissing). True: drifted, or more than ASK_MAX
 * missing; the set is then read again holding commits back, and compared as compareSet does.
 */
export function* screenSet(
  s: NftDump['sets'][number],
  c: CommittedFamily,
  t: Touched,
  missing: string[],
): Generator<void, boolean> {
  if (s.gone) return c.sets.has(s.name) && !t.sets.has(s.name);
  return relaid(s, c, t) || (yield* setDrifted(s, c, t, missing));
}

/** The committed keys (hex) of screenSet's missing ids; ids recorded as removed since are left out. */
export function missingKeys(
  name: string,
  ids: readonly string[],
  c: CommittedFamily,
): { ids: string[]; keys: string[] } {
  const have = c.sets.get(name);
  const out = { ids: [] as string[], keys: [] as string[] };
  for (const id of ids) {
    const e = have?.get(id);
    if (!e) continue;
    out.ids.push(id);
    out.keys.push(e.key);
  }
  return out;
}

/** After asking: whether an element the kernel lacks is still committed and untouched (then the set drifted). */
export function confirmedMissing(
  name: string,
  ids: readonly string[],
  present: readonly boolean[],
  c: CommittedFamily,
  t: Touched,
): boolean {
  const marks = t.sets.get(name);
  if (marks === true || t.whole) return false;
  const have = c.sets.get(name);
  return ids.some((id, i) => !present[i] && !marks?.has(id) && have?.has(id) === true);
}

/**
 * Whether a dumped set differs from the committed one outside the touched elements: every
 * untouched dumped element is committed, and every untouched committed one was dumped.
 * Each element is judged in the step that reads it, against the committed state and
 * the touched marks of that moment (an element changed later is marked by then). With
 * `missing` (screenSet), committed elements not dumped are pushed there, up to ASK_MAX.
 */
function* setDrifted(
  s: NftDump['sets'][number],
  c: CommittedFamily,
  t: Touched,
  missing?: string[],
): Generator<void, boolean> {
  const seen = new Set<string>();
  for (let j = 0; j < s.elements.count; j++) {
    if ((j & 1023) === 1023) yield;
    const marks = t.sets.get(s.name);
    if (marks === true || t.whole) return false;
    const have = c.sets.get(s.name);
    const spec = dumpedElem(s, j);
    if (!spec) continue;
    const id = elemId(spec);
    seen.add(id);
    if (!marks?.has(id) && !have?.has(id)) return true;
  }
  const have = c.sets.get(s.name);
  if (!have) return !t.sets.has(s.name);
  let n = 0;
  // Live iteration: an element recorded between steps is marked, so skipped.
  for (const id of have.keys()) {
    if ((++n & 1023) === 0) yield;
    const marks = t.sets.get(s.name);
    if (marks === true || t.whole || c.sets.get(s.name) !== have) return false;
    if (marks?.has(id) || seen.has(id)) continue;
    if (!missing || missing.length >= ASK_MAX) return true;
    missing.push(id);
  }
  return false;
}

/**
 * At the start of the apply after a check: what drifted becomes the committed state for
 * its names (so that apply's plan writes the difference) and is marked dirty, its sets
 * to be compared whole. Names an apply wrote whole since are already right; a set's
 * elements written since take the committed value.
 */
export function adoptPatch(c: CommittedFamily, t: Touched, patch: Patch, d: DesiredFamily): number {
  if (c.full || !d.dirty || t.whole) return 0;
  let n = 0;
  for (const [name, hashes] of patch.chains) {
    if (t.chains.has(name)) continue;
    if (hashes) c.chains.set(name, hashes);
    else c.chains.delete(name);
    const base = patch.bases.get(name);
    if (base !== undefined) c.bases.set(name, base);
    d.dirty.chains.add(name);
    n++;
  }
  for (const [name, dumped] of patch.sets) {
    const marks = t.sets.get(name);
    if (marks === true) continue;
    const have = c.sets.get(name);
    if (dumped) {
      for (const id of marks ?? []) {
        const e = have?.get(id);
        if (e) dumped.set(id, e);
        else dumped.delete(id);
      }
      c.sets.set(name, dumped);
      c.layouts.set(name, patch.layouts.get(name) ?? 0);
    } else {
      c.sets.delete(name);
      c.layouts.delete(name);
    }
    d.dirty.sets.add(name);
    const s = d.sets.get(name);
    if (s) s.delta = undefined;
    n++;
  }
  return n;
}
