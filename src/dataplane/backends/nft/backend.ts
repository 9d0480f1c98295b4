// The nftables backend: keeps what it has committed to our `calico` tables, turns the
// difference to the desired state into one transaction (only changed chains are flushed
// and rewritten, set elements change by delta, anonymous sets ride along with their
// rules) and commits it. Transport "native" sends it over netlink from a worker thread;
// "exec" writes the same transaction as nft input and runs `nft -f -` (the reference the
// bench compares against, as Calico's nftables mode programs). resync() reads the tables
// back, so the next apply repairs whatever drifted. Nothing outside our tables is touched.
import type { StringMap } from '../../../collections/string-map.js';
import { spawn } from 'node:child_process';

import { failuresOf, nftCommit, type NftDump, nftDump, type NftDumpScope, nftGetElems } from '../../../native/nft.js';
import type { Family } from '../../render/model.js';
import { NFPROTO, SET_FLAG } from './consts.js';
import { baseLastSteps, byTableSteps, pickSteps, unionSteps } from './plan-lists.js';
import {
  adoptPatch,
  compareCatalogue,
  compareRules,
  compareSet,
  confirmedMissing,
  emptyPatch,
  missingKeys,
  type Patch,
  screenSet,
  Touched,
} from './check.js';
import {
  baseOf,
  type CommittedFamily,
  emptyCommitted,
  readBack,
  readBackRules,
  readBackSet,
  sameList,
} from './committed.js';
import { type DesiredChain, type DesiredFamily, type DesiredSet, layoutOf } from './desired.js';
import { emptyUsers, otherLayout, relaidSets } from './relayout.js';
import type { ElemSpec } from './op-writer.js';
import { NativeSink, NftTextSink, type PlanSink } from './sinks.js';
import { RenderStages } from './render-stages.js';
import { addStats, type ApplyStats, isMap, writeElems, writeNewSet, writeRules, zeroStats } from './writes.js';
import { drain, runSteps, type Slicer, type Steps } from '../../slicer.js';

export const TABLE = 'calico';
/** Elements compared or copied between two turns of the event loop. */
const COMPARE_CHUNK = 8192;

/**
 * A cold apply (our table absent or empty: a node's boot, a first start) with more new
 * rules than this commits its sets and chains ahead, in transactions of about this many
 * rules, each planned while the one before commits; the base chains, which make it all
 * reachable, go last, with anything else, in one transaction. Until then no hook reaches
 * a staged chain, so no packet sees part of a ruleset, and the kernel's validation of
 * each staged commit walks nothing (it walks what the hooks reach). A programmed node's
 * applies are one transaction each: every staged commit would pay that walk over the
 * whole table (docs/dataplane.md, "What the kernel costs").
 */
export const STAGE_RULES = 4096;

/** Chains whose rules a check (or a sliced read-back) reads in one part (one part holds back a commit at most). */
const CHECK_CHAINS = 256;
/**
 * And rules, as far as the committed state knows them: 256 endpoint chains of the churn
 * workload hold 95,000 rules (a jump per policy), a 370–570 ms dump that held back the
 * commits of every refresh. About 4 µs a rule: a part of 2,048 rules holds one back ~8 ms.
 */
const CHECK_RULES = 2048;

/**
 * A table read in parts after its catalogue, each part read only when the one before has
 * been used: the rules of at most CHECK_CHAINS chains and (by `rulesOf`, a chain's
 * expected rule count) CHECK_RULES rules at a time, then each set's elements (with its
 * flags from the catalogue). A refresh's check and a sliced read-back both read this way.
 */
export async function* partsAfter(
  cat: NftDump,
  read: (scope: NftDumpScope) => Promise<NftDump>,
  rulesOf: (chain: string) => number = () => 1,
): AsyncGenerator<{ rules: NftDump } | { set: NftDump['sets'][number] }> {
  for (let i = 0; i < cat.chains.length; ) {
    const names: string[] = [];
    // At least one chain a part, however long.
    for (let rules = 0; i < cat.chains.length && names.length < CHECK_CHAINS; i++) {
      const name = (cat.chains[i] as NftDump['chains'][number]).name;
      rules += rulesOf(name);
      if (names.length && rules > CHECK_RULES) break;
      names.push(name);
    }
    yield { rules: await read({ rulesOf: names, elementsOf: [] }) };
  }
  for (const s of cat.sets) {
    const part = await read({ rulesOf: [], elementsOf: [s.name] });
    yield { set: { ...(part.sets[0] as NftDump['sets'][number]), flags: s.flags } };
  }
}

/** Our table absent or empty: a node's boot, a first start. */
const isCold = (c: CommittedFamily | undefined) => !c?.exists || (!c.chains.size && !c.sets.size);

