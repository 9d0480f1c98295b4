// IP sets for iptables mode, as Felix's ipsets.IPSets (felix/ipsets/ipsets.go): the
// desired sets of one IP family are kept in memory; applyUpdates() makes the kernel match
// the dirty ones (a set whose size changed is filled under a temporary name and swapped
// in, so rules never see it half-filled; otherwise only the member delta is sent), all in
// one native batch; applyDeletions() removes our sets
// nobody wants any more, run after the rules that referenced them are gone. Sets are ours
// by name (cali40/cali60, temporaries cali4t/cali6t); any other set is never touched.
// markResync() re-reads the kernel at the next apply, which repairs tampering.
import type { Logger } from '../../log.js';
import { StringSet } from '../../collections/string-set.js';
import { parseCidr } from '../../model/net.js';
import { DeltaLog, gained, lost, type MemberDelta } from '../member-delta.js';
import { drain, runSteps, type Slicer, type Steps } from '../slicer.js';
import {
  encodeIpsetOpsSteps,
  initialHashsize,
  ipsetApplyEncoded,
  ipsetList,
  type IpsetFamily,
  type IpsetOp,
  type IpsetResult,
  type IpsetType,
  type ListedIpset,
} from '../../native/ipset.js';

/** The kernel side, native by default; unit tests pass an in-memory one. */
export interface IpsetDataplane {
  /** `slicer`: encode the members between turns of the event loop. */
  apply(ops: IpsetOp[], slicer?: Slicer): Promise<IpsetResult>;
  list(prefix: string): Promise<ListedIpset[]>;
}

export const nativeIpsets: IpsetDataplane = {
  apply: async (ops, slicer) => ipsetApplyEncoded(await runSteps(encodeIpsetOpsSteps(ops), slicer)),
  list: ipsetList,
};

/** Members canonicalised, compared or copied between two turns of the event loop. */
const MEMBER_CHUNK = 4096;

interface SetMeta {
  type: IpsetType;
  maxelem: number;
}

interface KernelSet extends SetMeta {
  /** A table that keeps its size under churn (src/collections/string-set.ts). */
  members: StringSet;
}

/** The kernel's set can become the wanted one in place, by members (same type and size). */
const inPlace = (want: SetMeta, have: SetMeta | undefined): boolean =>
  !!have && have.type === want.type && have.maxelem === want.maxelem;

export interface IpsetApplyStats {
  created: number;
  rewritten: number;
  added: number;
  removed: number;
  destroyed: number;
}

/** One member as the kernel lists it, so desired and listed members compare as strings. */
export function canonicalMember(type: IpsetType, family: IpsetFamily, member: string): string {
  if (type === 'hash:ip,port') {
    const comma = member.lastIndexOf(',');
    const ip = parseCidr(member.slice(0, comma));
    return ip ? `${ip.address}${member.slice(comma)}` : member;
  }
  const c = parseCidr(member);
  if (!c) return member;
  const full = family === 4 ? 32 : 128;
  return type === 'hash:ip' ? c.address : `${c.address}/${c.prefix ?? full}`;
}

export class IPSets {
  readonly family: IpsetFamily;
  /** "cali40" / "cali60": the prefix of every set we own. */
  readonly prefix: string;
  readonly #tempPrefix: string;
  readonly #maxSize: number;
  readonly #log: Logger;
  readonly #dp: IpsetDataplane;
  readonly #desired = new Map<string, KernelSet>();
  #kernel = new Map<string, KernelSet>();
  readonly #dirty = new Set<string>();
  /**
   * Members added and removed (addMembers/removeMembers) since the last apply, for sets
   * changed only that way: the apply plans and records those members alone, not sets of a
   * cluster's worth of members. Sets replaced or removed since are compared whole.
   */
  #deltas = new DeltaLog();
  #resync = true;
  #nextTemp = 0;

  constructor(family: IpsetFamily, opts: { maxSize: number; log: Logger; dataplane?: IpsetDataplane }) {
    this.family = family;
    this.prefix = `cali${family}0`;
    this.#tempPrefix = `cali${family}t`;
    this.#maxSize = opts.maxSize;
    this.#log = opts.log;
    this.#dp = opts.dataplane ?? nativeIpsets;
  }

  addOrReplace(name: string, type: IpsetType, members: Iterable<string>): void {
    drain(this.addOrReplaceSteps(name, type, members));
  }

