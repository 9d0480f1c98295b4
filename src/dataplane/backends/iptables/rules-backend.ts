// The iptables RulesBackend, with Felix's transport: `iptables-save` to read our state
// back, one `iptables-restore --noflush --wait` per family and apply (only chains and
// hooks that differ are in it), IP sets through the native netlink code (IPSets: created
// and filled before the rules that use them, removed after). Works with either iptables
// backend: the `-nft` tools (nf_tables underneath) or `-legacy` (x_tables). Rendering is
// the iptables style of the shared rule model, kept per family by IptablesDesiredBuilder:
// an apply renders, compares and writes only the chains that changed; one where only IP-set
// members changed touches only the sets.
import type { Config } from '../../../config/params.js';
import type { Logger } from '../../../log.js';
import type { IpsetType } from '../../../native/ipset.js';
import type { Dirty, DesiredState, MemberDelta } from '../../desired-state.js';
import { run } from '../../exec.js';
import { runSteps, type Slicer, type Steps } from '../../slicer.js';
import { type IpsetDataplane, IPSets } from '../../ipsets/ipsets.js';
import type { Family, IPSet } from '../../render/model.js';
import { familyMembers } from '../../render/ruleset.js';
import {
  type MembersBesideStats,
  noStats,
  type RulesApplyStats,
  type RulesBackend,
  type RulesDrift,
} from '../rules-backend.js';
import { type ChainScope, IptablesDesiredBuilder } from './desired-builder.js';
import {
  ExecRestore,
  type IptablesFlavour,
  LibiptcRestore,
  NetlinkRestore,
  type RestoreTransport,
} from './transport.js';
import {
  commitToSteps,
  type Desired,
  type IptablesState,
  parseSaveSteps,
  restoreScript,
  restoreScriptSteps,
} from './state.js';

/** The configured transport: native (libiptc or netlink) unless IptablesTransport is exec. */
export function transportFor(config: Config, flavour: IptablesFlavour, log: Logger): RestoreTransport {
  const lock = {
    lockPath: config.IptablesLockFilePath,
    lockTimeoutMs: Math.round(config.IptablesLockTimeoutSecs * 1000),
    lockIntervalMs: Math.max(1, Math.round(config.IptablesLockProbeIntervalMillis)),
  };
  if (config.IptablesTransport === 'exec') return new ExecRestore(flavour, lock);
  return flavour === 'legacy' ? new LibiptcRestore(lock, log) : new NetlinkRestore(lock, log);
}

export const SET_TYPE: Record<'ip' | 'net' | 'ipPort', IpsetType> = {
  ip: 'hash:ip',
  net: 'hash:net',
  ipPort: 'hash:ip,port',
};

function* replaceAll(sets: IPSets, list: readonly IPSet[]): Steps {
  for (const s of list) {
    yield* sets.addOrReplaceSteps(s.name, SET_TYPE[s.kind], s.members);
    yield;
  }
}

export class IptablesRulesBackend implements RulesBackend {
  readonly name: string;
  readonly families: readonly Family[];
  readonly #config: Config;
  readonly #flavour: IptablesFlavour;
  readonly #log: Logger;
  readonly #ipsets: Map<Family, IPSets>;
  readonly #builders: Map<Family, IptablesDesiredBuilder>;
  #committed = new Map<Family, IptablesState>();

  readonly #transport: RestoreTransport;
  /**
   * Member changes programmed while a restore is in flight (applyMembersBeside): open
   * only then, run one after another, and waited for before the apply goes on to remove
   * sets. The first failure is the apply's.
   */
  #beside: { open: boolean; work: Promise<void>; error?: Error } = { open: false, work: Promise.resolve() };

