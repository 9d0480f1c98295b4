// The seam between the dataplane driver and whatever programs the rules, as Felix's
// generictables.Table: the driver hands over the desired state and its changes; the
// backend keeps what it last committed, turns the difference into one transaction and
// commits it; resync() re-reads the kernel so the next apply repairs any drift. Rendering
// for the backend's syntax happens inside it. Backends: nftables (backends/nft), a no-op
// one for driver tests (backends/noop.ts); createRulesBackend (backends/factory.ts) picks.
import type { Dirty, DesiredState, MemberDelta } from '../desired-state.js';
import type { Slicer } from '../slicer.js';
import type { Family } from '../render/model.js';

export interface RulesApplyStats {
  /** Kernel operations sent (0: nothing differed). */
  ops: number;
  chainsWritten: number;
  rulesWritten: number;
  chainsDeleted: number;
  /** IP-set members added and removed. */
  elemsAdded: number;
  elemsRemoved: number;
  /** Time spent committing (the kernel transaction, or the exec'd tool), ms. */
  commitMs: number;
  /**
   * IP-set members committed ahead of the rules, in Felix's order (ipsets before
   * iptables), so a membership change does not wait for the kernel's validation of a rule
   * change: when they were in the kernel (performance.now()) and that commit's ms (part of
   * commitMs). Unset: nothing of the kind (no member changed, or a cold apply's one
   * transaction).
   */
  membersLanded?: { at: number; commitMs: number };
  /** iptables mode: restore transactions run (one per family that changed). */
  restores?: number;
  /**
   * iptables mode: ms in them (the script's parse and the commit; the rest of commitMs is
   * ipsets, rendering and planning).
   */
  restoreMs?: number;
  /** iptables mode, native transports: the restores' reading of the kernel and their commits, ms. */
  restoreReadMs?: number;
  restoreCommitMs?: number;
  /** iptables-legacy, native: each restore's wait for the xtables lock, ms (felix_iptables_lock_acquire_secs). */
  restoreLockWaitMs?: number[];
  /** nftables: netlink messages and bytes sent. */
  messages?: number;
  bytes?: number;
}

/** IP-set members programmed beside an apply in flight (RulesBackend.applyMembersBeside). */
export interface MembersBesideStats {
  /** When they were in the kernel (performance.now()). */
  at: number;
  commitMs: number;
  elemsAdded: number;
  elemsRemoved: number;
}

export interface RulesDrift {
  family: Family;
  chains: string[];
  sets: string[];
}

/** A refresh run beside applies (RulesBackend.check). */
export interface RulesCheck {
  /**
   * "checked": `drift` is what the next apply repairs; "stale": an apply compared
   * everything meanwhile, nothing to report; "lost": a table of ours is gone, read
   * everything back.
   */
  outcome: 'checked' | 'stale' | 'lost';
  drift: RulesDrift[];
  dumpMs: number;
  compareMs: number;
}

export interface RulesBackend {
  /** "nftables", "iptables-nft", "iptables-legacy", "noop": for logs and `palisade config`. */
  readonly name: string;
  readonly families: readonly Family[];
  /**
   * Reads our kernel state back: the next apply compares everything (as rendered) against
   * it. A node's table is 100,000s of rules and elements: the slicer gives the event loop a
   * turn between slices of the read-back.
   */
  resync(slicer?: Slicer): Promise<void>;
  /**
   * Renders the whole desired state again (after a resync). A cold render is long (100,000
   * rules): the slicer gives the event loop a turn between its slices.
   */
  rebuild(state: DesiredState, slicer?: Slicer): Promise<void>;
  /** Renders only what changed (DesiredState.takeDirty()). */
  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void;
  /** Makes the kernel equal the desired state in one transaction (planned in slices, given a slicer). */
  apply(slicer?: Slicer): Promise<RulesApplyStats>;
  /**
   * What differs between the kernel (as last read or committed) and the desired state
   * (compared in slices, given a slicer).
   */
  drift(slicer?: Slicer): Promise<RulesDrift[]>;
  /**
   * After resync(), drift() and this batch's update(): the next apply may repair only
   * what drifted (and write what changed) instead of comparing everything. Optional: a
   * backend without it compares everything after every read-back.
   */
  repairOnly?(drift: RulesDrift[]): void;
  /**
   * A refresh that does not stop applies: reads the kernel back between two commits and
   * compares it (sliced) with what was committed, leaving out what applies write
   * meanwhile; the next apply repairs what drifted. Optional: without it, a refresh is
   * resync() and drift() inside an apply.
   */
  check?(slicer?: Slicer): Promise<RulesCheck>;
  /**
   * Whether member changes of these IP sets (by calc-graph ID) can be programmed now,
   * beside the apply in flight: it is committing its rules (the kernel's validation of a
   * large iptables table takes 100 ms), the sets are in the kernel and none waits to be
   * written whole. Optional, with applyMembersBeside: without them, such changes wait for
   * the next apply.
   */
  canTakeMembersBeside?(ids: readonly string[]): boolean;
  /**
   * Programs member changes (DesiredState.takeMemberDeltas) now, as the apply in flight
   * would have ahead of its rules, had they come before it. Resolves when they are in the
   * kernel. A failure is the apply in flight's: it rejects with it, and the driver reads
   * everything back.
   */
  applyMembersBeside?(deltas: ReadonlyMap<string, MemberDelta>): Promise<MembersBesideStats>;
  /** Rules in our chains as desired (and, after an apply, as committed): for status and metrics. */
  ruleCount(): number;
  /** `agent --cleanup`: removes everything of ours, nothing else. */
  removeAll(): Promise<void>;
}

export const noStats = (): RulesApplyStats => ({
  ops: 0,
  chainsWritten: 0,
  rulesWritten: 0,
  chainsDeleted: 0,
  elemsAdded: 0,
  elemsRemoved: 0,
  commitMs: 0,
});
