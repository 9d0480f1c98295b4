// What every transaction of the nftables backend is written with: a set created with its
// elements, a chain's rules, elements in chunks, each a step for a Slicer; and the
// counters they keep.
import type { Family } from '../../render/model.js';
import { noStats, type RulesApplyStats } from '../rules-backend.js';
import type { Steps } from '../../slicer.js';
import { SET_FLAG } from './consts.js';
import type { DesiredChain, DesiredSet } from './desired.js';
import type { ElemSpec } from './op-writer.js';
import type { PlanSink } from './sinks.js';

/** Set elements per planning step (a set may hold every endpoint of the cluster). */
const ELEM_CHUNK = 1024;

/** The nftables transaction's counters: the common ones, and netlink messages and bytes. */
export interface ApplyStats extends RulesApplyStats {
  messages: number;
  bytes: number;
  /** Transactions committed: one, or a cold apply's staged ones and the last (STAGE_RULES). */
  transactions: number;
}

export const zeroStats = (): ApplyStats => ({ ...noStats(), messages: 0, bytes: 0, transactions: 0 });

/** Adds `b`'s counters to `a`'s. */
export function addStats(a: ApplyStats, b: ApplyStats): void {
  a.ops += b.ops;
  a.messages += b.messages;
  a.bytes += b.bytes;
  a.transactions += b.transactions;
  a.chainsWritten += b.chainsWritten;
  a.rulesWritten += b.rulesWritten;
  a.chainsDeleted += b.chainsDeleted;
  a.elemsAdded += b.elemsAdded;
  a.elemsRemoved += b.elemsRemoved;
  a.commitMs += b.commitMs;
}

export const isMap = (s: DesiredSet) => (s.spec.flags & SET_FLAG.map) !== 0;

/** Writes elements ELEM_CHUNK to an op, a step each. */
export function* writeElems(w: PlanSink, add: boolean, f: Family, t: string, name: string, list: ElemSpec[]): Steps {
  for (let i = 0; i < list.length; i += ELEM_CHUNK) {
    w.elems(add, f, t, name, 0, list.length <= ELEM_CHUNK ? list : list.slice(i, i + ELEM_CHUNK));
    yield;
  }
}

/** Writes a chain's rules into a chain that is empty (new or flushed): a step per 64 rules, and one after. */
export function* writeRules(w: PlanSink, f: Family, t: string, ch: DesiredChain, stats: ApplyStats): Steps {
  for (let i = 0; i < ch.rules.length; i++) {
    w.rule(f, t, ch, i);
    if ((i & 63) === 63) yield;
  }
  stats.chainsWritten++;
  stats.rulesWritten += ch.rules.length;
  yield;
}

/** Creates a set with its elements (the kernel wants a transaction-unique id on every new set, named or not). */
export function* writeNewSet(w: PlanSink, f: Family, t: string, s: DesiredSet, stats: ApplyStats): Steps {
  w.setAdd(f, t, s.name, w.nextSetId(), s.spec);
  yield* writeElems(w, true, f, t, s.name, [...s.elems.values()]);
  stats.elemsAdded += s.elems.size;
}
