// The lists an apply's plan walks (the names to compare, the chains to write in table
// order), built with a turn for the event loop every LIST_CHUNK entries: a cold node of
// 100,000 rules has 17,500 chains, and building these lists at once (a union of both
// states' names, the wanted chains, a sort by table with a comparator) held the loop for
// ~20 ms (`bench dataplane`'s cold_100k_longest_blocks, with its CPU profile).
import { TABLES } from '../../render/model.js';
import type { DesiredChain } from './desired.js';

const LIST_CHUNK = 1024;

type Built<T> = Generator<void, T, undefined>;

/** The names of both lists, each once, in order. */
export function* unionSteps(a: Iterable<string>, b: Iterable<string>): Built<Set<string>> {
  const out = new Set<string>();
  let n = 0;
  for (const list of [a, b])
    for (const name of list) {
      out.add(name);
      if (++n % LIST_CHUNK === 0) yield;
    }
  return out;
}

/** The entries of `m` that `names` names (those it has), in the names' order. */
export function* pickSteps<T>(names: Iterable<string>, m: ReadonlyMap<string, T>): Built<T[]> {
  const out: T[] = [];
  let n = 0;
  for (const name of names) {
    const x = m.get(name);
    if (x !== undefined) out.push(x);
    if (++n % LIST_CHUNK === 0) yield;
  }
  return out;
}

/**
 * The chains (those `keep` keeps) in TABLES order, each table's in their given order: what
 * a stable sort by table gives, in one pass and without a comparator.
 */
export function* byTableSteps(
  chains: Iterable<DesiredChain>,
  keep: (ch: DesiredChain) => boolean = () => true,
): Built<DesiredChain[]> {
  const buckets: DesiredChain[][] = TABLES.map(() => []);
  let n = 0;
  for (const ch of chains) {
    if (keep(ch)) (buckets[TABLES.indexOf(ch.table)] as DesiredChain[]).push(ch);
    if (++n % LIST_CHUNK === 0) yield;
  }
  const out: DesiredChain[] = [];
  for (const b of buckets) {
    for (const ch of b) {
      out.push(ch);
      if (++n % LIST_CHUNK === 0) yield;
    }
  }
  return out;
}

/** The chains with the base chains last, each group in its given order. */
export function* baseLastSteps(chains: readonly DesiredChain[]): Built<DesiredChain[]> {
  const out: DesiredChain[] = [];
  const bases: DesiredChain[] = [];
  for (let i = 0; i < chains.length; i++) {
    const ch = chains[i] as DesiredChain;
    (ch.base ? bases : out).push(ch);
    if ((i + 1) % LIST_CHUNK === 0) yield;
  }
  for (const ch of bases) out.push(ch);
  return out;
}