  constructor(
    config: Config,
    families: readonly Family[],
    opts: { flavour: IptablesFlavour; log: Logger; ipsets?: IpsetDataplane; transport?: RestoreTransport },
  ) {
    this.name = `iptables-${opts.flavour}`;
    this.#transport = opts.transport ?? transportFor(config, opts.flavour, opts.log);
    this.families = families;
    this.#config = config;
    this.#flavour = opts.flavour;
    this.#log = opts.log;
    this.#ipsets = new Map(
      families.map((f) => [
        f,
        new IPSets(f, {
          maxSize: config.MaxIpsetSize,
          log: opts.log,
          ...(opts.ipsets ? { dataplane: opts.ipsets } : {}),
        }),
      ]),
    );
    this.#builders = new Map(families.map((f) => [f, new IptablesDesiredBuilder(config, f)]));
  }

  #tool(family: Family, what: 'save' | 'restore'): string {
    return `${family === 4 ? 'iptables' : 'ip6tables'}-${this.#flavour}-${what}`;
  }

  async resync(slicer?: Slicer): Promise<void> {
    for (const f of this.families) {
      const r = await run(this.#tool(f, 'save'), []);
      if (r.code !== 0) throw new Error(`${this.#tool(f, 'save')} failed (${r.code}): ${r.stderr.trim()}`);
      this.#committed.set(f, await runSteps(parseSaveSteps(r.stdout), slicer));
      this.#ipsets.get(f)?.markResync();
      this.#builders.get(f)?.compareAll();
    }
  }

  async rebuild(state: DesiredState, slicer?: Slicer): Promise<void> {
    for (const b of this.#builders.values()) await runSteps(b.rebuildSteps(state), slicer);
  }

  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    for (const b of this.#builders.values()) b.update(state, dirty);
  }

  // IP sets first (the rules may use new ones), then one restore per family with only the
  // chains that changed, then the sets nothing uses any more. An apply where only set
  // members changed renders nothing and runs no restore.
  async apply(slicer?: Slicer): Promise<RulesApplyStats> {
    const stats = noStats();
    const t0 = performance.now();
    let setsMs = 0;
    const plans: Array<{ family: Family; builder: IptablesDesiredBuilder; scope: ChainScope; script: string }> = [];
    for (const [f, builder] of this.#builders) {
      const sets = builder.takeSets();
      // Marked now, destroyed only after the restore (a failed apply keeps them marked).
      for (const name of sets.removed) this.#ipsets.get(f)?.remove(name);
      const s0 = performance.now();
      await this.#updateSets(f, sets, stats, slicer);
      setsMs += performance.now() - s0;
      if (stats.elemsAdded || stats.elemsRemoved) stats.membersLanded = { at: performance.now(), commitMs: setsMs };
      if (!builder.rulesDirty) continue;
      const scope = await runSteps(builder.renderSteps(), slicer);
      const plan = await runSteps(
        restoreScriptSteps(this.#committed.get(f) ?? new Map(), builder.desired, this.#config.ChainInsertMode, scope),
        slicer,
      );
      stats.chainsWritten += plan.chainsWritten;
      stats.rulesWritten += plan.rulesWritten;
      stats.chainsDeleted += plan.chainsDeleted;
      plans.push({ family: f, builder, scope, script: plan.script });
    }
    // ipsets do not take nf_tables' commit lock: members may change while the kernel
    // validates the restored table.
    this.#beside = { open: plans.length > 0, work: Promise.resolve() };
    try {
      await this.#restorePlans(plans, stats, slicer);
    } finally {
      this.#beside.open = false;
      await this.#beside.work;
    }
    if (this.#beside.error) throw this.#beside.error;
    for (const sets of this.#ipsets.values()) await sets.applyDeletions();
    stats.commitMs = performance.now() - t0;
    return stats;
  }

  async #restorePlans(
    plans: Array<{ family: Family; builder: IptablesDesiredBuilder; scope: ChainScope; script: string }>,
    stats: RulesApplyStats,
    slicer?: Slicer,
  ): Promise<void> {
    for (const { family, builder, scope, script } of plans) {
      if (script) {
        stats.ops += script.split('\n').length - 1;
        stats.restores = (stats.restores ?? 0) + 1;
        const r0 = performance.now();
        await this.#restore(family, script, slicer);
        stats.restoreMs = (stats.restoreMs ?? 0) + performance.now() - r0;
        const last = this.#transport.last;
        if (last) {
          stats.restoreReadMs = (stats.restoreReadMs ?? 0) + last.readMs;
          stats.restoreCommitMs = (stats.restoreCommitMs ?? 0) + last.commitMs;
          if (last.lockWaitMs !== undefined) (stats.restoreLockWaitMs ??= []).push(last.lockWaitMs);
        }
      }
      const committed = commitToSteps(this.#committed.get(family) ?? new Map(), builder.desired, scope);
      this.#committed.set(family, await runSteps(committed, slicer));
    }
  }

  canTakeMembersBeside(ids: readonly string[]): boolean {
    if (!this.#beside.open || this.#beside.error) return false;
    for (const [f, builder] of this.#builders) {
      const sets = this.#ipsets.get(f) as IPSets;
      for (const id of ids) {
        const name = builder.membersOnlySet(id);
        if (name === undefined || !sets.deltaReady(name)) return false;
      }
    }
    return true;
  }

  applyMembersBeside(deltas: ReadonlyMap<string, MemberDelta>): Promise<MembersBesideStats> {
    const run = this.#beside.work.then(() => this.#membersBeside(deltas));
    const beside = this.#beside;
    beside.work = run.then(
      () => undefined,
      (e: Error) => {
        beside.error ??= e;
      },
    );
    return run;
  }

  async #membersBeside(deltas: ReadonlyMap<string, MemberDelta>): Promise<MembersBesideStats> {
    const t0 = performance.now();
    const out: MembersBesideStats = { at: 0, commitMs: 0, elemsAdded: 0, elemsRemoved: 0 };
    for (const [f, builder] of this.#builders) {
      const sets = this.#ipsets.get(f) as IPSets;
      for (const [id, d] of deltas) {
        const name = builder.membersOnlySet(id);
        if (name === undefined) throw new Error(`IP set ${id} changed under its members' update`);
        sets.removeMembers(name, familyMembers(d.removed, f));
        sets.addMembers(name, familyMembers(d.added, f));
      }
      const r = await sets.applyUpdates();
      out.elemsAdded += r.added;
      out.elemsRemoved += r.removed;
    }
    out.at = performance.now();
    out.commitMs = out.at - t0;
    return out;
  }

  /** Creates or updates these sets (before the rules that use them). */
  async #updateSets(
    f: Family,
    taken: ReturnType<IptablesDesiredBuilder['takeSets']>,
    stats: RulesApplyStats,
    slicer?: Slicer,
  ): Promise<void> {
    const sets = this.#ipsets.get(f) as IPSets;
    // One run of steps for all of them: a slice's budget is per run.
    await runSteps(replaceAll(sets, taken.changed), slicer);
    for (const d of taken.deltas) {
      sets.removeMembers(d.name, d.removed);
      sets.addMembers(d.name, d.added);
    }
    const r = await sets.applyUpdates(slicer);
    stats.elemsAdded += r.added;
    stats.elemsRemoved += r.removed;
  }

  async #restore(family: Family, script: string, slicer?: Slicer): Promise<void> {
    try {
      await this.#transport.restore(family, script, slicer);
    } catch (e) {
      // Read back before the next try (the driver resyncs after a failed apply).
      this.#committed.delete(family);
      throw e;
    }
  }

  async drift(slicer?: Slicer): Promise<RulesDrift[]> {
    const out: RulesDrift[] = [];
    for (const family of this.families) {
      const want = this.#builders.get(family)?.desired;
      const plan = want
        ? await runSteps(
            restoreScriptSteps(this.#committed.get(family) ?? new Map(), want, this.#config.ChainInsertMode),
            slicer,
          )
        : undefined;
      const chains = [...(plan?.script.matchAll(/^:(\S+)/gm) ?? [])].map((m) => m[1] as string);
      out.push({ family, chains, sets: [] });
    }
    return out;
  }

  ruleCount(): number {
    let n = 0;
    for (const b of this.#builders.values()) n += b.ruleCount;
    return n;
  }

  async removeAll(): Promise<void> {
    await this.resync();
    for (const f of this.families) {
      const empty: Desired = { chains: new Map(), hooks: new Map() };
      const plan = restoreScript(this.#committed.get(f) ?? new Map(), empty, this.#config.ChainInsertMode);
      if (plan.script) await this.#restore(f, plan.script);
      const sets = this.#ipsets.get(f) as IPSets;
      await sets.applyUpdates();
      await sets.applyDeletions();
    }
    this.#log.info({ backend: this.name }, 'removed our iptables chains, hooks and IP sets');
  }
}