/** A cold render's staged transactions (RenderStages), until the apply that follows it. */
interface RenderedAhead {
  stages: RenderStages;
  stats: ApplyStats;
  landed: () => Promise<void>;
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

export type Transport = 'native' | 'exec';

/** A check's outcome: what drifted (repaired by the next apply), or why it found nothing. */
export interface CheckResult {
  /** "stale": an apply compared everything meanwhile; "lost": a table of ours is gone. */
  outcome: 'checked' | 'stale' | 'lost';
  drift: DriftReport[];
  /** The kernel dump (including any wait for a commit) and the sliced comparison, ms. */
  dumpMs: number;
  compareMs: number;
  /** Elements asked for one by one: committed ones a plain set's dump beside commits did not list (screenSet). */
  asked: number;
}

export class NftBackend {
  readonly table: string;
  readonly transport: Transport;
  #committed = new Map<Family, CommittedFamily>();
  /** While a check runs and until its drift is adopted: what applies wrote meanwhile. */
  #touched: Map<Family, Touched> | undefined;
  #pending: { patches: Map<Family, Patch>; touched: Map<Family, Touched> } | undefined;
  /**
   * Commits (with their recording) and a check's dumps take turns, each seeing the other
   * whole; a plain set's elements are dumped beside commits (screenSet).
   */
  #kernel: Promise<unknown> = Promise.resolve();

  /** Families whose cold render committed staged transactions, for the apply after it. */
  readonly #ahead = new Map<Family, RenderedAhead>();

  /** STAGE_RULES, or another size (0: never stage). */
  readonly #stageRules: number;

  /** A check dumps plain sets beside commits (screenSet); false: holding them back, as every other part. */
  readonly #setsBeside: boolean;

  constructor(opts: { table?: string; transport?: Transport; stageRules?: number; setsBeside?: boolean } = {}) {
    this.table = opts.table ?? TABLE;
    this.transport = opts.transport ?? 'native';
    this.#stageRules = opts.stageRules ?? STAGE_RULES;
    this.#setsBeside = opts.setsBeside ?? true;
  }

  /**
   * Reads our tables back from the kernel: the baseline of the next apply. With a slicer,
   * the event loop gets a turn between slices of the read-back.
   */
  async resync(families: Family[], slicer?: Slicer): Promise<void> {
    for (const f of families) {
      // What a render staged is read back with the rest.
      this.#ahead.delete(f);
      const c = emptyCommitted();
      if (slicer) await this.#readBackInParts(f, c, slicer);
      else drain(readBack(await nftDump(NFPROTO[f], this.table), c));
      this.#committed.set(f, c);
    }
  }

  // The read-back as a refresh reads: the catalogue, then the parts after it (partsAfter).
  // One dump of a 100,000-rule table became JS
  // objects in one 50 ms call on the event loop (an agent restarting over a programmed
  // node); a part is a few ms. Each part waits for a commit in flight, as a check's does.
  async #readBackInParts(f: Family, c: CommittedFamily, slicer: Slicer): Promise<void> {
    const family = NFPROTO[f];
    const read = (scope: NftDumpScope) => this.#exclusive(() => nftDump(family, this.table, scope));
    const cat = await read({ catalogue: true });
    c.exists = cat.exists;
    if (!cat.exists) return;
    for (const ch of cat.chains) if (ch.hook !== undefined) c.bases.set(ch.name, baseOf(ch));
    for await (const part of partsAfter(cat, read))
      await runSteps('rules' in part ? readBackRules(part.rules, c) : readBackSet(part.set, c), slicer);
  }

  /** Deletes our tables (agent --cleanup); a table that is not there is fine. */
  async removeTables(families: Family[]): Promise<void> {
    for (const f of families) {
      const w = new NativeSink();
      w.tableDel(f, this.table);
      try {
        await nftCommit(w.parts());
      } catch (e) {
        const failures = failuresOf(e);
        if (!failures.length || !failures.every((x) => x.errno === 2)) throw e; // ENOENT: no table, nothing to remove
      }
      this.#committed.delete(f);
    }
  }

  /**
   * After a read-back and its drift report, and this batch's update: the next apply
   * repairs what drifted and writes what changed, instead of comparing every rule and
   * element again (a node's 100,000s): the rest of the kernel was found as desired.
   * Drifted sets compare whole, so a delta of this batch is not applied to a set that
   * differs. Nothing changes after a rebuild (`desired.dirty` unset): that compares all.
   */
  repairOnly(desired: DesiredFamily, drift: DriftReport): void {
    const c = this.#committed.get(desired.family);
    if (!c || !desired.dirty) return;
    c.full = false;
    for (const name of drift.chains) desired.dirty.chains.add(name);
    for (const name of drift.sets) {
      desired.dirty.sets.add(name);
      const s = desired.sets.get(name);
      if (s) s.delta = undefined;
    }
  }

