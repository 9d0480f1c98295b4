// Keeps one family's desired iptables state up to date from the desired-state changes of
// each apply, as NftDesiredBuilder does for nftables: only the sources that changed (a
// policy, an endpoint, an IP set...) are rendered and hashed again, and only the chains
// they touched are compared with the kernel. A dispatch chain (a verdict map, rendered as
// Felix's dispatch tree) is re-rendered with its children when one of its entries changes.
import type { DesiredState, MemberDelta } from '../../desired-state.js';
import { emptyDelta, gained, lost } from '../../member-delta.js';
import { drain, type Steps } from '../../slicer.js';
import type { Family, IPSet, Rule, TableName, Verdict, VerdictMap } from '../../render/model.js';
import { TABLES } from '../../render/model.js';
import { ipSetName } from '../../render/names.js';
import { familyMembers, type Fragment, ipSetOf, type RenderConfig, staticRuleset } from '../../render/ruleset.js';
import type { Desired } from './state.js';
import { ChainRefs } from '../chain-refs.js';
import { DesiredBuilder } from '../desired-builder.js';
import { baseChainLines, iptablesChainLines } from './text.js';

/** Chains to compare at the next apply, per table; undefined: every chain and hook. */
export type ChainScope = Map<TableName, Set<string>> | undefined;

interface Owned {
  /** key(table, name) of each chain. */
  chains: string[];
  entries: Array<[TableName, string, string]>;
}

const key = (table: TableName, name: string) => `${table} ${name}`;
const unkey = (k: string): [TableName, string] => {
  const space = k.indexOf(' ');
  return [k.slice(0, space) as TableName, k.slice(space + 1)];
};

export class IptablesDesiredBuilder extends DesiredBuilder {
  readonly desired: Desired = { chains: new Map(), hooks: new Map() };
  /** IP sets the rules use, by kernel name. */
  readonly sets = new Map<string, IPSet>();
  readonly #rules = new Map<TableName, Map<string, Rule[]>>();
  readonly #maps = new Map<TableName, Map<string, VerdictMap>>();
  /** Verdict map -> the chains that expand it. */
  readonly #mapUsers = new Map<string, Set<string>>();
  /** Dispatch chain -> the child chains its last rendering made (Felix's dispatch tree). */
  readonly #children = new Map<string, Set<string>>();
  readonly #owned = new Map<string, Owned>();
  readonly #chainRefs = new ChainRefs();
  /** undefined: everything changed (start, resync). */
  #dirty: Map<TableName, Set<string>> | undefined;
  #dirtySets: Set<string> | undefined;
  #compareAll = false;
  readonly #removedSets = new Set<string>();
  /**
   * Members gained and lost by sets that changed only by members since the last
   * takeSets(), for IPSets.addMembers/removeMembers. Such a set's entry in `sets` keeps
   * the members of its last whole rendering: only a whole change or a rebuild reads them.
   */
  readonly #memberDeltas = new Map<string, MemberDelta>();

  // The rule lines in `desired`, kept as chains come and go: every apply reports it (the
  // palisade_rules_programmed gauge), and a walk of every chain took 0.5-1 ms each time.
  #ruleCount = 0;

  constructor(config: RenderConfig, family: Family) {
    super(config, family, 'iptables');
  }

  get ruleCount(): number {
    return this.#ruleCount;
  }

