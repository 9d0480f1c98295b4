// How a restore script (one family's transaction) reaches the kernel. ExecRestore is
// Felix's way: `iptables-restore --noflush` with the xtables lock waited for. The native
// transports parse the same script into ops and program it without a fork:
// LibiptcRestore for iptables-legacy (libiptc, one commit per table, under the same lock),
// NetlinkRestore for iptables-nft (one nftables batch in iptables-nft's own layout). A
// script holding something the native side does not build goes to ExecRestore instead
// (said once per reason). Native and exec leave identical kernel state, entry for entry
// and expression for expression (test/kernel/iptables-native.test.ts).
import type { Logger } from '../../../log.js';
import { iptcApply, iptNftApply, type XtablesLock } from '../../../native/iptc.js';
import { run } from '../../exec.js';
import { runSteps, type Slicer } from '../../slicer.js';
import type { Family } from '../../render/model.js';
import { type NativeTx, restoreOpsSteps } from './restore-ops.js';
import { UnsupportedRule } from './rule-args.js';
import { ensureXtablesModule } from './xtables-module.js';

export type IptablesFlavour = 'nft' | 'legacy';

/** A restore the kernel (or the tool) refused: nothing of it was applied. */
export class IptablesApplyError extends Error {
  readonly code = 'EIPTABLES';
  constructor(
    message: string,
    readonly script: string,
    readonly errno?: number,
  ) {
    super(message);
    this.name = 'IptablesApplyError';
  }
}

export interface RestoreTransport {
  /** "exec" or "native": for logs and the bench. */
  readonly kind: 'exec' | 'native';
  /** `slicer`: parse (natively sent scripts are parsed into ops) between turns of the loop. */
  restore(family: Family, script: string, slicer?: Slicer): Promise<void>;
  /**
   * Native transports: the last restore's reading of the kernel (the tables' chains, and
   * rules a delete needs), its commit, and its wait for the xtables lock (iptables-legacy), ms.
   */
  readonly last?: RestoreTimes | undefined;
}

export interface RestoreTimes {
  readMs: number;
  commitMs: number;
  /** Undefined where no lock is taken (iptables-nft over netlink). */
  lockWaitMs?: number;
}

export class ExecRestore implements RestoreTransport {
  readonly kind = 'exec';
  constructor(
    readonly flavour: IptablesFlavour,
    readonly lock: XtablesLock,
  ) {}

  async restore(family: Family, script: string): Promise<void> {
    const tool = `${family === 4 ? 'iptables' : 'ip6tables'}-${this.flavour}-restore`;
    // Felix's flags: wait for the xtables lock kube-proxy may hold, probing at an interval.
    const wait = [
      '--wait',
      `${Math.max(1, Math.ceil(this.lock.lockTimeoutMs / 1000))}`,
      '--wait-interval',
      `${this.lock.lockIntervalMs * 1000}`,
    ];
    const env = this.lock.lockPath ? { XTABLES_LOCKFILE: this.lock.lockPath } : undefined;
    const r = await run(tool, ['--noflush', ...wait], script, env);
    if (r.code === 0) return;
    const line = /line:? (\d+)/i.exec(r.stderr)?.[1];
    const at = line ? ` at line ${line}: ${script.split('\n')[Number(line) - 1] ?? ''}` : '';
    throw new IptablesApplyError(`${tool} failed (${r.code})${at}: ${r.stderr.trim()}`, script);
  }
}

/** The parse-or-fall-back shared by both native transports. */
abstract class NativeRestore implements RestoreTransport {
  readonly kind = 'native';
  readonly #fallback: ExecRestore;
  protected readonly log: Logger;
  readonly #reported = new Set<string>();
  /** Applies handed to the tool because something in them is not built natively. */
  fallbacks = 0;
  last: RestoreTimes | undefined;

  constructor(
    readonly flavour: IptablesFlavour,
    readonly lock: XtablesLock,
    log: Logger,
  ) {
    this.#fallback = new ExecRestore(flavour, lock);
    this.log = log;
  }

  async restore(family: Family, script: string, slicer?: Slicer): Promise<void> {
    this.last = undefined;
    let tx: NativeTx;
    try {
      tx = await runSteps(restoreOpsSteps(script, family), slicer);
    } catch (e) {
      if (!(e instanceof UnsupportedRule)) throw e;
      return this.#viaTool(family, script, e.message);
    }
    await this.prepare(family);
    const r = await this.commit(tx.ops);
    this.last = { readMs: r.readMs, commitMs: r.commitMs };
    if (r.lockWaitMs !== undefined) this.last.lockWaitMs = r.lockWaitMs;
    if (r.unsupported) return this.#viaTool(family, script, r.unsupported);
    if (!r.failure) return;
    const { tag, errno, message } = r.failure;
    const committed = r.committedTables
      ? ` (${r.committedTables} table(s) before it were committed)`
      : ' (nothing was committed)';
    throw new IptablesApplyError(
      `iptables-${this.flavour} (${this.via}) refused ${tx.lines[tag] ?? '?'}: ${message}${committed}`,
      script,
      errno,
    );
  }

  protected abstract readonly via: string;
  /** Before a commit of `family`: what the kernel needs that the tool would have seen to. */
  protected async prepare(_family: Family): Promise<void> {}
  protected abstract commit(ops: Uint8Array): Promise<{
    readMs: number;
    commitMs: number;
    lockWaitMs?: number;
    unsupported?: string;
    committedTables?: number;
    failure?: { tag: number; errno: number; message: string };
  }>;

  #viaTool(family: Family, script: string, reason: string): Promise<void> {
    this.fallbacks++;
    if (!this.#reported.has(reason)) {
      this.#reported.add(reason);
      this.log.warn(
        { reason },
        `a rule is not built natively; this apply goes through iptables-${this.flavour}-restore`,
      );
    }
    return this.#fallback.restore(family, script);
  }
}

export class LibiptcRestore extends NativeRestore {
  protected readonly via = 'libiptc';
  readonly #loaded = new Set<Family>();
  #said = '';
  constructor(lock: XtablesLock, log: Logger) {
    super('legacy', lock, log);
  }
  /** The family's x_tables core, loaded as iptables-legacy loads it (xtables-module.ts); a failure said once. */
  protected override async prepare(family: Family): Promise<void> {
    if (this.#loaded.has(family)) return;
    const why = await ensureXtablesModule(family);
    if (!why) this.#loaded.add(family);
    else if (why !== this.#said)
      this.log.warn({ ipVersion: family, reason: why }, 'cannot load the iptables-legacy kernel module');
    this.#said = why;
  }
  protected commit(ops: Uint8Array) {
    return iptcApply(ops, this.lock);
  }
}

/** iptables-nft over netlink: nftables transactions need no xtables lock (iptables-nft takes none). */
export class NetlinkRestore extends NativeRestore {
  protected readonly via = 'netlink';
  constructor(lock: XtablesLock, log: Logger) {
    super('nft', lock, log);
  }
  protected commit(ops: Uint8Array) {
    return iptNftApply(ops);
  }
}