  /** addOrReplace() in steps: one set may hold every endpoint of the cluster. */
  *addOrReplaceSteps(name: string, type: IpsetType, members: Iterable<string>): Steps {
    this.#own(name);
    const set: KernelSet = { type, maxelem: this.#maxSize, members: new StringSet() };
    let n = 0;
    for (const m of members) {
      if ((++n & (MEMBER_CHUNK - 1)) === 0) yield;
      set.members.add(canonicalMember(type, this.family, m));
    }
    this.#desired.set(name, set);
    this.#dirty.add(name);
    this.#deltas.replacedWhole(name);
  }

  addMembers(name: string, members: Iterable<string>): void {
    const set = this.#desired.get(name);
    if (!set) throw new Error(`IP set ${name} is not known`);
    const d = this.#deltas.of(name);
    for (const member of members) {
      const m = canonicalMember(set.type, this.family, member);
      if (set.members.add(m) && d) gained(d, m);
    }
    this.#dirty.add(name);
  }

  removeMembers(name: string, members: Iterable<string>): void {
    const set = this.#desired.get(name);
    if (!set) throw new Error(`IP set ${name} is not known`);
    const d = this.#deltas.of(name);
    for (const member of members) {
      const m = canonicalMember(set.type, this.family, member);
      if (set.members.delete(m) && d) lost(d, m);
    }
    this.#dirty.add(name);
  }

  /**
   * The set is in the kernel as wanted (same type and size) and nothing waits for a read-
   * back: a change of its members is planned as a delta, by applyUpdates() alone.
   */
  deltaReady(name: string): boolean {
    const want = this.#desired.get(name);
    return !this.#resync && !!want && inPlace(want, this.#kernel.get(name));
  }

  remove(name: string): void {
    this.#desired.delete(name);
    this.#dirty.add(name);
    this.#deltas.replacedWhole(name);
  }

  markResync(): void {
    this.#resync = true;
  }

  /**
   * Creates, rewrites and updates what changed (before the rules that use the sets). With
   * a slicer, reading back, planning, encoding and recording give the event loop turns.
   */
  async applyUpdates(slicer?: Slicer): Promise<IpsetApplyStats> {
    const stats: IpsetApplyStats = { created: 0, rewritten: 0, added: 0, removed: 0, destroyed: 0 };
    // Deltas are against the kernel as last recorded; a read-back compares everything.
    const deltas = this.#resync ? new Map<string, MemberDelta>() : this.#deltas.deltas;
    this.#deltas = new DeltaLog();
    if (this.#resync) await this.#readBack(slicer);
    const ops: IpsetOp[] = [];
    const sent = new Map<string, { add: string[]; del: string[] }>();
    await runSteps(this.#planSteps(ops, stats, deltas, sent), slicer);
    await this.#run(ops, slicer);
    await runSteps(this.#recordSteps(sent), slicer);
    // Deletions wait for applyDeletions(); everything else is done.
    for (const name of [...this.#dirty]) if (this.#desired.has(name)) this.#dirty.delete(name);
    return stats;
  }

  *#planSteps(
    ops: IpsetOp[],
    stats: IpsetApplyStats,
    deltas: ReadonlyMap<string, MemberDelta>,
    sent: Map<string, { add: string[]; del: string[] }>,
  ): Steps {
    for (const name of this.#dirty) {
      const want = this.#desired.get(name);
      const delta = deltas.get(name);
      const have = this.#kernel.get(name);
      if (want && delta && have && inPlace(want, have)) {
        sent.set(name, this.#planDelta(name, want, have, delta, ops, stats));
      } else if (want) yield* this.#plan(name, want, ops, stats);
      // And between sets: a thousand small sets are as many members as one big one.
      yield;
    }
  }

  // Only the members that changed since the last apply, checked against both sides.
  #planDelta(
    name: string,
    want: KernelSet,
    have: KernelSet,
    delta: MemberDelta,
    ops: IpsetOp[],
    stats: IpsetApplyStats,
  ): { add: string[]; del: string[] } {
    const base = { type: want.type, family: this.family } as const;
    const del = [...delta.removed].filter((m) => have.members.has(m) && !want.members.has(m));
    const add = [...delta.added].filter((m) => want.members.has(m) && !have.members.has(m));
    this.#pushMembers(name, base, add, del, ops, stats);
    return { add, del };
  }

  // A set's member changes as ops, removals first.
  #pushMembers(
    name: string,
    base: { type: IpsetType; family: IpsetFamily },
    add: string[],
    del: string[],
    ops: IpsetOp[],
    stats: IpsetApplyStats,
  ): void {
    if (del.length) ops.push({ op: 'del', name, ...base, members: del });
    if (add.length) ops.push({ op: 'add', name, ...base, members: add });
    stats.added += add.length;
    stats.removed += del.length;
  }

  // What was applied becomes the kernel's baseline: a delta's members changed in place,
  // any other set copied whole (the desired sets change on).
  *#recordSteps(sent: ReadonlyMap<string, { add: string[]; del: string[] }>): Steps {
    for (const name of this.#dirty) {
      const want = this.#desired.get(name);
      if (!want) continue;
      const delta = sent.get(name);
      const have = this.#kernel.get(name);
      if (delta && have) {
        for (const m of delta.del) have.members.delete(m);
        for (const m of delta.add) have.members.add(m);
        continue;
      }
      // Two array copies: a million members in a few ms.
      this.#kernel.set(name, { ...want, members: want.members.clone() });
      yield;
    }
  }

  /** Destroys our sets that are no longer wanted (after the rules stopped using them). */
  async applyDeletions(): Promise<number> {
    const doomed = [...this.#kernel.keys()].filter((n) => !this.#desired.has(n));
    if (!doomed.length) {
      this.#dirty.clear();
      return 0;
    }
    await this.#run(doomed.map((name) => ({ op: 'destroy', name })));
    for (const n of doomed) this.#kernel.delete(n);
    this.#dirty.clear();
    return doomed.length;
  }

  #own(name: string): void {
    if (!name.startsWith(this.prefix) || name.length > 31)
      throw new Error(`IP set name ${name} is not one of ours (${this.prefix}..., at most 31 characters)`);
  }

  /**
   * A set of another size is rewritten whole under a temporary name and swapped in; the
   * kernel swaps only sets of the same type, so one of another type is destroyed and made
   * again (which the kernel refuses while a rule still uses it: the apply then fails and
   * is retried once the rules have moved). Otherwise only the delta goes.
   */
  *#plan(name: string, want: KernelSet, ops: IpsetOp[], stats: IpsetApplyStats): Steps {
    const have = this.#kernel.get(name);
    const base = { type: want.type, family: this.family } as const;
    if (!have || !inPlace(want, have)) {
      // Created with its members, so sized for them.
      const fill = (set: string): IpsetOp[] => [
        {
          op: 'create',
          name: set,
          ...base,
          maxelem: want.maxelem,
          hashsize: initialHashsize(want.members.size, want.maxelem),
        },
        { op: 'add', name: set, ...base, members: want.members.toArray() },
      ];
      if (!have || have.type !== want.type) {
        if (have) ops.push({ op: 'destroy', name });
        ops.push(...fill(name));
        if (have) stats.rewritten++;
        else stats.created++;
      } else {
        const temp = `${this.#tempPrefix}${this.#nextTemp++}`;
        ops.push(...fill(temp), { op: 'swap', name: temp, other: name }, { op: 'destroy', name: temp });
        stats.rewritten++;
      }
      stats.added += want.members.size;
      return;
    }
    const add: string[] = [];
    const del: string[] = [];
    let n = 0;
    for (const m of want.members) {
      if ((++n & (MEMBER_CHUNK - 1)) === 0) yield;
      if (!have.members.has(m)) add.push(m);
    }
    for (const m of have.members) {
      if ((++n & (MEMBER_CHUNK - 1)) === 0) yield;
      if (!want.members.has(m)) del.push(m);
    }
    this.#pushMembers(name, base, add, del, ops, stats);
  }

  async #run(ops: IpsetOp[], slicer?: Slicer): Promise<void> {
    if (!ops.length) return;
    let r: IpsetResult;
    try {
      r = await this.#dp.apply(ops, slicer);
    } catch (e) {
      this.#resync = true;
      throw e;
    }
    if (!r.failures.length) return;
    this.#resync = true;
    const what = r.failures.map((f) => {
      const o = ops[f.tag];
      const member = o && (o.op === 'add' || o.op === 'del') && f.member >= 0 ? ` member ${o.members[f.member]}` : '';
      return `${o?.op ?? '?'} ${o?.name ?? '?'}${member} (errno ${f.errno})`;
    });
    throw new Error(`IP set programming failed: ${what.join('; ')}`);
  }

  /** What the kernel holds of ours now: the baseline the next plan compares against. */
  async #readBack(slicer?: Slicer): Promise<void> {
    const kernel = new Map<string, KernelSet>();
    const temps: string[] = [];
    const listed = await this.#dp.list(`cali${this.family}`);
    await runSteps(this.#readSteps(listed, kernel, temps), slicer);
    this.#kernel = kernel;
    // Compare everything wanted; leftovers of an interrupted rewrite go now.
    for (const name of this.#desired.keys()) this.#dirty.add(name);
    for (const name of kernel.keys()) if (!this.#desired.has(name)) this.#dirty.add(name);
    if (temps.length) await this.#run(temps.map((name) => ({ op: 'destroy', name })));
    this.#resync = false;
    this.#log.debug({ family: this.family, sets: kernel.size, temporaries: temps.length }, 'read back our IP sets');
  }

  *#readSteps(listed: ListedIpset[], kernel: Map<string, KernelSet>, temps: string[]): Steps {
    for (const s of listed) {
      if (s.family !== this.family) continue;
      if (s.name.startsWith(this.#tempPrefix)) temps.push(s.name);
      if (!s.name.startsWith(this.prefix)) continue;
      const type = s.type as IpsetType;
      const members = new StringSet();
      for (let i = 0; i < s.members.length; i++) {
        if ((i & (MEMBER_CHUNK - 1)) === MEMBER_CHUNK - 1) yield;
        members.add(canonicalMember(type, this.family, s.members[i] as string));
      }
      kernel.set(s.name, { type, maxelem: s.maxelem, members });
      yield;
    }
  }
}
