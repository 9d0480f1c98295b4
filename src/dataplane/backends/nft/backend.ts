// The native nftables backend: keeps what it has committed to our `calico` tables, turns
// the difference to the desired state into one transaction (only changed chains are
// flushed and rewritten, set elements change by delta, anonymous sets ride along with
// their rules) and commits it on a native worker thread. resync() reads the tables back,
// so the next apply repairs whatever drifted. Nothing outside our tables is touched.
import { failuresOf, nftCommit, nftDump } from '../../../native/nft.js';
import type { Family } from '../../render/model.js';
import { SET_FLAG } from './consts.js';
import { type DesiredChain, type DesiredFamily, type DesiredSet, elemId } from './desired.js';
import { commentOf, lowerRule, SetIds } from './exprs.js';
import { commentUdata } from './exprs.js';
import { NFPROTO } from './consts.js';
import { type ElemSpec, OpWriter } from './op-writer.js';

export const TABLE = 'calico';

interface CommittedFamily {
  exists: boolean;
  /** Chain -> its rules' hashes ("" for a rule that is not ours). */
  chains: Map<string, string[]>;
  sets: Map<string, Set<string>>;
}

export interface ApplyStats {
  ops: number;
  messages: number;
  bytes: number;
  chainsWritten: number;
  rulesWritten: number;
  chainsDeleted: number;
  elemsAdded: number;
  elemsRemoved: number;
}

export interface DriftReport {
  family: Family;
  chains: string[];
  sets: string[];
}

/** A transaction the kernel refused (and rolled back): which objects, and why. */
export class NftApplyError extends Error {
  readonly code = 'ENFT';
  constructor(
    message: string,
    readonly failures: Array<{ object: string; errno: number }>,
    override readonly cause: unknown,
  ) {
    super(message);
    this.name = 'NftApplyError';
  }
}

const emptyCommitted = (): CommittedFamily => ({ exists: false, chains: new Map(), sets: new Map() });
const sameList = (a: readonly string[] | undefined, b: readonly string[]) => !!a && a.length === b.length && a.every((x, i) => x === b[i]);

export class NftBackend {
  readonly table: string;
  #committed = new Map<Family, CommittedFamily>();

  constructor(table = TABLE) {
    this.table = table;
  }

  /** Reads our tables back from the kernel: the baseline of the next apply. */
  async resync(families: Family[]): Promise<void> {
    for (const f of families) {
      const dump = await nftDump(NFPROTO[f], this.table);
      const c = emptyCommitted();
      c.exists = dump.exists;
      for (const ch of dump.chains) c.chains.set(ch.name, []);
      for (const r of dump.rules) {
        const hash = /^cali:([\w-]+)$/.exec(commentOf(r.udata) ?? '')?.[1] ?? '';
        c.chains.get(r.chain)?.push(hash);
      }
      for (const s of dump.sets) {
        const elems = new Set<string>();
        for (const e of s.elements) elems.add(elemId({ key: e.key, flags: e.flags & 1, verdict: e.verdict === undefined ? undefined : { code: e.verdict, chain: e.chain ?? '' } }));
        c.sets.set(s.name, elems);
      }
      this.#committed.set(f, c);
    }
  }

  /** What differs between the kernel (as last read back) and `desired`. */
  drift(desired: DesiredFamily): DriftReport {
    const c = this.#committed.get(desired.family) ?? emptyCommitted();
    const chains = [...desired.chains.values()].filter((d) => !sameList(c.chains.get(d.name), d.hashes)).map((d) => d.name);
    for (const name of c.chains.keys()) if (!desired.chains.has(name)) chains.push(name);
    const sets: string[] = [];
    for (const d of desired.sets.values()) {
      const have = c.sets.get(d.name);
      if (!have || have.size !== d.elems.size || [...d.elems.keys()].some((k) => !have.has(k))) sets.push(d.name);
    }
    for (const name of c.sets.keys()) if (!desired.sets.has(name)) sets.push(name);
    return { family: desired.family, chains, sets };
  }

  /** Makes the kernel equal `desired` (each family given) in one transaction. */
  async apply(desired: DesiredFamily[]): Promise<ApplyStats> {
    const w = new OpWriter();
    const stats: ApplyStats = { ops: 0, messages: 0, bytes: 0, chainsWritten: 0, rulesWritten: 0, chainsDeleted: 0, elemsAdded: 0, elemsRemoved: 0 };
    const ids = new SetIds();
    for (const d of desired) this.#plan(w, d, this.#committed.get(d.family) ?? emptyCommitted(), ids, stats);
    if (w.length === 0) return stats;
    try {
      const r = await nftCommit(w.bytes());
      stats.ops = r.ops;
      stats.messages = r.messages;
      stats.bytes = r.bytes;
    } catch (e) {
      const failures = failuresOf(e).map((f) => ({ object: f.tag === null ? 'the batch' : (w.descriptions[f.tag] ?? `op ${f.tag}`), errno: f.errno }));
      const what = failures.length ? failures.map((f) => `${f.object} (errno ${f.errno})`).join('; ') : (e as Error).message;
      throw new NftApplyError(`nftables transaction failed, nothing changed: ${what}`, failures, e);
    }
    for (const d of desired) this.#commit(d);
    return stats;
  }

