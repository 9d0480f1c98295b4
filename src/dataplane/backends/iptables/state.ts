// What iptables mode compares: per table, our chains (cali-*) with the `cali:` hash of each
// rule ("" for a rule that is not ours), and our rules in the kernel's builtin chains (the
// hooks) with their positions. Read from `iptables-save`, or built from the rendering;
// restoreScript() turns the difference into one `iptables-restore --noflush` input.
import type { Ruleset, TableName } from '../../render/model.js';
import { TABLES } from '../../render/model.js';
import { drain } from '../../slicer.js';
import { type BaseLines, baseChainLines, baseChainScript, iptablesChainLines } from './text.js';

export interface TableState {
  /** Our chains -> their rule lines (rendered) or hashes (read back). */
  chains: Map<string, string[]>;
  /**
   * Builtin chain -> our rules in order: hash and the rule as iptables-save prints it
   * (deleted by that spec, not by position, so a rule another tool inserted meanwhile
   * cannot be hit instead), and where it was (read back only).
   */
  hooks: Map<string, OurBaseRule[]>;
  /** Builtin chain -> how many rules it held, ours and others' (read back only). */
  sizes: Map<string, number>;
}

export interface OurBaseRule {
  hash: string;
  spec: string;
  /** Its position in the builtin chain, from 0 (read back only). */
  at?: number;
}

export type IptablesState = Map<TableName, TableState>;

const OURS = /^cali-/;
const hashOf = (rule: string) => /--comment "?cali:([\w-]+)"?/.exec(rule)?.[1] ?? '';
const emptyTable = (): TableState => ({ chains: new Map(), hooks: new Map(), sizes: new Map() });

/** Lines of `iptables-save` output parsed between two turns of the event loop. */
const PARSE_CHUNK = 2048;
/** Chains compared (or recorded) between two turns of the event loop. */
const COMPARE_CHUNK = 256;

/** Parses `iptables-save` output: only what is ours is kept. */
export function parseSave(save: string): IptablesState {
  return drain(parseSaveSteps(save));
}

/**
 * parseSave() in steps: a node's save output is 100,000 lines and more. Lines are taken
 * one at a time, not split all at once.
 */
export function* parseSaveSteps(save: string): Generator<void, IptablesState, undefined> {
  const out: IptablesState = new Map();
  let table: TableState | undefined;
  for (let at = 0, n = 0; at < save.length; n++) {
    if ((n & (PARSE_CHUNK - 1)) === PARSE_CHUNK - 1) yield;
    const end = save.indexOf('\n', at);
    const line = save.slice(at, end < 0 ? save.length : end);
    at = end < 0 ? save.length : end + 1;
    if (line.startsWith('*')) {
      const name = line.slice(1).trim() as TableName;
      table = TABLES.includes(name) ? emptyTable() : undefined;
      if (table) out.set(name, table);
    } else if (table && line.startsWith(':')) {
      const name = line.slice(1).split(' ')[0] as string;
      if (OURS.test(name)) table.chains.set(name, []);
    } else if (table) parseRuleLine(table, line);
  }
  return out;
}

function parseRuleLine(table: TableState, line: string): void {
  const m = /^-A (\S+) ?(.*)$/.exec(line);
  if (!m) return;
  const chain = m[1] as string;
  const spec = m[2] ?? '';
  const hash = hashOf(spec);
  if (OURS.test(chain)) {
    table.chains.get(chain)?.push(hash);
    return;
  }
  const at = table.sizes.get(chain) ?? 0;
  table.sizes.set(chain, at + 1);
  if (hash || /(^|\s)-[jg] cali-\S/.test(spec)) {
    const list = table.hooks.get(chain) ?? [];
    list.push({ hash, spec, at });
    table.hooks.set(chain, list);
  }
}

export interface Desired {
  /** Table -> chain -> full `-A` lines. */
  chains: Map<TableName, Map<string, string[]>>;
  /** Table -> builtin chain -> `-A` lines of our rules in it: the hooks, then those always appended. */
  hooks: Map<TableName, Map<string, BaseLines>>;
}

/** The rendered ruleset as `-A` lines with Felix's hashes. */
export function desiredOf(rs: Ruleset): Desired {
  const d: Desired = { chains: new Map(), hooks: new Map() };
  for (const table of TABLES) {
    const maps = new Map(rs.maps.filter((m) => m.table === table).map((m) => [m.name, m]));
    const chains = new Map<string, string[]>();
    for (const c of rs.tables[table].values())
      for (const [name, lines] of iptablesChainLines(c.name, c.rules, rs.family, maps)) chains.set(name, lines);
    d.chains.set(table, chains);
    d.hooks.set(table, baseChainLines(rs, table));
  }
  return d;
}

const same = (a: readonly string[] | undefined, b: readonly string[]) =>
  !!a && a.length === b.length && a.every((x, i) => x === b[i]);

export interface RestorePlan {
  script: string;
  chainsWritten: number;
  rulesWritten: number;
  chainsDeleted: number;
}

/**
 * One `iptables-restore --noflush` input that takes the kernel from `have` to `want`:
 * changed and new chains declared (which empties them) and written whole, hooks whose
 * rules differ deleted (by their exact spec) and inserted again, then chains no longer
 * wanted emptied and deleted. Chains and hooks that match are not in it at all.
 */
export function restoreScript(
  have: IptablesState,
  want: Desired,
  insertMode: 'Insert' | 'Append',
  scope?: Map<TableName, Set<string>>,
): RestorePlan {
  return drain(restoreScriptSteps(have, want, insertMode, scope));
}

