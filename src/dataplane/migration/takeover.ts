// Taking a node over from Felix in iptables mode, as Felix itself cleans up when it switches
// to nftables mode: Calico's `cali-*` chains and the rules that jump to them, in the
// filter/nat/mangle/raw tables of both iptables backends (legacy and nft) and both
// families, then Calico's `cali40*`/`cali60*` IP sets. Felix's leftover dispatch rules
// would otherwise drop traffic for every new pod. Foreign rules, chains, tables and sets
// are not touched. Runs once, after our first apply has committed (until then Felix's
// rules are what protects the node); it reads with
// iptables-save and writes one `iptables-restore --noflush` transaction per backend and
// family (a one-off at start: the agent's own programming stays native).
import type { Logger } from '../../log.js';
import { run } from '../exec.js';
import { calicoIpsets, calicoIptablesState, cleanupScript } from './iptables-cleanup.js';

export interface TakeoverReport {
  /** e.g. "iptables-legacy: 12 chains, 5 rules" */
  removed: string[];
  ipsets: string[];
  /** Backends that could not be read or written, and why. */
  problems: string[];
}

async function cleanBackend(backend: 'legacy' | 'nft', family: 4 | 6, report: TakeoverReport): Promise<void> {
  const tool = `${family === 4 ? 'iptables' : 'ip6tables'}-${backend}`;
  const save = await run(`${tool}-save`, []);
  if (save.missing) return; // that backend is not installed: nothing of it can exist
  if (save.code !== 0) {
    report.problems.push(`${tool}-save failed (${save.code}): ${save.stderr.trim()}`);
    return;
  }
  const state = calicoIptablesState(save.stdout);
  const script = cleanupScript(state);
  if (!script) return;
  const restore = await run(`${tool}-restore`, ['--noflush', '--wait'], script);
  if (restore.code !== 0) {
    report.problems.push(`${tool}-restore failed (${restore.code}): ${restore.stderr.trim()}`);
    return;
  }
  const chains = state.reduce((n, t) => n + t.chains.length, 0);
  const rules = state.reduce((n, t) => n + [...t.rules.values()].reduce((m, p) => m + p.length, 0), 0);
  report.removed.push(`${tool}: ${chains} chains and ${rules} rules in ${state.map((t) => t.table).join(', ')}`);
}

/** Removes Calico's iptables-mode state (see above). Never throws: what fails is reported. */
export async function removeFelixIptablesState(log: Logger): Promise<TakeoverReport> {
  const report: TakeoverReport = { removed: [], ipsets: [], problems: [] };
  for (const backend of ['legacy', 'nft'] as const)
    for (const family of [4, 6] as const) await cleanBackend(backend, family, report);
  const list = await run('ipset', ['list', '-n']);
  if (!list.missing && list.code === 0) {
    for (const name of calicoIpsets(list.stdout)) {
      const r = await run('ipset', ['destroy', name]);
      if (r.code === 0) report.ipsets.push(name);
      else
        report.problems.push(
          `ipset destroy ${name} failed: ${r.stderr.trim()} (still referenced by a rule that is not Calico's?)`,
        );
    }
  } else if (!list.missing) {
    report.problems.push(`ipset list failed (${list.code}): ${list.stderr.trim()}`);
  }
  if (report.removed.length || report.ipsets.length) {
    log.warn(
      { removed: report.removed, ipsets: report.ipsets.length },
      'removed the iptables-mode state a previous Calico (Felix) left on this node; palisade programs nftables',
    );
  }
  for (const p of report.problems)
    log.error({ problem: p }, `could not check or remove Calico's iptables-mode state: ${p}`);
  return report;
}
