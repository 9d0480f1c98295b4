// The target of an apply, per family: every chain with its rules and their hashes (the
// `cali:` comments, computed from the nft text so `nft list` and `palisade plan` agree),
// every set and map with its elements keyed by their kernel bytes.
import { StringMap } from '../../../collections/string-map.js';
import { coveringMembers, isHostCidr } from '../../render/cover.js';
import type { Family, IPSet, Rule, Ruleset, SetKind, TableName } from '../../render/model.js';
import { baseChainSpec } from '../../render/base-chains.js';
import { baseChains, TABLES } from '../../render/model.js';
import { nftSetName } from '../../render/names.js';
import { nftChainName, nftElement, nftHashText } from './text.js';
import { ruleHashes } from '../../render/names.js';
import { concatType, DATA_VERDICT, HOOK, SET_FLAG, TYPE, UDATA_SET_KEYBYTEORDER, VERDICT } from './consts.js';
import { u32 } from './exprs.js';
import { addrKeyHex, cidrElems, IFNAMSIZ, ifnameKey, ipPortKey } from './keys.js';
import type { ElemSpec, SetSpec } from './op-writer.js';
import { drain } from '../../slicer.js';

export interface DesiredChain {
  name: string;
  table: TableName;
  rules: Rule[];
  hashes: string[];
  base?: { hook: number; prio: number; type: string };
}

export interface DesiredSet {
  name: string;
  spec: SetSpec;
  /** Dense, in insertion order while never deleted from: an interval set's are written in it (string-map.ts). */
  elems: StringMap<ElemSpec>;
  /**
   * Elements gained and lost since the last successful apply, when the set changed only
   * by member deltas; the apply then writes these instead of comparing every element.
   */
  delta?: { added: Map<string, ElemSpec>; removed: Map<string, ElemSpec> } | undefined;
  /**
   * An IP set's element kind: for `hosts` and `ipPort` its members map to elements one by
   * one (no covering), and a member delta changes those elements alone.
   */
  elemKind?: ElemKind;
}

export interface DesiredFamily {
  family: Family;
  chains: Map<string, DesiredChain>;
  sets: Map<string, DesiredSet>;
  /** Names changed since the last successful apply; undefined: compare everything. */
  dirty?: { chains: Set<string>; sets: Set<string> } | undefined;
  /** Told of every chain the builder puts, while a cold render stages its chains (render-stages.ts). */
  onChainPut?: ((name: string, chain: DesiredChain) => void) | undefined;
}

/**
 * Adds an element to a set that persists between applies, recording it in the set's
 * delta (an element removed since the last apply and now back cancels out).
 */
export function addElem(set: DesiredSet, id: string, e: ElemSpec): void {
  set.elems.set(id, e);
  const d = (set.delta ??= { added: new Map(), removed: new Map() });
  if (!d.removed.delete(id)) d.added.set(id, e);
}

/** Removes an element, recording it in the set's delta (one added since the last apply just goes). */
export function removeElem(set: DesiredSet, id: string): void {
  const e = set.elems.get(id);
  if (!e) return;
  set.elems.delete(id);
  const d = (set.delta ??= { added: new Map(), removed: new Map() });
  if (!d.added.delete(id)) d.removed.set(id, e);
}

export const elemId = (e: ElemSpec) => `${e.key}/${e.flags}${e.verdict ? `/${e.verdict.code}/${e.verdict.chain}` : ''}`;

/**
 * `hashSeed`: the chain's iptables-style name, as the text rendering hashes it, so `nft list` shows what `palisade
 * plan` prints.
 */
export function chainOf(
  name: string,
  hashSeed: string,
  table: TableName,
  rules: Rule[],
  family: Family,
  base?: DesiredChain['base'],
): DesiredChain {
  const hashes = ruleHashes(
    hashSeed,
    rules.map((r) => nftHashText(r, family, table)),
  );
  return base ? { name, table, rules, hashes, base } : { name, table, rules, hashes };
}

/**
 * How a set's members become kernel elements: `net`, an interval set (a start and an
 * end element per covering member); `hosts`, a net set of host addresses only, a plain
 * set of addresses (one element each); `ipPort`, address . protocol . port keys.
 */
export type ElemKind = 'net' | 'hosts' | 'ipPort';

export function ipSetSpec(family: Family, kind: ElemKind): SetSpec {
  const addr = family === 4 ? TYPE.ipv4_addr : TYPE.ipv6_addr;
  const len = family === 4 ? 4 : 16;
  const name = family === 4 ? 'ipv4_addr' : 'ipv6_addr';
  if (kind === 'net')
    return { flags: SET_FLAG.interval, keyType: addr, keyLen: len, text: `type ${name}; flags interval;` };
  if (kind === 'hosts') return { flags: 0, keyType: addr, keyLen: len, text: `type ${name};` };
  return {
    flags: 0,
    keyType: concatType(addr, TYPE.inet_proto, TYPE.inet_service),
    keyLen: len + 8,
    text: `type ${name} . inet_proto . inet_service;`,
  };
}

/** A set's layout: its interval flag, which the kernel cannot change in place (relayout.ts). */
export const layoutOf = (spec: SetSpec) => spec.flags & SET_FLAG.interval;

