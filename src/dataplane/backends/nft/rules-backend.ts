// The nftables RulesBackend: one desired-state builder per family (rendering and hashing
// only what changed) in front of NftBackend (the diff, the transaction, the read-back).
import type { Config } from '../../../config/params.js';
import type { Dirty, DesiredState } from '../../desired-state.js';
import type { Family } from '../../render/model.js';
import type { RulesApplyStats, RulesBackend, RulesCheck, RulesDrift } from '../rules-backend.js';
import { NftBackend } from './backend.js';
import { NftDesiredBuilder } from './desired-builder.js';
import { runSteps, type Slicer } from '../../slicer.js';

export class NftRulesBackend implements RulesBackend {
  readonly name = 'nftables';
  readonly families: readonly Family[];
  readonly #builders: NftDesiredBuilder[];
  readonly #backend: NftBackend;

  constructor(config: Config, families: readonly Family[], opts: ConstructorParameters<typeof NftBackend>[0] = {}) {
    this.families = families;
    this.#builders = families.map((f) => new NftDesiredBuilder(config, f));
    this.#backend = new NftBackend(opts);
  }

  resync(slicer?: Slicer): Promise<void> {
    return this.#backend.resync([...this.families], slicer);
  }

  async rebuild(state: DesiredState, slicer?: Slicer): Promise<void> {
    // A cold start commits its chains in parts as they are rendered (NftBackend.rebuild).
    for (const b of this.#builders) await this.#backend.rebuild(b.desired, b.rebuildSteps(state), slicer);
  }

  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    for (const b of this.#builders) b.update(state, dirty);
  }

  apply(slicer?: Slicer): Promise<RulesApplyStats> {
    return this.#backend.apply(
      this.#builders.map((b) => b.desired),
      slicer,
    );
  }

  async drift(slicer?: Slicer): Promise<RulesDrift[]> {
    const out: RulesDrift[] = [];
    for (const b of this.#builders) {
      const report: RulesDrift = { family: b.desired.family, chains: [], sets: [] };
      await runSteps(this.#backend.driftSteps(b.desired, report), slicer);
      out.push(report);
    }
    return out;
  }

  check(slicer?: Slicer): Promise<RulesCheck> {
    return this.#backend.check(
      this.#builders.map((b) => b.desired),
      slicer,
    );
  }

  repairOnly(drift: RulesDrift[]): void {
    for (const b of this.#builders) {
      const family = b.desired.family;
      this.#backend.repairOnly(b.desired, drift.find((x) => x.family === family) ?? { family, chains: [], sets: [] });
    }
  }

  ruleCount(): number {
    let n = 0;
    for (const b of this.#builders) n += b.ruleCount;
    return n;
  }

  removeAll(): Promise<void> {
    return this.#backend.removeTables([...this.families]);
  }
}