  #putLines(chains: Map<string, string[]>, name: string, lines: string[]): void {
    this.#ruleCount += lines.length - (chains.get(name)?.length ?? 0);
    chains.set(name, lines);
  }

  #dropLines(chains: Map<string, string[]>, name: string): void {
    this.#ruleCount -= chains.get(name)?.length ?? 0;
    chains.delete(name);
  }

  protected reset(): void {
    for (const name of this.sets.keys()) this.#removedSets.add(name);
    this.sets.clear();
    this.#memberDeltas.clear();
    this.#rules.clear();
    this.#maps.clear();
    this.#mapUsers.clear();
    this.#children.clear();
    this.#owned.clear();
    this.#chainRefs.clear();
    this.desired.chains.clear();
    this.desired.hooks.clear();
    this.#ruleCount = 0;
    this.#dirty = undefined;
    this.#dirtySets = undefined;
    const rs = staticRuleset(this.config, this.ctx);
    for (const table of TABLES) {
      this.#rules.set(table, new Map());
      this.#maps.set(table, new Map(rs.maps.filter((m) => m.table === table).map((m) => [m.name, m])));
      this.desired.chains.set(table, new Map());
      const hooks = baseChainLines(rs, table);
      this.desired.hooks.set(table, hooks);
      for (const b of hooks.values()) this.#ruleCount += b.inserted.length + b.appended.length;
      for (const c of rs.tables[table].values()) this.#setChain(table, c.name, c.rules);
    }
  }

  protected override rebuilt(): void {
    for (const name of this.sets.keys()) this.#removedSets.delete(name);
  }

  /** The next render() asks for a whole comparison (after a read-back), rendering only what changed. */
  compareAll(): void {
    this.#compareAll = true;
  }

  /**
   * Renders the chains changed since the last call into `desired` and says which chains
   * (undefined: all) the next plan must compare.
   */
  render(): ChainScope {
    return drain(this.renderSteps());
  }

  /** render() in steps, a chain each: a cold node renders 100,000 rules. */
  *renderSteps(): Generator<void, ChainScope, undefined> {
    const scope = this.#dirty;
    const compared = scope && new Map<TableName, Set<string>>();
    for (const table of TABLES) {
      const rules = this.#rules.get(table) as Map<string, Rule[]>;
      const lines = this.desired.chains.get(table) as Map<string, string[]>;
      const maps = this.#maps.get(table) as Map<string, VerdictMap>;
      const names = scope ? [...(scope.get(table) ?? [])] : [...rules.keys()];
      const out = new Set<string>(names);
      for (const name of names) {
        yield;
        const r = rules.get(name);
        const produced = r ? iptablesChainLines(name, r, this.family, maps) : new Map<string, string[]>();
        if (!r) this.#dropLines(lines, name);
        for (const [n, l] of produced) this.#putLines(lines, n, l);
        // A dispatch chain's children (dispatch.ts): those it no longer has go with it.
        const k = key(table, name);
        const children = new Set([...produced.keys()].filter((n) => n !== name));
        for (const n of this.#children.get(k) ?? []) {
          if (!children.has(n)) this.#dropLines(lines, n);
          out.add(n);
        }
        for (const n of children) out.add(n);
        if (children.size) this.#children.set(k, children);
        else this.#children.delete(k);
      }
      compared?.set(table, out);
    }
    this.#dirty = new Map();
    const whole = this.#compareAll;
    this.#compareAll = false;
    return whole ? undefined : compared;
  }

  /**
   * IP sets to create or replace (undefined: all), to change by members, and to remove,
   * since the last call.
   */
  takeSets(): {
    changed: IPSet[];
    deltas: Array<{ name: string; added: string[]; removed: string[] }>;
    removed: string[];
  } {
    const changed = this.#dirtySets
      ? [...this.#dirtySets].flatMap((n) => this.sets.get(n) ?? [])
      : [...this.sets.values()];
    const deltas = [...this.#memberDeltas].map(([name, d]) => ({ name, added: [...d.added], removed: [...d.removed] }));
    const removed = [...this.#removedSets];
    this.#dirtySets = new Set();
    this.#memberDeltas.clear();
    this.#removedSets.clear();
    return { changed, deltas, removed };
  }

  // A set that only gained and lost members, already created whole and not waiting to be:
  // its members go as a delta (false: render it whole instead).
  protected memberDelta(state: DesiredState, id: string, delta: MemberDelta): boolean {
    const name = ipSetName(this.family, id);
    const set = this.sets.get(name);
    const s = state.ipsets.get(id);
    if (!set || !s || !this.#dirtySets || this.#dirtySets.has(name)) return false;
    if ((set.kind === 'ipPort') !== (s.type === 'IP_AND_PORT')) return false;
    let d = this.#memberDeltas.get(name);
    if (!d) this.#memberDeltas.set(name, (d = emptyDelta()));
    for (const m of familyMembers(delta.removed, this.family)) lost(d, m);
    for (const m of familyMembers(delta.added, this.family)) gained(d, m);
    return true;
  }

  /**
   * The kernel name of set `id` when its member changes can be programmed without this
   * builder (RulesBackend.applyMembersBeside): rendered, and nothing of it waiting for the
   * next takeSets() (a whole rendering, a removal, members). Otherwise undefined.
   */
  membersOnlySet(id: string): string | undefined {
    const name = ipSetName(this.family, id);
    if (!this.sets.has(name) || !this.#dirtySets || this.#dirtySets.has(name)) return undefined;
    return this.#memberDeltas.has(name) || this.#removedSets.has(name) ? undefined : name;
  }

  /** Chains are waiting to be rendered, or a whole comparison. */
  get rulesDirty(): boolean {
    return !this.#dirty || this.#compareAll || [...this.#dirty.values()].some((s) => s.size > 0);
  }

  #markChain(table: TableName, name: string): void {
    if (!this.#dirty) return;
    const s = this.#dirty.get(table) ?? new Set<string>();
    s.add(name);
    this.#dirty.set(table, s);
  }

  protected putSet(name: string, set: IPSet | undefined): void {
    // Rendered whole: members it changed by before are in the whole.
    this.#memberDeltas.delete(name);
    if (set) {
      this.sets.set(name, set);
      this.#removedSets.delete(name);
    } else if (this.sets.delete(name)) this.#removedSets.add(name);
    this.#dirtySets?.add(name);
  }

  protected *ipsetSteps(state: DesiredState, id: string): Steps {
    const s = state.ipsets.get(id);
    this.putSet(ipSetName(this.family, id), s && ipSetOf(id, s, this.family));
    yield;
  }

  #setChain(table: TableName, name: string, rules: Rule[] | undefined): void {
    const all = this.#rules.get(table) as Map<string, Rule[]>;
    for (const r of all.get(name) ?? [])
      if (r.action.k === 'vmap') this.#mapUsers.get(key(table, r.action.map))?.delete(name);
    if (rules) {
      all.set(name, rules);
      for (const r of rules) {
        if (r.action.k !== 'vmap') continue;
        const users = this.#mapUsers.get(key(table, r.action.map)) ?? new Set<string>();
        users.add(name);
        this.#mapUsers.set(key(table, r.action.map), users);
      }
    } else all.delete(name);
    this.#markChain(table, name);
  }

  #setEntry(table: TableName, map: string, iface: string, verdict: Verdict | undefined): void {
    const m = this.#maps.get(table)?.get(map);
    if (!m) return;
    if (verdict) m.entries.set(iface, verdict);
    else m.entries.delete(iface);
    for (const chain of this.#mapUsers.get(key(table, map)) ?? []) this.#markChain(table, chain);
  }

  protected replace(owner: string, f: Fragment | undefined): void {
    const old = this.#owned.get(owner);
    this.#owned.delete(owner);
    for (const [table, map, iface] of old?.entries ?? []) this.#setEntry(table, map, iface, undefined);
    const chains = this.#chainRefs.swap(
      old?.chains ?? [],
      f?.chains ?? [],
      (c) => key(c.table, c.name),
      (c) => this.#setChain(c.table, c.name, c.rules),
      (k) => this.#setChain(...unkey(k), undefined),
    );
    if (!f) return;
    const owned: Owned = { chains, entries: [] };
    for (const e of f.entries) {
      this.#setEntry(e.table, e.map, e.iface, e.verdict);
      owned.entries.push([e.table, e.map, e.iface]);
    }
    this.#owned.set(owner, owned);
  }
}
