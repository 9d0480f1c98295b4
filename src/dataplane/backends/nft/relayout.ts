// A set whose layout changes: a set of host addresses (a plain set, see desired.ts)
// gains its first network member and becomes an interval set, or loses its last and
// becomes a plain one again. The kernel cannot change a set's flags, and refuses to
// delete a set a rule still uses. So the plan, in one transaction, first empties every
// chain whose rules may use such a set, then deletes the set and creates it anew, then
// writes those chains again: the same atomic swap as any other apply.
import type { Family } from '../../render/model.js';
import { nftSetName } from '../../render/names.js';
import type { Steps } from '../../slicer.js';
import { type CommittedFamily, sameList } from './committed.js';
import { type DesiredChain, type DesiredFamily, type DesiredSet, layoutOf } from './desired.js';
import type { PlanSink } from './sinks.js';

/** Whether the committed state holds `s` (if at all) in another layout than desired. */
export const otherLayout = (c: CommittedFamily, s: DesiredSet) => c.layouts.get(s.name) !== layoutOf(s.spec);

/** The sets of `sets` the kernel holds in another layout. */
export function relaidSets(sets: readonly DesiredSet[], c: CommittedFamily): Set<string> {
  const out = new Set<string>();
  for (const s of sets) if (c.sets.has(s.name) && otherLayout(c, s)) out.add(s.name);
  return out;
}

/** Whether a chain's rules name one of `sets`. */
function usesAny(ch: DesiredChain, sets: ReadonlySet<string>): boolean {
  for (const r of ch.rules)
    for (const m of r.match) if ((m.k === 'set' || m.k === 'ipPortSet') && sets.has(nftSetName(m.set))) return true;
  return false;
}

/**
 * Empties every chain in the kernel that may use one of `relaid`: one whose rules use it,
 * and every chain whose committed rules are not the desired ones (what they use is not
 * known; they are rewritten or deleted in this transaction anyway). Adds the chains it
 * empties to `emptied`; the plan writes the desired ones again. Steps: one per 256 chains.
 */
export function* emptyUsers(
  w: PlanSink,
  d: DesiredFamily,
  c: CommittedFamily,
  table: string,
  relaid: ReadonlySet<string>,
  emptied: Set<string>,
): Steps {
  const f: Family = d.family;
  let n = 0;
  for (const [name, had] of c.chains) {
    if ((++n & 255) === 0) yield;
    if (!had.length) continue;
    const ch = d.chains.get(name);
    if (ch && sameList(had, ch.hashes) && !usesAny(ch, relaid)) continue;
    w.chainFlush(f, table, name);
    emptied.add(name);
  }
}
