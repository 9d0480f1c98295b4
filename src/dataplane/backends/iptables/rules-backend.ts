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
import type { Dirty, DesiredState } from '../../desired-state.js';
import { run } from '../../exec.js';
import { type IpsetDataplane, IPSets } from '../../ipsets/ipsets.js';
import type { Family, IPSet } from '../../render/model.js';
import { noStats, type RulesApplyStats, type RulesBackend, type RulesDrift } from '../rules-backend.js';
import { type ChainScope, IptablesDesiredBuilder } from './desired-builder.js';
import { commitTo, type Desired, type IptablesState, parseSave, restoreScript } from './state.js';

export type IptablesFlavour = 'nft' | 'legacy';

/** A restore the kernel (or the tool) refused: nothing of it was applied. */
export class IptablesApplyError extends Error {
  readonly code = 'EIPTABLES';
  constructor(
    message: string,
    readonly script: string,
  ) {
    super(message);
    this.name = 'IptablesApplyError';
  }
}

const SET_TYPE: Record<'net' | 'ipPort', IpsetType> = { net: 'hash:net', ipPort: 'hash:ip,port' };

export class IptablesRulesBackend implements RulesBackend {
  readonly name: string;
  readonly families: readonly Family[];
  readonly #config: Config;
  readonly #flavour: IptablesFlavour;
  readonly #log: Logger;
  readonly #ipsets: Map<Family, IPSets>;
  readonly #builders: Map<Family, IptablesDesiredBuilder>;
  #committed = new Map<Family, IptablesState>();

  constructor(config: Config, families: readonly Family[], opts: { flavour: IptablesFlavour; log: Logger; ipsets?: IpsetDataplane }) {
    this.name = `iptables-${opts.flavour}`;
    this.families = families;
    this.#config = config;
    this.#flavour = opts.flavour;
    this.#log = opts.log;
    this.#ipsets = new Map(families.map((f) => [f, new IPSets(f, { maxSize: config.MaxIpsetSize, log: opts.log, ...(opts.ipsets ? { dataplane: opts.ipsets } : {}) })]));
    this.#builders = new Map(families.map((f) => [f, new IptablesDesiredBuilder(config, f)]));
  }

  #tool(family: Family, what: 'save' | 'restore'): string {
    return `${family === 4 ? 'iptables' : 'ip6tables'}-${this.#flavour}-${what}`;
  }

  async resync(): Promise<void> {
    for (const f of this.families) {
      const r = await run(this.#tool(f, 'save'), []);
      if (r.code !== 0) throw new Error(`${this.#tool(f, 'save')} failed (${r.code}): ${r.stderr.trim()}`);
      this.#committed.set(f, parseSave(r.stdout));
      this.#ipsets.get(f)?.markResync();
    }
  }

  rebuild(state: DesiredState): void {
    for (const b of this.#builders.values()) b.rebuild(state);
  }

  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    for (const b of this.#builders.values()) b.update(state, dirty);
  }

  // IP sets first (the rules may use new ones), then one restore per family with only the
  // chains that changed, then the sets nothing uses any more. An apply where only set
  // members changed renders nothing and runs no restore.
  async apply(): Promise<RulesApplyStats> {
    const stats = noStats();
    const t0 = performance.now();
    const plans: Array<{ family: Family; builder: IptablesDesiredBuilder; scope: ChainScope; script: string }> = [];
    for (const [f, builder] of this.#builders) {
      const sets = builder.takeSets();
      // Marked now, destroyed only after the restore (a failed apply keeps them marked).
      for (const name of sets.removed) this.#ipsets.get(f)?.remove(name);
      await this.#updateSets(f, sets.changed, stats);
      if (!builder.rulesDirty) continue;
      const scope = builder.render();
      const plan = restoreScript(this.#committed.get(f) ?? new Map(), builder.desired, this.#config.ChainInsertMode, scope);
      stats.chainsWritten += plan.chainsWritten;
      stats.rulesWritten += plan.rulesWritten;
      stats.chainsDeleted += plan.chainsDeleted;
      plans.push({ family: f, builder, scope, script: plan.script });
    }
    for (const { family, builder, scope, script } of plans) {
      if (script) {
        stats.ops += script.split('\n').length - 1;
        await this.#restore(family, script);
      }
      this.#committed.set(family, commitTo(this.#committed.get(family) ?? new Map(), builder.desired, scope));
    }
    for (const sets of this.#ipsets.values()) await sets.applyDeletions();
    stats.commitMs = performance.now() - t0;
    return stats;
  }

  /** Creates or updates these sets (before the rules that use them). */
  async #updateSets(f: Family, list: readonly IPSet[], stats: RulesApplyStats): Promise<void> {
    const sets = this.#ipsets.get(f) as IPSets;
    for (const s of list) sets.addOrReplace(s.name, SET_TYPE[s.kind], s.members);
    const r = await sets.applyUpdates();
    stats.elemsAdded += r.added;
    stats.elemsRemoved += r.removed;
  }

  async #restore(family: Family, script: string): Promise<void> {
    const tool = this.#tool(family, 'restore');
    // Felix's flags: wait up to 10 s for the xtables lock kube-proxy may hold, probing every 50 ms.
    const lock = ['--wait', '10', '--wait-interval', '50000'];
    const r = await run(tool, ['--noflush', ...lock], script);
    if (r.code !== 0) {
      // Nothing of a refused restore is applied; read back before the next try.
      this.#committed.delete(family);
      const line = /line:? (\d+)/i.exec(r.stderr)?.[1];
      const at = line ? ` at line ${line}: ${script.split('\n')[Number(line) - 1] ?? ''}` : '';
      throw new IptablesApplyError(`${tool} failed (${r.code})${at}: ${r.stderr.trim()}`, script);
    }
  }

  drift(): RulesDrift[] {
    return this.families.map((family) => {
      const want = this.#builders.get(family)?.desired;
      const plan = want ? restoreScript(this.#committed.get(family) ?? new Map(), want, this.#config.ChainInsertMode) : undefined;
      const chains = [...(plan?.script.matchAll(/^:(\S+)/gm) ?? [])].map((m) => m[1] as string);
      return { family, chains, sets: [] };
    });
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