  #commit(d: DesiredFamily): void {
    const c = emptyCommitted();
    c.exists = true;
    for (const ch of d.chains.values()) c.chains.set(ch.name, ch.hashes);
    for (const s of d.sets.values()) c.sets.set(s.name, new Set(s.elems.keys()));
    this.#committed.set(d.family, c);
  }

  #plan(w: OpWriter, d: DesiredFamily, c: CommittedFamily, ids: SetIds, stats: ApplyStats): void {
    const f = d.family;
    const t = this.table;
    if (!c.exists) w.tableAdd(f, t);
    const isMap = (s: DesiredSet) => (s.spec.flags & SET_FLAG.map) !== 0;
    const syncSet = (s: DesiredSet) => {
      const have = c.sets.get(s.name);
      if (!have) {
        // The kernel wants a transaction-unique id on every new set, named or not.
        w.setAdd(f, t, s.name, ids.next(), s.spec);
        if (s.elems.size) w.elems(true, f, t, s.name, 0, [...s.elems.values()]);
        stats.elemsAdded += s.elems.size;
        return;
      }
      const removed: ElemSpec[] = [];
      for (const id of have) if (!s.elems.has(id)) removed.push(elemFromId(id));
      const added: ElemSpec[] = [];
      for (const [id, e] of s.elems) if (!have.has(id)) added.push(e);
      // Deletes first: an interval set refuses a new element overlapping an old one.
      if (removed.length) w.elems(false, f, t, s.name, 0, removed);
      if (added.length) w.elems(true, f, t, s.name, 0, added);
      stats.elemsAdded += added.length;
      stats.elemsRemoved += removed.length;
    };
    // 1. IP sets, so rules may use them. 2. Chains, so maps and jumps may name them.
    for (const s of d.sets.values()) if (!isMap(s)) syncSet(s);
    for (const ch of d.chains.values()) if (!ch.base && !c.chains.has(ch.name)) w.chainAdd(f, t, ch.name);
    // 3. Maps (dispatch), whose verdicts name chains. 4. Changed chains' rules, base chains last.
    for (const s of d.sets.values()) if (isMap(s)) syncSet(s);
    const writeRules = (ch: DesiredChain) => {
      const had = c.chains.get(ch.name);
      if (sameList(had, ch.hashes)) return;
      if (ch.base && !had) w.chainAdd(f, t, ch.name, ch.base);
      if (had?.length) w.chainFlush(f, t, ch.name);
      ch.rules.forEach((r, i) => {
        const lowered = lowerRule(r, f, ch.table, ids);
        for (const s of lowered.anonSets) {
          w.setAdd(f, t, '__set%d', s.id, s.spec);
          w.elems(true, f, t, '__set%d', s.id, s.elems);
        }
        w.ruleAdd(f, t, ch.name, commentUdata(`cali:${ch.hashes[i]}`), lowered.exprs, r.comment ?? `#${i + 1}`);
      });
      stats.chainsWritten++;
      stats.rulesWritten += ch.rules.length;
    };
    for (const ch of d.chains.values()) if (!ch.base) writeRules(ch);
    for (const ch of d.chains.values()) if (ch.base) writeRules(ch);
    // 5. What is no longer wanted: empty the chains first (dropping their jumps), then
    // delete them, then the sets nothing uses any more.
    const gone = [...c.chains.keys()].filter((name) => !d.chains.has(name));
    for (const name of gone) if (c.chains.get(name)?.length) w.chainFlush(f, t, name);
    for (const name of gone) w.chainDel(f, t, name);
    stats.chainsDeleted += gone.length;
    for (const name of c.sets.keys()) if (!d.sets.has(name)) w.setDel(f, t, name);
  }
}

function elemFromId(id: string): ElemSpec {
  const [hex, flags, code, chain] = id.split('/') as [string, string, string?, string?];
  const e: ElemSpec = { key: Buffer.from(hex, 'hex'), flags: Number(flags) };
  if (code !== undefined) e.verdict = { code: Number(code), chain: chain ?? '' };
  return e;
}