/**
 * Fills `out` with a set's kernel elements, yielding every 512 members: a set can hold
 * every endpoint of the cluster, too many to convert in one turn of the event loop.
 * Returns the elements' kind: a net set of host addresses only is `hosts` (see
 * docs/dataplane.md, "Sets of host addresses").
 */
export function* ipSetElemSteps(
  family: Family,
  kind: SetKind,
  members: readonly string[],
  out: StringMap<ElemSpec>,
): Generator<void, ElemKind, undefined> {
  if (kind === 'ip') {
    for (let i = 0; i < members.length; i++) {
      for (const e of memberElems(family, 'hosts', members[i] as string)) out.set(elemId(e), e);
      if ((i & 511) === 511) yield;
    }
    return 'hosts';
  }
  if (kind === 'net') {
    // Host addresses (workloads': the common case, and the big sets) need no covering, whose
    // pass over a 100,000-member set held the loop for ~20 ms: none can hold another, and a
    // repeated one lands on the same element.
    let i = 0;
    for (; i < members.length && isHostCidr(members[i] as string); i++) {
      for (const e of memberElems(family, 'hosts', members[i] as string)) out.set(elemId(e), e);
      if ((i & 511) === 511) yield;
    }
    if (i === members.length) return 'hosts';
    out.clear();
  }
  const list = kind === 'net' ? coveringMembers(members) : members;
  for (let i = 0; i < list.length; i++) {
    for (const e of memberElems(family, kind, list[i] as string)) out.set(elemId(e), e);
    if ((i & 511) === 511) yield;
  }
  return kind;
}

/** One member's elements: an address-and-port key, an address, or an interval's start (and end). */
export function memberElems(family: Family, kind: ElemKind, m: string): ElemSpec[] {
  if (kind === 'ipPort') return [{ key: ipPortKey(m, family).toString('hex'), flags: 0, text: nftElement(m) }];
  if (kind === 'hosts') {
    const slash = m.indexOf('/');
    const addr = slash < 0 ? m : m.slice(0, slash);
    return [{ key: addrKeyHex(addr, family), flags: 0, text: addr }];
  }
  const [start, end] = cidrElems(m, family) as [ElemSpec, ElemSpec?];
  start.text = m;
  return end ? [start, end] : [start];
}

/** A set's elements and their kind (ipSetElemSteps at once). */
export function ipSetElems(family: Family, kind: SetKind, members: readonly string[]) {
  const elems = new StringMap<ElemSpec>();
  return { elems, elemKind: drain(ipSetElemSteps(family, kind, members, elems)) };
}

/** nft's set userdata: key byte order 1 (host) is how nft marks string keys such as ifname. */
const STRING_KEY_UDATA = Uint8Array.of(UDATA_SET_KEYBYTEORDER, 4, ...u32(1));

/** A rendered IP set as the kernel will hold it. */
export function desiredSetOf(family: Family, s: IPSet): DesiredSet {
  const { elems, elemKind } = ipSetElems(family, s.kind, s.members);
  return { name: nftSetName(s.name), spec: ipSetSpec(family, elemKind), elems, elemKind };
}

export const MAP_SPEC: SetSpec = {
  flags: SET_FLAG.map,
  keyType: TYPE.ifname,
  keyLen: IFNAMSIZ,
  dataType: DATA_VERDICT,
  dataLen: 0,
  udata: STRING_KEY_UDATA,
  text: 'type ifname : verdict;',
};

export function mapElem(iface: string, kind: 'goto' | 'jump', chain: string): ElemSpec {
  return {
    key: ifnameKey(iface).toString('hex'),
    flags: 0,
    verdict: { code: VERDICT[kind], chain },
    text: `${JSON.stringify(iface)} : ${kind} ${chain}`,
  };
}

export function desiredOf(rs: Ruleset): DesiredFamily {
  const family = rs.family;
  const chains = new Map<string, DesiredChain>();
  for (const table of TABLES) {
    for (const c of rs.tables[table].values()) {
      const name = nftChainName(table, c.name);
      chains.set(name, chainOf(name, c.name, table, c.rules, family));
    }
  }
  // A base chain is ours alone in nftables mode: the appended rules simply follow the jump.
  for (const h of baseChains(rs)) {
    const name = nftChainName(h.table, h.builtin);
    const spec = baseChainSpec(h.table, h.builtin);
    chains.set(
      name,
      chainOf(name, name, h.table, [...h.inserted, ...h.appended], family, {
        hook: HOOK[h.builtin],
        prio: spec.priority,
        type: spec.type,
      }),
    );
  }
  const sets = new Map<string, DesiredSet>();
  for (const s of rs.sets.values()) {
    const d = desiredSetOf(family, s);
    sets.set(d.name, d);
  }
  for (const m of rs.maps) {
    const name = nftChainName(m.table, m.name);
    const elems = new StringMap<ElemSpec>();
    for (const [iface, v] of m.entries) {
      if (v.k !== 'goto' && v.k !== 'jump') continue;
      const e = mapElem(iface, v.k, nftChainName(m.table, v.chain));
      elems.set(elemId(e), e);
    }
    sets.set(name, { name, spec: MAP_SPEC, elems });
  }
  return { family, chains, sets };
}
