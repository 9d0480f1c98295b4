// How a restore script (one family's transaction) reaches the kernel. ExecRestore is
// Felix's way: `iptables-restore --noflush` with the xtables lock waited for. LibiptcRestore
// is iptables-legacy without a fork: the same script parsed into native ops and committed
// through libiptc, one commit per table, under the same lock; a script holding something
// the native side does not build goes to ExecRestore instead (said once per reason).
// Both leave byte-identical kernel entries (test/kernel/iptables-native.test.ts).
import type { Logger } from '../../../log.js';
import { iptcApply, type XtablesLock } from '../../../native/iptc.js';
import { run } from '../../exec.js';
import type { Family } from '../../render/model.js';
import { restoreOps } from './restore-ops.js';
import { UnsupportedRule } from './rule-args.js';

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
  restore(family: Family, script: string): Promise<void>;
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
    const wait = ['--wait', `${Math.max(1, Math.ceil(this.lock.lockTimeoutMs / 1000))}`, '--wait-interval', `${this.lock.lockIntervalMs * 1000}`];
    const env = this.lock.lockPath ? { XTABLES_LOCKFILE: this.lock.lockPath } : undefined;
    const r = await run(tool, ['--noflush', ...wait], script, env);
    if (r.code === 0) return;
    const line = /line:? (\d+)/i.exec(r.stderr)?.[1];
    const at = line ? ` at line ${line}: ${script.split('\n')[Number(line) - 1] ?? ''}` : '';
    throw new IptablesApplyError(`${tool} failed (${r.code})${at}: ${r.stderr.trim()}`, script);
  }
}

export class LibiptcRestore implements RestoreTransport {
  readonly kind = 'native';
  readonly #fallback: ExecRestore;
  readonly #log: Logger;
  readonly #reported = new Set<string>();

  constructor(
    readonly lock: XtablesLock,
    log: Logger,
  ) {
    this.#fallback = new ExecRestore('legacy', lock);
    this.#log = log;
  }

  async restore(family: Family, script: string): Promise<void> {
    let tx;
    try {
      tx = restoreOps(script, family);
    } catch (e) {
      if (!(e instanceof UnsupportedRule)) throw e;
      if (!this.#reported.has(e.message)) {
        this.#reported.add(e.message);
        this.#log.warn({ reason: e.message }, 'a rule is not built natively; this apply goes through iptables-legacy-restore');
      }
      return this.#fallback.restore(family, script);
    }
    const r = await iptcApply(tx.ops, this.lock);
    if (!r.failure) return;
    const { tag, errno, message } = r.failure;
    const what = tx.lines[tag] ?? '?';
    const committed = r.committedTables ? ` (${r.committedTables} table(s) before it were committed)` : ' (nothing was committed)';
    throw new IptablesApplyError(`iptables-legacy (libiptc) refused ${what}: ${message}${committed}`, script, errno);
  }
}
