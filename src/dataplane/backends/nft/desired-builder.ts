// Keeps one family's desired nftables state up to date from the desired-state changes of
// each apply: only the sources that changed (a policy, an endpoint, an IP set...) are
// rendered and hashed again, and the chains and sets they touched are marked dirty, so an
// incremental apply costs what changed, not what exists.
import { StringMap } from '../../../collections/string-map.js';
import type { DesiredState, MemberDelta } from '../../desired-state.js';
import { isHostCidr } from '../../render/cover.js';
import type { Family, IPSet } from '../../render/model.js';
import { nftChainName } from './text.js';
import { ipSetName, nftSetName } from '../../render/names.js';
import { familyMembers, type Fragment, ipSetOf, type RenderConfig, staticRuleset } from '../../render/ruleset.js';
import {
  addElem,
  chainOf,
  type DesiredChain,
  type DesiredFamily,
  desiredOf,
  desiredSetOf,
  elemId,
  ipSetElemSteps,
  ipSetSpec,
  mapElem,
  memberElems,
  removeElem,
} from './desired.js';
import type { ElemSpec } from './op-writer.js';
import type { Steps } from '../../slicer.js';
import { ChainRefs } from '../chain-refs.js';
import { DesiredBuilder } from '../desired-builder.js';

interface Owned {
  chains: string[];
  entries: Array<[string, string]>;
}

export class NftDesiredBuilder extends DesiredBuilder {
  readonly desired: DesiredFamily;
  readonly #owned = new Map<string, Owned>();
  readonly #chainRefs = new ChainRefs();

  // The rules in `desired`, kept as chains come and go: every apply reports it (the
  // palisade_rules_programmed gauge), and a walk of 20,000 chains took 0.5-1 ms each time.
  #ruleCount = 0;

  constructor(config: RenderConfig, family: Family) {
    super(config, family, 'nftables');
    this.desired = desiredOf(staticRuleset(this.config, this.ctx));
    for (const c of this.desired.chains.values()) this.#ruleCount += c.rules.length;
  }

  get ruleCount(): number {
    return this.#ruleCount;
  }

  #putChain(name: string, chain: DesiredChain): void {
    this.#ruleCount += chain.rules.length - (this.desired.chains.get(name)?.rules.length ?? 0);
    this.desired.chains.set(name, chain);
    this.desired.onChainPut?.(name, chain);
  }

  #dropChain(name: string): void {
    this.#ruleCount -= this.desired.chains.get(name)?.rules.length ?? 0;
    this.desired.chains.delete(name);
  }

  protected reset(): void {
    const fresh = desiredOf(staticRuleset(this.config, this.ctx));
    this.desired.chains.clear();
    this.desired.sets.clear();
    this.#ruleCount = 0;
    for (const [k, v] of fresh.chains) this.#putChain(k, v);
    for (const [k, v] of fresh.sets) this.desired.sets.set(k, v);
    this.#owned.clear();
    this.#chainRefs.clear();
    this.desired.dirty = undefined;
  }

  protected override beginUpdate(): void {
    this.desired.dirty ??= { chains: new Set(), sets: new Set() };
  }

  #markChain(name: string) {
    this.desired.dirty?.chains.add(name);
  }
  #markSet(name: string) {
    this.desired.dirty?.sets.add(name);
  }

  protected *ipsetSteps(state: DesiredState, id: string): Steps {
    const s = state.ipsets.get(id);
    const name = nftSetName(ipSetName(this.family, id));
    if (s) {
      const set = ipSetOf(id, s, this.family);
      const elems = new StringMap<ElemSpec>();
      const elemKind = yield* ipSetElemSteps(this.family, set.kind, set.members, elems);
      // A new object without a delta: the apply compares it whole (and re-creates the
      // set when its layout changed, see backend.ts).
      this.desired.sets.set(name, { name, spec: ipSetSpec(this.family, elemKind), elems, elemKind });
    } else this.desired.sets.delete(name);
    this.#markSet(name);
    yield;
  }

  // A set that only gained and lost members changes by those members' elements, when
  // they map one to one (no member covers another) and its layout stays; false: render
  // it whole instead (a first network member turns a set of hosts into an interval set).
  protected memberDelta(state: DesiredState, id: string, delta: MemberDelta): boolean {
    const name = nftSetName(ipSetName(this.family, id));
    const set = this.desired.sets.get(name);
    const s = state.ipsets.get(id);
    if (!set || !s) return false;
    const kind = set.elemKind;
    const added = familyMembers(delta.added, this.family);
    const removed = familyMembers(delta.removed, this.family);
    if (kind === undefined || kind === 'net' || (kind === 'ipPort') !== (s.type === 'IP_AND_PORT')) return false;
    if (kind === 'hosts' && !added.every(isHostCidr)) return false;
    for (const m of removed) for (const e of memberElems(this.family, kind, m)) removeElem(set, elemId(e));
    for (const m of added) for (const e of memberElems(this.family, kind, m)) addElem(set, elemId(e), e);
    this.#markSet(name);
    return true;
  }

  protected putSet(name: string, set: IPSet | undefined): void {
    const nftName = nftSetName(name);
    if (set) this.desired.sets.set(nftName, desiredSetOf(this.family, set));
    else this.desired.sets.delete(nftName);
    this.#markSet(nftName);
  }

  protected replace(owner: string, f: Fragment | undefined): void {
    const old = this.#owned.get(owner);
    this.#owned.delete(owner);
    if (old) {
      // Dispatch entries change one by one (the maps' deltas), not by a whole compare of
      // every endpoint's entry.
      for (const [map, id] of old.entries) {
        const set = this.desired.sets.get(map);
        if (set) removeElem(set, id);
        this.#markSet(map);
      }
    }
    const chains = this.#chainRefs.swap(
      old?.chains ?? [],
      f?.chains ?? [],
      (c) => nftChainName(c.table, c.name),
      (c, name) => {
        this.#putChain(name, chainOf(name, c.name, c.table, c.rules, this.family));
        this.#markChain(name);
      },
      (name) => {
        this.#dropChain(name);
        this.#markChain(name);
      },
    );
    if (!f) return;
    const owned: Owned = { chains, entries: [] };
    for (const e of f.entries) {
      if (e.verdict.k !== 'goto' && e.verdict.k !== 'jump') continue;
      const map = nftChainName(e.table, e.map);
      const elem = mapElem(e.iface, e.verdict.k, nftChainName(e.table, e.verdict.chain));
      const id = elemId(elem);
      const set = this.desired.sets.get(map);
      if (set) addElem(set, id, elem);
      owned.entries.push([map, id]);
      this.#markSet(map);
    }
    this.#owned.set(owner, owned);
  }
}