/** restoreScript() in steps: a read-back's plan compares every chain of the node. */
export function* restoreScriptSteps(
  have: IptablesState,
  want: Desired,
  insertMode: 'Insert' | 'Append',
  scope?: Map<TableName, Set<string>>,
): Generator<void, RestorePlan, undefined> {
  const plan: RestorePlan = { script: '', chainsWritten: 0, rulesWritten: 0, chainsDeleted: 0 };
  const out: string[] = [];
  for (const table of TABLES) {
    const h = have.get(table) ?? emptyTable();
    const chains = want.chains.get(table) ?? new Map<string, string[]>();
    const only = scope && (scope.get(table) ?? new Set<string>());
    const changed: Array<readonly [string, string[]]> = [];
    let n = 0;
    for (const name of only ?? chains.keys()) {
      if ((++n & (COMPARE_CHUNK - 1)) === 0) yield;
      const rules = chains.get(name);
      if (rules && !same(h.chains.get(name), rules.map(hashOf))) changed.push([name, rules]);
    }
    const lines: string[] = [];
    for (const [name] of changed) lines.push(`:${name} - [0:0]`);
    // Hooks only change with a rebuild (start, resync): a scoped plan leaves them alone.
    if (!only) hookLines(h, want.hooks.get(table) ?? new Map(), insertMode, lines, plan);
    for (const [, rules] of changed) {
      for (const r of rules) lines.push(r);
      plan.rulesWritten += rules.length;
    }
    plan.chainsWritten += changed.length;
    const gone = [...(only ?? h.chains.keys())].filter((name) => h.chains.has(name) && !chains.has(name));
    for (const name of gone) lines.push(`-F ${name}`);
    for (const name of gone) lines.push(`-X ${name}`);
    plan.chainsDeleted += gone.length;
    // Loops, not spreads: a cold node's table is 100,000 lines, past V8's argument limit.
    if (lines.length) {
      out.push(`*${table}`);
      for (const l of lines) out.push(l);
      out.push('COMMIT');
    }
    yield;
  }
  plan.script = out.length ? `${out.join('\n')}\n` : '';
  return plan;
}

const NONE: BaseLines = { inserted: [], appended: [] };

/**
 * Whether our rules in a builtin chain are the wanted ones where Felix keeps them: the
 * hooks at its top (Insert) or just before the appended rules (Append), the appended
 * rules last, after whatever other programs put there. A state recorded from our own
 * commit has no positions: only its hashes are compared.
 */
function inPlace(there: OurBaseRule[], mine: BaseLines, size: number | undefined, insertMode: 'Insert' | 'Append') {
  const want = [...mine.inserted, ...mine.appended];
  if (
    !same(
      there.map((r) => r.hash),
      want.map(hashOf),
    )
  )
    return false;
  if (size === undefined) return true;
  const ni = mine.inserted.length;
  const na = mine.appended.length;
  const top = insertMode === 'Insert' ? 0 : size - na - ni;
  return there.every((r, i) => r.at === (i < ni ? top + i : size - na + (i - ni)));
}

// Builtin chains whose rules of ours differ or moved: deleted (by their exact spec) and written again.
function hookLines(
  h: TableState,
  hooks: Map<string, BaseLines>,
  insertMode: 'Insert' | 'Append',
  lines: string[],
  plan: RestorePlan,
): void {
  for (const builtin of new Set([...h.hooks.keys(), ...hooks.keys()])) {
    const mine = hooks.get(builtin) ?? NONE;
    const there = h.hooks.get(builtin) ?? [];
    if (inPlace(there, mine, h.sizes.get(builtin), insertMode)) continue;
    for (const r of there) lines.push(`-D ${builtin} ${r.spec}`);
    for (const l of baseChainScript(mine, insertMode)) lines.push(l);
    plan.rulesWritten += mine.inserted.length + mine.appended.length;
  }
}

/** Records a committed plan's chains in `have` (all of them, or those of the scope). */
export function commitTo(have: IptablesState, want: Desired, scope?: Map<TableName, Set<string>>): IptablesState {
  return drain(commitToSteps(have, want, scope));
}

/** commitTo() in steps (recording a whole node hashes every rule again). */
export function* commitToSteps(
  have: IptablesState,
  want: Desired,
  scope?: Map<TableName, Set<string>>,
): Generator<void, IptablesState, undefined> {
  if (!scope) return yield* stateOfSteps(want);
  for (const [table, names] of scope) {
    const t = have.get(table) ?? emptyTable();
    have.set(table, t);
    const chains = want.chains.get(table);
    for (const name of names) {
      const rules = chains?.get(name);
      if (rules) t.chains.set(name, rules.map(hashOf));
      else t.chains.delete(name);
    }
  }
  return have;
}

/** What was committed, as a read-back would find it (so the next plan is a no-op). */
export function stateOf(want: Desired): IptablesState {
  return drain(stateOfSteps(want));
}

function* stateOfSteps(want: Desired): Generator<void, IptablesState, undefined> {
  const out: IptablesState = new Map();
  for (const table of TABLES) {
    const t = emptyTable();
    let n = 0;
    for (const [name, rules] of want.chains.get(table) ?? []) {
      if ((++n & (COMPARE_CHUNK - 1)) === 0) yield;
      t.chains.set(name, rules.map(hashOf));
    }
    for (const [builtin, b] of want.hooks.get(table) ?? [])
      t.hooks.set(
        builtin,
        [...b.inserted, ...b.appended].map((l) => ({ hash: hashOf(l), spec: l.replace(/^-A \S+ /, '') })),
      );
    out.set(table, t);
  }
  return out;
}
