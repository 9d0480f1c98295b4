// What the nftables backend believes the kernel holds in our table, per family: each
// chain's rule hashes, each set's elements and the base chains' declarations. An apply
// plans against it and records into it; a read-back replaces it (readBack) or, in a
// refresh that runs beside applies, is compared with it (check.ts). Also the readers a
// dump's columns need, shared by both.
import { StringMap } from '../../../collections/string-map.js';
import type { NftDump } from '../../../native/nft.js';
import type { RawPacked } from '../../../native/raw.js';
import { SET_FLAG } from './consts.js';
import { elemId } from './desired.js';
import { commentOf } from './exprs.js';
import type { ElemSpec } from './op-writer.js';
import type { Steps } from '../../slicer.js';

export interface CommittedFamily {
  exists: boolean;
  /** Chain -> its rules' hashes ("" for a rule that is not ours). */
  chains: Map<string, string[]>;
  sets: Map<string, StringMap<ElemSpec>>;
  /** Set -> its layout (its interval flag: desired.ts layoutOf), as created or read back. */
  layouts: Map<string, number>;
  /** Base chains as the kernel declares them ("hook/prio/type"), from the last read-back. */
  bases: Map<string, string>;
  /** Read back from the kernel since the last apply: compare everything next time. */
  full: boolean;
}

export const emptyCommitted = (): CommittedFamily => ({
  exists: false,
  chains: new Map(),
  sets: new Map(),
  layouts: new Map(),
  bases: new Map(),
  full: true,
});

/** Everything we set on a base chain: hook, priority, type and policy (we always write accept, 1). */
export const baseOf = (b: {
  hook?: number | undefined;
  prio?: number | undefined;
  type?: string | undefined;
  policy?: number | undefined;
}) => `${b.hook}/${b.prio}/${b.type}/${b.policy ?? 1}`;

export const sameList = (a: readonly string[] | undefined, b: readonly string[]) =>
  !!a && a.length === b.length && a.every((x, i) => x === b[i]);

type DumpSet = NftDump['sets'][number];

/** The i-th byte string of a packed column, as a view. */
function packedAt(p: RawPacked, i: number): Buffer {
  const start = i ? (p.ends[i - 1] as number) : 0;
  return Buffer.from(p.bytes.buffer, p.bytes.byteOffset + start, (p.ends[i] as number) - start);
}

/**
 * Each dumped chain's rule hashes, by the chain's index in the dump. Steps: one per
 * 1,024 rules.
 */
export function* chainHashes(dump: NftDump, lists: string[][]): Steps {
  for (let i = 0; i < dump.chains.length; i++) lists.push([]);
  const rules = dump.rules;
  for (let i = 0; i < rules.count; i++) {
    // "cali:<hash>;" and the rule's own comments (an older palisade wrote "cali:<hash>" alone).
    const hash = /^cali:([\w-]+)(;|$)/.exec(commentOf(packedAt(rules.udata, i)) ?? '')?.[1] ?? '';
    lists[rules.chain[i] as number]?.push(hash);
    if ((i & 1023) === 1023) yield;
  }
}

/** The j-th element of a dumped set, or undefined for nft's own zero interval end (it means nothing). */
export function dumpedElem(s: DumpSet, j: number): ElemSpec | undefined {
  const e = s.elements;
  const bytes = packedAt(e.keys, j);
  const flags = (e.flags[j] as number) & 1;
  if (s.flags & SET_FLAG.interval && flags && bytes.every((b) => b === 0)) return undefined;
  const chain = e.chain?.[j];
  return {
    key: bytes.toString('hex'),
    flags,
    verdict: chain === undefined ? undefined : { code: e.verdict?.[j] as number, chain },
  };
}

/** A dumped set's elements by id. Steps: one per 1,024 elements. */
export function* dumpedElems(s: DumpSet, out: StringMap<ElemSpec>): Steps {
  for (let j = 0; j < s.elements.count; j++) {
    const spec = dumpedElem(s, j);
    if (spec) out.set(elemId(spec), spec);
    if ((j & 1023) === 1023) yield;
  }
}

/**
 * A dump as the committed state it is. Steps: one per 1,024 rules and per 1,024
 * elements (a node's table holds 100,000s of each, re-read at every refresh).
 */
export function* readBack(dump: NftDump, c: CommittedFamily): Steps {
  c.exists = dump.exists;
  yield* readBackRules(dump, c);
  for (const s of dump.sets) yield* readBackSet(s, c);
}

/** A dump's (or a part's) chains with their rule hashes, and the base chains' declarations. */
export function* readBackRules(part: NftDump, c: CommittedFamily): Steps {
  const lists: string[][] = [];
  yield* chainHashes(part, lists);
  part.chains.forEach((ch, i) => {
    c.chains.set(ch.name, lists[i] as string[]);
    if (ch.hook !== undefined) c.bases.set(ch.name, baseOf(ch));
  });
}

/** A dumped set's elements (none for a set gone since the catalogue listed it). */
export function* readBackSet(s: DumpSet, c: CommittedFamily): Steps {
  if (s.gone) return;
  const elems = new StringMap<ElemSpec>();
  yield* dumpedElems(s, elems);
  c.sets.set(s.name, elems);
  c.layouts.set(s.name, s.flags & SET_FLAG.interval);
  yield;
}
