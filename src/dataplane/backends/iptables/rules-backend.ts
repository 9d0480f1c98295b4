// The iptables RulesBackend, with Felix's transport: `iptables-save` to read our state
// back, one `iptables-restore --noflush --wait` per family and apply (only chains and
// hooks that differ are in it), IP sets through the native netlink code (IPSets: created
// and filled before the rules that use them, removed after). Works with either iptables
// backend: the `-nft` tools (nf_tables underneath) or `-legacy` (x_tables). Rendering is
// the iptables style of the shared rule model. An apply where only IP-set members changed
// touches only the sets; any other change renders the whole ruleset again (incremental
// rule rendering is still to come), and the kernel gets only what differs.
import type { Config } from '../../../config/params.js';
import type { Logger } from '../../../log.js';
import type { IpsetType } from '../../../native/ipset.js';
import type { DesiredIPSet, Dirty, DesiredState } from '../../desired-state.js';
import { run } from '../../exec.js';
import { type IpsetDataplane, IPSets } from '../../ipsets/ipsets.js';
import type { Family, IPSet } from '../../render/model.js';
import { ipSetName } from '../../render/names.js';
import { ipSetOf, renderRuleset } from '../../render/ruleset.js';
import { noStats, type RulesApplyStats, type RulesBackend, type RulesDrift } from '../rules-backend.js';
import { type Desired, desiredOf, type IptablesState, parseSave, restoreScript, stateOf } from './state.js';

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
  #state: DesiredState | undefined;
  /** Everything must be rendered (start, resync, a change other than IP-set members). */
  #full = true;
  /** IP sets whose members changed since the last apply. */
  readonly #dirtySets = new Set<string>();
  /** The IP sets the last full render wanted, per family. */
  readonly #setNames = new Map<Family, Set<string>>();
  #committed = new Map<Family, IptablesState>();
  #desired = new Map<Family, Desired>();

  constructor(config: Config, families: readonly Family[], opts: { flavour: IptablesFlavour; log: Logger; ipsets?: IpsetDataplane }) {
    this.name = `iptables-${opts.flavour}`;
    this.families = families;
    this.#config = config;
    this.#flavour = opts.flavour;
    this.#log = opts.log;
    this.#ipsets = new Map(families.map((f) => [f, new IPSets(f, { maxSize: config.MaxIpsetSize, log: opts.log, ...(opts.ipsets ? { dataplane: opts.ipsets } : {}) })]));
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
    this.#state = state;
    this.#full = true;
  }

  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    this.#state = state;
    for (const [kind, keys] of dirty) {
      if (kind === 'ipset') for (const id of keys) this.#dirtySets.add(id);
      else this.#full = true;
    }
  }

  async apply(): Promise<RulesApplyStats> {
    const stats = noStats();
    const state = this.#state;
    if (!state) return stats;
    const t0 = performance.now();
    if (this.#membersOnly(state)) {
      // No rule can differ: the sets alone go.
      for (const f of this.families) await this.#updateSets(f, [...this.#dirtySets].map((id) => ipSetOf(id, state.ipsets.get(id) as DesiredIPSet, f)), stats);
      this.#dirtySets.clear();
      stats.commitMs = performance.now() - t0;
      return stats;
    }
    this.#dirtySets.clear();
    const plans: Array<{ family: Family; want: Desired; script: string }> = [];
    for (const f of this.families) {
      const rs = renderRuleset(state, this.#config, f, 'iptables');
      const wanted = new Set(rs.sets.keys());
      for (const name of this.#setNames.get(f) ?? []) if (!wanted.has(name)) this.#ipsets.get(f)?.remove(name);
      this.#setNames.set(f, wanted);
      await this.#updateSets(f, rs.sets.values(), stats);
      const want = desiredOf(rs);
      this.#desired.set(f, want);
      const plan = restoreScript(this.#committed.get(f) ?? new Map(), want, this.#config.ChainInsertMode);
      stats.chainsWritten += plan.chainsWritten;
      stats.rulesWritten += plan.rulesWritten;
      stats.chainsDeleted += plan.chainsDeleted;
      plans.push({ family: f, want, script: plan.script });
    }
    for (const { family, want, script } of plans) {
      if (script) {
        stats.ops += script.split('\n').length - 1;
        await this.#restore(family, script);
      }
      this.#committed.set(family, stateOf(want));
    }
    for (const f of this.families) await this.#ipsets.get(f)?.applyDeletions();
    this.#full = false;
    stats.commitMs = performance.now() - t0;
    return stats;
  }

  /** Only members of sets already programmed changed since the last full render. */
  #membersOnly(state: DesiredState): boolean {
    return !this.#full && [...this.#dirtySets].every((id) => state.ipsets.has(id) && this.families.every((f) => this.#setNames.get(f)?.has(ipSetName(f, id))));
  }

  /** Creates or updates these sets (before the rules that use them). */
  async #updateSets(f: Family, list: Iterable<IPSet>, stats: RulesApplyStats): Promise<void> {
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
      const want = this.#desired.get(family);
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
