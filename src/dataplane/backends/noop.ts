// A RulesBackend that programs nothing and records what it was asked, for driver tests
// (as Felix's generictables NoopTable): every apply succeeds unless `failNext` is set.
import type { Dirty, DesiredState } from '../desired-state.js';
import type { Family } from '../render/model.js';
import { noStats, type RulesApplyStats, type RulesBackend, type RulesDrift } from './rules-backend.js';

export class NoopRulesBackend implements RulesBackend {
  readonly families: readonly Family[];
  /** What each apply reports having written (0: nothing differed). */
  opsPerApply = 0;
  /** Calls in order: "resync", "rebuild", "update:<kinds>", "apply", "removeAll". */
  readonly calls: string[] = [];
  /** The next apply rejects with this error (once). */
  failNext: Error | undefined;
  /** While set, applies wait for it (a slow kernel). */
  applyGate: Promise<void> | undefined;

  constructor(
    families: readonly Family[] = [4],
    readonly name = 'noop',
  ) {
    this.families = families;
  }

  ruleCount(): number {
    return 0;
  }

  async resync(): Promise<void> {
    this.calls.push('resync');
  }

  async rebuild(_state: DesiredState): Promise<void> {
    this.calls.push('rebuild');
  }

  update(_state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    this.calls.push(`update:${[...dirty.keys()].sort().join(',')}`);
  }

  async apply(): Promise<RulesApplyStats> {
    this.calls.push('apply');
    await this.applyGate;
    const e = this.failNext;
    this.failNext = undefined;
    if (e) throw e;
    return { ...noStats(), ops: this.opsPerApply };
  }

  async drift(): Promise<RulesDrift[]> {
    return this.families.map((family) => ({ family, chains: [], sets: [] }));
  }

  async removeAll(): Promise<void> {
    this.calls.push('removeAll');
  }
}