  /** What differs between the kernel (as last read back or committed) and `desired`. */
  drift(desired: DesiredFamily): DriftReport {
    const out: DriftReport = { family: desired.family, chains: [], sets: [] };
    drain(this.driftSteps(desired, out));
    return out;
  }

  /** drift() in steps, into `out`: one per 256 chains and per set (a set compares whole). */
  *driftSteps(desired: DesiredFamily, out: DriftReport): Steps {
    const c = this.#committed.get(desired.family) ?? emptyCommitted();
    const misdeclared = (d: DesiredChain) => !!d.base && c.bases.has(d.name) && c.bases.get(d.name) !== baseOf(d.base);
    let n = 0;
    for (const d of desired.chains.values()) {
      if (!sameList(c.chains.get(d.name), d.hashes) || misdeclared(d)) out.chains.push(d.name);
      if ((++n & 255) === 0) yield;
    }
    for (const name of c.chains.keys()) if (!desired.chains.has(name)) out.chains.push(name);
    yield;
    for (const d of desired.sets.values()) {
      // (An empty set in another layout holds the same elements: none.)
      if (!sameElems(c.sets.get(d.name), d) || otherLayout(c, d)) out.sets.push(d.name);
      yield;
    }
    for (const name of c.sets.keys()) if (!desired.sets.has(name)) out.sets.push(name);
  }

