// What Calico's iptables mode left in an iptables-save dump, and the iptables-restore
// input that removes exactly that: the `cali-*` chains, and the rules of other chains that
// jump to them or carry Felix's `cali:` hash comment (Felix's inserts into the kernel's
// builtin chains). Every other table, chain and rule is left as it is: a foreign rule is
// neither rewritten nor moved (ours are deleted by position, from the bottom up).

export interface TableCleanup {
  table: string;
  /** Our rules in chains that are not ours: chain -> 1-based positions. */
  rules: Map<string, number[]>;
  /** Our chains (cali-*). */
  chains: string[];
}

const OUR_CHAIN = /^cali-/;

function isOurRule(spec: string): boolean {
  return /(^|\s)-[jg] cali-\S/.test(spec) || /--comment "?cali:[\w-]+"?/.test(spec);
}

/** Parses `iptables-save` output into what to remove, per table (tables with nothing of ours are left out). */
export function calicoIptablesState(save: string): TableCleanup[] {
  const out: TableCleanup[] = [];
  let cur: TableCleanup | undefined;
  const positions = new Map<string, number>();
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) {
      cur = { table: line.slice(1).trim(), rules: new Map(), chains: [] };
      positions.clear();
      continue;
    }
    if (!cur) continue;
    if (line.startsWith(':')) {
      const name = line.slice(1).split(' ')[0] as string;
      if (OUR_CHAIN.test(name)) cur.chains.push(name);
      continue;
    }
    if (line === 'COMMIT') {
      if (cur.chains.length || cur.rules.size) out.push(cur);
      cur = undefined;
      continue;
    }
    const m = /^-A (\S+) ?(.*)$/.exec(line);
    if (!m) continue;
    const chain = m[1] as string;
    const pos = (positions.get(chain) ?? 0) + 1;
    positions.set(chain, pos);
    if (OUR_CHAIN.test(chain) || !isOurRule(m[2] ?? '')) continue;
    const list = cur.rules.get(chain) ?? [];
    list.push(pos);
    cur.rules.set(chain, list);
  }
  return out;
}

/**
 * `iptables-restore --noflush` input removing it: our rules (bottom up, so positions hold), then our chains emptied,
 * then deleted.
 */
export function cleanupScript(tables: TableCleanup[]): string {
  const lines: string[] = [];
  for (const t of tables) {
    lines.push(`*${t.table}`);
    for (const [chain, positions] of t.rules)
      for (const p of [...positions].sort((a, b) => b - a)) lines.push(`-D ${chain} ${p}`);
    for (const c of t.chains) lines.push(`-F ${c}`);
    for (const c of t.chains) lines.push(`-X ${c}`);
    lines.push('COMMIT');
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** Calico's IP sets in `ipset list -n` output (cali40*, cali60*). */
export function calicoIpsets(list: string): string[] {
  return list
    .split('\n')
    .map((l) => l.trim())
    .filter((n) => /^cali[46]0/.test(n));
}