  /**
   * Runs a builder's render (`render`, filling `d`). On a cold start (our table absent or
   * empty) whose render puts more than STAGE_RULES rules, its chains are committed in
   * staged transactions as they are rendered, each while the render goes on, and the
   * apply after it writes only the rest (render-stages.ts). A failed part rejects the
   * render, or the apply when it was the last: what landed before it stays, unreachable
   * from any hook, and the next apply, after a read-back, writes what is missing.
   */
  async rebuild(d: DesiredFamily, render: Steps, slicer?: Slicer): Promise<void> {
    this.#ahead.delete(d.family);
    const had = this.#committed.get(d.family);
    if (this.transport !== 'native' || this.#stageRules <= 0 || !isCold(had)) return runSteps(render, slicer);
    const c = had ?? emptyCommitted();
    const stats = zeroStats();
    const stages = new RenderStages(d, c, this.table, this.#stageRules);
    const commits = this.#stagedCommits(d, stats, slicer);
    d.onChainPut = (name, ch) => stages.put(name, ch);
    try {
      for (;;) {
        const finished = await runSteps(
          renderUntil(render, () => stages.ready),
          slicer,
        );
        // A render this small is one transaction, the apply's.
        if (finished && !stages.parts) return;
        this.#committed.set(d.family, c);
        const w = new NativeSink();
        const record = await runSteps(stages.plan(w, stats), slicer);
        if (w.length) await commits.submit(w, record);
        if (finished) break;
      }
    } finally {
      d.onChainPut = undefined;
    }
    this.#ahead.set(d.family, { stages, stats, landed: commits.landed });
  }

  /**
   * Makes the kernel equal `desired` (each family given) in one transaction, or a cold
   * apply in staged ones and a last (STAGE_RULES). With a slicer, planning and recording
   * give the event loop a turn between slices.
   */
  async apply(desired: DesiredFamily[], slicer?: Slicer): Promise<ApplyStats> {
    const sink = this.transport === 'native' ? new NativeSink() : new NftTextSink();
    const stats = zeroStats();
    this.#adopt(desired);
    const staged = new Map<Family, Set<string>>();
    if (this.transport === 'native' && this.#stageRules > 0)
      for (const d of desired) {
        const ahead = this.#ahead.get(d.family);
        this.#ahead.delete(d.family);
        if (ahead) {
          await ahead.landed();
          addStats(stats, ahead.stats);
          staged.set(d.family, ahead.stages.stagedSets());
          continue;
        }
        const sets = await this.#stage(d, stats, slicer);
        if (sets) staged.set(d.family, sets);
      }
    // Felix's order, ipsets before iptables: on a programmed table, IP-set members (and new
    // plain sets) commit in a transaction of their own ahead of the rules. Nearly every
    // change of a cluster is a membership change; with the rules, it waited for the
    // kernel's validation of the whole table whenever the same apply changed one rule
    // (16 ms on the churn node, where elements alone take 0.7 ms). Rules see the new
    // members a commit early, as Felix's do.
    const members = sink instanceof NativeSink && !staged.size ? new NativeSink() : undefined;
    const ahead = new Map<Family, DesiredSet[]>();
    for (const d of desired) {
      const c = this.#committed.get(d.family) ?? emptyCommitted();
      const split = members && c.exists ? { sink: members, sets: [] as DesiredSet[] } : undefined;
      if (split) ahead.set(d.family, split.sets);
      await runSteps(this.#plan(sink, d, c, stats, staged.get(d.family), split), slicer);
    }
    await this.#exclusive(async () => {
      for (const d of desired) this.#marking(d);
      if (members?.length) {
        const t0 = performance.now();
        await this.#commitNative(members, stats);
        stats.membersLanded = { at: performance.now(), commitMs: performance.now() - t0 };
        // Recorded as it landed: a rules' transaction that fails leaves a true record.
        for (const d of desired) await runSteps(this.#recordAhead(d, ahead.get(d.family) ?? []), slicer);
      }
      if (sink.length > 0) {
        const scope = members?.length
          ? ' by it (the IP-set members committed ahead of it stay; the next apply reads the kernel back)'
          : undefined;
        if (sink instanceof NativeSink) await this.#commitNative(sink, stats, scope);
        else await this.#commitExec(sink as NftTextSink, stats);
      }
      for (const d of desired) {
        const recorded = staged.get(d.family) ?? new Set(ahead.get(d.family)?.map((s) => s.name));
        await runSteps(this.#record(d, recorded), slicer);
      }
    });
    return stats;
  }

  /** Sets a members' transaction committed ahead of the rules (as #record would record them). */
  *#recordAhead(d: DesiredFamily, sets: DesiredSet[]): Steps {
    const c = this.#committed.get(d.family);
    if (!c) return;
    // As planned: by delta unless the apply compared whole.
    const byDelta = !c.full && !!d.dirty;
    for (const s of sets) {
      recordSet(c, s, byDelta);
      yield;
    }
  }

  /**
   * A cold apply's staged transactions (STAGE_RULES): first every set with its elements and
   * every chain but the base chains, empty; then those chains' rules, a part at a time,
   * the next part planned while one commits. Each commit is recorded as it lands, so an
   * apply that fails part way leaves a record the next apply builds on. Returns the sets
   * staged (undefined: not a cold apply, or too small to stage).
   */
  async #stage(d: DesiredFamily, stats: ApplyStats, slicer?: Slicer): Promise<Set<string> | undefined> {
    const had = this.#committed.get(d.family);
    if (!isCold(had)) return undefined;
    const chains = await runSteps(
      byTableSteps(d.chains.values(), (ch) => !ch.base),
      slicer,
    );
    let rules = 0;
    for (const ch of chains) rules += ch.rules.length;
    if (rules <= this.#stageRules) return undefined;
    const c = had ?? emptyCommitted();
    this.#committed.set(d.family, c);
    const commits = this.#stagedCommits(d, stats, slicer);
    const head = new NativeSink();
    await runSteps(this.#stageHead(head, d, c, chains, stats), slicer);
    await commits.submit(head, () => recordStagedHead(c, d, chains));
    for (let i = 0; i < chains.length; ) {
      const w = new NativeSink();
      const from = i;
      i = await runSteps(this.#stageRulesFrom(w, d.family, chains, i, stats), slicer);
      const part = chains.slice(from, i);
      await commits.submit(w, () => {
        for (const ch of part) c.chains.set(ch.name, ch.hashes);
        return undefined;
      });
    }
    await commits.landed();
    return new Set(d.sets.keys());
  }

  /**
   * A cold apply's staged transactions, one in flight at a time: `submit` waits for the
   * one before (and rejects with its failure, which stops the staging), then starts this
   * one's commit and, once it has landed, its record. `landed` waits for the last.
   */
  #stagedCommits(
    d: DesiredFamily,
    stats: ApplyStats,
    slicer?: Slicer,
  ): {
    submit: (w: NativeSink, record: () => Steps | undefined) => Promise<void>;
    landed: () => Promise<void>;
  } {
    let inflight: Promise<void> | undefined;
    let n = 0;
    const submit = async (w: NativeSink, record: () => Steps | undefined) => {
      if (inflight) await inflight;
      const k = ++n;
      const run = this.#exclusive(async () => {
        // Marked before the commit, as every apply's writes are (#marking).
        const t = this.#touched?.get(d.family);
        if (t) t.whole = true;
        await this.#commitNative(
          w,
          stats,
          ` by it (a cold apply's staged transaction ${k}; those before it stay, unreachable from any hook)`,
        );
        const steps = record();
        if (steps) await runSteps(steps, slicer);
      });
      run.catch(() => undefined); // awaited by the next part, or by landed()
      inflight = run;
    };
    return { submit, landed: async () => inflight && (await inflight) };
  }

  // The first staged transaction: the table, sets (maps after the chains their verdicts name), empty chains.
  *#stageHead(w: PlanSink, d: DesiredFamily, c: CommittedFamily, chains: DesiredChain[], stats: ApplyStats): Steps {
    const f = d.family;
    if (!c.exists) w.tableAdd(f, this.table);
    for (const s of d.sets.values()) if (!isMap(s)) yield* writeNewSet(w, f, this.table, s, stats);
    let n = 0;
    for (const ch of chains) {
      w.chainAdd(f, this.table, ch.name);
      if ((++n & 255) === 0) yield;
    }
    for (const s of d.sets.values()) if (isMap(s)) yield* writeNewSet(w, f, this.table, s, stats);
  }

  // Whole chains' rules from chains[i], about #stageRules of them (one chain at least); returns where it stopped.
  *#stageRulesFrom(
    w: PlanSink,
    f: Family,
    chains: DesiredChain[],
    i: number,
    stats: ApplyStats,
  ): Generator<void, number, undefined> {
    let rules = 0;
    for (; i < chains.length && (rules === 0 || rules < this.#stageRules); i++) {
      const ch = chains[i] as DesiredChain;
      yield* writeRules(w, f, this.table, ch, stats);
      rules += ch.rules.length;
    }
    return i;
  }

  #exclusive<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#kernel.then(f);
    this.#kernel = run.catch(() => undefined);
    return run;
  }

  /**
   * A refresh beside applies (check.ts): reads our tables in parts, each between two
   * commits (the catalogue, then chains' rules 256 chains at a time, then each set's
   * elements; a plain set's beside commits, screened), and compares each part, sliced,
   * with what was committed, leaving out what applies write meanwhile. A commit waits for
   * one part at most, not for the table.
   * What drifted is adopted, and so repaired, by the next apply.
   */
  async check(desired: DesiredFamily[], slicer?: Slicer): Promise<CheckResult> {
    const result: CheckResult = { outcome: 'stale', drift: [], dumpMs: 0, compareMs: 0, asked: 0 };
    // The last check's drift is still to be adopted (no apply since): it stands.
    if (this.#pending) return result;
    const touched = new Map(desired.map((d) => [d.family, new Touched()]));
    this.#touched = touched;
    result.outcome = 'checked';
    const patches = new Map<Family, Patch>();
    try {
      for (const d of desired) {
        const report: DriftReport = { family: d.family, chains: [], sets: [] };
        const patch = emptyPatch();
        const outcome = await this.#checkFamily(d, touched.get(d.family) as Touched, report, patch, result, slicer);
        if (outcome !== 'checked') {
          result.outcome = outcome;
          break;
        }
        result.drift.push(report);
        patches.set(d.family, patch);
      }
    } catch (e) {
      // A dump that failed: applies stop marking what they write.
      if (this.#touched === touched) this.#touched = undefined;
      throw e;
    }
    const drifted = result.drift.some((r) => r.chains.length || r.sets.length);
    // Tracking goes on until the next apply adopts the drift: it may write those names first.
    if (result.outcome === 'checked' && drifted) this.#pending = { patches, touched };
    else if (this.#touched === touched) this.#touched = undefined;
    if (result.outcome !== 'checked') result.drift = [];
    return result;
  }

  async #checkFamily(
    d: DesiredFamily,
    t: Touched,
    report: DriftReport,
    patch: Patch,
    times: CheckResult,
    slicer: Slicer | undefined,
  ): Promise<CheckResult['outcome']> {
    const family = NFPROTO[d.family];
    const read = async (scope: NftDumpScope, beside = false) => {
      const t0 = performance.now();
      const dump = () => nftDump(family, this.table, scope);
      const part = await (beside ? dump() : this.#exclusive(dump));
      times.dumpMs += performance.now() - t0;
      return part;
    };
    const compare = async (steps: Steps) => {
      const t0 = performance.now();
      await runSteps(steps, slicer);
      times.compareMs += performance.now() - t0;
    };
    const cat = await read({ catalogue: true });
    const c = this.#committed.get(d.family);
    if (!c || c.full || t.whole) return 'stale';
    if (c.exists && !cat.exists) return 'lost';
    compareCatalogue(cat, c, t, d, report, patch);
    // Plain sets are dumped beside commits and screened (screenSet): one of 250,000
    // elements is a 0.9 s dump (the kernel's set dumps are O(n^2)), which held every
    // commit back while it ran. The rest are small, read holding commits back.
    const plain = new Set<string>();
    for (const s of cat.sets)
      if (this.#setsBeside && !(s.flags & (SET_FLAG.map | SET_FLAG.interval))) plain.add(s.name);
    const readPart = (scope: NftDumpScope) =>
      read(scope, 'elementsOf' in scope && scope.elementsOf.length === 1 && plain.has(scope.elementsOf[0] as string));
    for await (const part of partsAfter(cat, readPart, (name) => c.chains.get(name)?.length ?? 1)) {
      if ('rules' in part) await compare(compareRules(part.rules, c, t, report, patch));
      else if (!plain.has(part.set.name) || (await this.#screen(d.family, part.set, c, t, times, slicer))) {
        const again = plain.has(part.set.name) ? await read({ rulesOf: [], elementsOf: [part.set.name] }) : undefined;
        const set = again ? { ...(again.sets[0] as NftDump['sets'][number]), flags: part.set.flags } : part.set;
        await compare(compareSet(set, c, t, report, patch));
      }
      if (t.whole) return 'stale';
    }
    return 'checked';
  }

  /**
   * A plain set dumped beside commits: whether it may have drifted (then it is read again
   * holding commits back). The committed elements its dump did not list are asked for.
   */
  async #screen(
    f: Family,
    s: NftDump['sets'][number],
    c: CommittedFamily,
    t: Touched,
    times: CheckResult,
    slicer: Slicer | undefined,
  ): Promise<boolean> {
    const missing: string[] = [];
    const t0 = performance.now();
    const drifted = await runSteps(screenSet(s, c, t, missing), slicer);
    times.compareMs += performance.now() - t0;
    if (drifted || !missing.length) return drifted;
    const ask = missingKeys(s.name, missing, c);
    const t1 = performance.now();
    const present = await nftGetElems(NFPROTO[f], this.table, s.name, ask.keys);
    times.dumpMs += performance.now() - t1;
    times.asked += ask.keys.length;
    return confirmedMissing(s.name, ask.ids, present, c, t);
  }

  /** A check's drift becomes the committed state for its names, marked dirty (check.ts). */
  #adopt(desired: DesiredFamily[]): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    this.#touched = undefined;
    for (const d of desired) {
      const c = this.#committed.get(d.family);
      const patch = pending.patches.get(d.family);
      const t = pending.touched.get(d.family);
      if (c && patch && t) adoptPatch(c, t, patch, d);
    }
  }

  /** `scope`: what stays of the apply when this transaction fails (a cold apply's staged ones, members ahead). */
  async #commitNative(sink: NativeSink, stats: ApplyStats, scope = ''): Promise<void> {
    const t0 = performance.now();
    try {
      const r = await nftCommit(sink.parts());
      stats.ops += r.ops;
      stats.messages += r.messages;
      stats.bytes += r.bytes;
      stats.transactions++;
      stats.commitMs += performance.now() - t0;
    } catch (e) {
      const failures = failuresOf(e).map((f) => ({
        object: f.tag === null ? 'the batch' : (sink.describe(f.tag) ?? `op ${f.tag}`),
        errno: f.errno,
      }));
      const what = failures.length
        ? failures.map((f) => `${f.object} (errno ${f.errno})`).join('; ')
        : (e as Error).message;
      throw new NftApplyError(`nftables transaction failed, nothing changed${scope}: ${what}`, failures, e);
    }
  }

  async #commitExec(sink: NftTextSink, stats: ApplyStats): Promise<void> {
    const t0 = performance.now();
    const text = sink.text();
    stats.ops += sink.length;
    stats.bytes += Buffer.byteLength(text);
    await new Promise<void>((resolve, reject) => {
      const child = spawn('nft', ['-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? resolve()
          : reject(new NftApplyError(`nft -f failed (${code}), nothing changed: ${err.trim()}`, [], undefined)),
      );
      child.stdin.end(text);
    });
    stats.transactions++;
    stats.commitMs += performance.now() - t0;
  }

  /**
   * A running check's marks for what this apply writes, made before its commit: a set a
   * check dumps beside commits (screenSet) may list the commit's elements before the
   * apply has recorded them.
   */
  #marking(d: DesiredFamily): void {
    const c = this.#committed.get(d.family);
    this.#touched?.get(d.family)?.recording(d, c, !c || c.full || !d.dirty);
  }

  /**
   * After a successful commit: the committed state is the desired state for what was
   * planned. `recorded`: sets recorded already as their own transactions landed (a cold
   * apply's staging, members committed ahead), not copied again.
   */
  *#record(d: DesiredFamily, recorded?: Set<string>): Steps {
    let c = this.#committed.get(d.family);
    if (!c || c.full || !d.dirty) {
      const before = c;
      c = emptyCommitted();
      for (const ch of d.chains.values()) {
        c.chains.set(ch.name, ch.hashes);
        if ((c.chains.size & 1023) === 0) yield;
      }
      for (const s of d.sets.values()) {
        c.layouts.set(s.name, layoutOf(s.spec));
        const copy = recorded?.has(s.name) ? before?.sets.get(s.name) : undefined;
        c.sets.set(s.name, copy ?? s.elems.clone());
        s.delta = undefined;
        yield;
      }
    } else {
      for (const name of d.dirty.chains) {
        const ch = d.chains.get(name);
        if (ch) c.chains.set(name, ch.hashes);
        else c.chains.delete(name);
      }
      for (const name of d.dirty.sets) {
        const s = d.sets.get(name);
        if (!s) {
          c.sets.delete(name);
          c.layouts.delete(name);
          continue;
        }
        if (!recorded?.has(name)) recordSet(c, s, true);
        s.delta = undefined;
      }
    }
    c.exists = true;
    c.full = false;
    this.#committed.set(d.family, c);
    d.dirty = { chains: new Set(), sets: new Set() };
  }

  // Steps: one per set and per chain written, and one per ELEM_CHUNK elements. `staged`:
  // sets a cold apply's staged transactions wrote, as desired (not compared again).
  // `ahead`: where IP-set members and new plain sets go (a transaction committed ahead of
  // `w`'s), with the sets written there; unset: into `w`.
  *#plan(
    w: PlanSink,
    d: DesiredFamily,
    c: CommittedFamily,
    stats: ApplyStats,
    staged?: Set<string>,
    ahead?: { sink: PlanSink; sets: DesiredSet[] },
  ): Steps {
    const f = d.family;
    const t = this.table;
    // Which names to look at: what changed, or (after a read-back, or at first) everything.
    const whole = c.full || !d.dirty;
    const chainNames = whole ? yield* unionSteps(d.chains.keys(), c.chains.keys()) : d.dirty!.chains;
    const setNames = whole ? yield* unionSteps(d.sets.keys(), c.sets.keys()) : d.dirty!.sets;
    if (!c.exists) w.tableAdd(f, t);
    let compared = 0;
    const syncSet = function* (s: DesiredSet): Steps {
      const have = c.sets.get(s.name);
      if (relaid.has(s.name)) {
        // With the chains it empties: its users must not see it gone.
        w.setDel(f, t, s.name);
        stats.elemsRemoved += have?.size ?? 0;
        yield* writeNewSet(w, f, t, s, stats);
        return;
      }
      // A map's verdicts name chains: it goes with them.
      const to = ahead && !isMap(s) ? ahead.sink : w;
      if (!have) {
        if (to !== w) ahead?.sets.push(s);
        yield* writeNewSet(to, f, t, s, stats);
        return;
      }
      const removed: ElemSpec[] = [];
      const added: ElemSpec[] = [];
      if (!whole && s.delta) {
        // Only members changed since the last apply: the delta, checked against what we committed.
        for (const [id, e] of s.delta.removed) if (have.has(id)) removed.push(e);
        for (const [id, e] of s.delta.added) if (!have.has(id)) added.push(e);
      } else {
        // Compared whole (after a read-back: an agent's restart over a programmed node),
        // with a turn for the loop every COMPARE_CHUNK elements, of one big set or of
        // many small ones.
        for (const [id, e] of have) {
          if (!s.elems.has(id)) removed.push(e);
          if (++compared % COMPARE_CHUNK === 0) yield;
        }
        for (const [id, e] of s.elems) {
          if (!have.has(id)) added.push(e);
          if (++compared % COMPARE_CHUNK === 0) yield;
        }
      }
      if (to !== w && (removed.length || added.length)) ahead?.sets.push(s);
      if (s.spec.flags & SET_FLAG.interval) deletionOrder(removed);
      // Deletes first: an interval set refuses a new element overlapping an old one.
      yield* writeElems(to, false, f, t, s.name, removed);
      yield* writeElems(to, true, f, t, s.name, added);
      stats.elemsAdded += added.length;
      stats.elemsRemoved += removed.length;
    };
    const sets = (yield* pickSteps(setNames, d.sets)).filter((s) => !staged?.has(s.name));
    yield;
    // 0. Sets the kernel holds in another layout: the chains that may use them are
    // emptied first, and written again below (relayout.ts).
    const relaid = relaidSets(sets, c);
    const emptied = new Set<string>();
    if (relaid.size) yield* emptyUsers(w, d, c, t, relaid, emptied);
    const toWrite = emptied.size ? yield* unionSteps(chainNames, emptied) : chainNames;
    // Created table by table, as `palisade plan` declares them, so `nft list` (creation
    // order) reads the same either way.
    const chains = yield* byTableSteps(yield* pickSteps(toWrite, d.chains));
    yield;
    // 1. IP sets, so rules may use them. 2. Chains, so maps and jumps may name them.
    for (const s of sets) if (!isMap(s)) yield* syncSet(s);
    let n = 0;
    for (const ch of chains) {
      if (!ch.base && !c.chains.has(ch.name)) w.chainAdd(f, t, ch.name);
      if ((++n & 255) === 0) yield;
    }
    // 3. Maps (dispatch), whose verdicts name chains. 4. Changed chains' rules, base chains last.
    for (const s of sets) if (isMap(s)) yield* syncSet(s);
    for (const ch of yield* baseLastSteps(chains)) {
      let had = emptied.has(ch.name) ? [] : c.chains.get(ch.name);
      // A base chain declared otherwise (another hook type or priority, e.g. by an older
      // version) is replaced: its one rule is a jump, so nothing is lost in between.
      const base = ch.base && c.bases.get(ch.name);
      if (had && base && ch.base && base !== baseOf(ch.base)) {
        if (had.length) w.chainFlush(f, t, ch.name);
        w.chainDel(f, t, ch.name);
        had = undefined;
      }
      if ((++n & 255) === 0) yield;
      if (sameList(had, ch.hashes)) continue;
      if (ch.base && !had) w.chainAdd(f, t, ch.name, ch.base);
      if (had?.length) w.chainFlush(f, t, ch.name);
      yield* writeRules(w, f, t, ch, stats);
    }
    // 5. What is no longer wanted: empty the chains first (dropping their jumps), then
    // delete them, then the sets nothing uses any more.
    const gone: string[] = [];
    for (const name of chainNames) {
      if (!d.chains.has(name) && c.chains.has(name)) gone.push(name);
      if ((++n & 1023) === 0) yield;
    }
    for (const name of gone) {
      if (!emptied.has(name) && c.chains.get(name)?.length) w.chainFlush(f, t, name);
      if ((++n & 255) === 0) yield;
    }
    for (const name of gone) {
      w.chainDel(f, t, name);
      if ((++n & 255) === 0) yield;
    }
    stats.chainsDeleted += gone.length;
    for (const name of setNames) {
      if (!d.sets.has(name) && c.sets.has(name)) w.setDel(f, t, name);
      if ((++n & 255) === 0) yield;
    }
  }
}

/**
 * Steps of `render` until it ends (true) or `enough()` (false), leaving it open: the
 * render goes on where it stopped at the next call.
 */
function* renderUntil(render: Steps, enough: () => boolean): Generator<void, boolean, undefined> {
  while (!enough()) {
    if (render.next().done) return true;
    yield;
  }
  return false;
}

/**
 * One set as committed: its delta applied to the elements recorded before (`byDelta`, in
 * the layout recorded), else its elements copied whole.
 */
function recordSet(c: CommittedFamily, s: DesiredSet, byDelta: boolean): void {
  const had = c.sets.get(s.name);
  if (byDelta && s.delta && had && !otherLayout(c, s)) {
    for (const id of s.delta.removed.keys()) had.delete(id);
    for (const [id, e] of s.delta.added) had.set(id, e);
  } else c.sets.set(s.name, s.elems.clone());
  c.layouts.set(s.name, layoutOf(s.spec));
}

/** The first staged transaction, committed: the table, its sets as written, its chains empty. */
function* recordStagedHead(c: CommittedFamily, d: DesiredFamily, chains: DesiredChain[]): Steps {
  c.exists = true;
  for (const s of d.sets.values()) {
    c.layouts.set(s.name, layoutOf(s.spec));
    c.sets.set(s.name, s.elems.clone());
    yield;
  }
  // A turn of the loop every 1,024 chains: a 100,000-rule node has ~17,000 (a step of
  // 6 ms or more, the most of a 25.7 ms block of the loop in a profiled cold apply).
  let n = 0;
  for (const ch of chains) {
    c.chains.set(ch.name, []);
    if ((++n & 1023) === 0) yield;
  }
}

/**
 * Puts an interval set's removals in key order, an end before a start at the same key
 * (that end closes the interval before): each interval's start then comes before its
 * end. The kernel (6.18's rbtree) refuses to delete an end element (ENOENT) while its
 * start is still there. A read-back lists elements in descending order, ends first, so
 * removals computed against one (after every refresh) failed, and so did every retry.
 */
function deletionOrder(list: ElemSpec[]): void {
  // Keys of one set are hex of one length: as strings they sort as their bytes do.
  list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : b.flags - a.flags));
}

function sameElems(have: StringMap<ElemSpec> | undefined, d: DesiredSet): boolean {
  if (!have || have.size !== d.elems.size) return false;
  for (const k of d.elems.keys()) if (!have.has(k)) return false;
  return true;
}
