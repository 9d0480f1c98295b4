// Keeps one family's desired nftables state up to date from the desired-state changes of
// each apply: only the sources that changed (a policy, an endpoint, an IP set...) are
// rendered and hashed again, and the chains and sets they touched are marked dirty, so an
// incremental apply costs what changed, not what exists.
import { type Dirty, DirtyKeys, type DesiredState, type MemberDelta } from '../../desired-state.js';
import { isHostCidr } from '../../render/cover.js';
import type { WorkloadEndpoint } from '../../../proto/messages.js';
import type { Family } from '../../render/model.js';
import { nftChainName } from './text.js';
import { ipSetName, nftSetName } from '../../render/names.js';
import {
  contextOf,
  familyMembers,
  floatingIpFragment,
  type Fragment,
  overlayFragment,
  overlaySets,
  ipSetOf,
  rpfSkipFragment,
  policyFragment,
  poolSets,
  profileFragment,
  type RenderConfig,
  staticRuleset,
  workloadFragment,
} from '../../render/ruleset.js';
import { hostEndpointsFragment, resolveHostEndpoints } from '../../render/host-endpoints.js';
import type { RenderContext } from '../../render/policy.js';
import {
  addElem,
  chainOf,
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
import { drain, type Steps } from '../../slicer.js';
import { ChainRefs } from '../chain-refs.js';

/** A workload with rules in the chains all workloads share (rpfSkipFragment, floatingIpFragment). */
const sharesRules = (ep: WorkloadEndpoint) =>
  ep.allowSpoofedSourcePrefixes.length > 0 || ep.ipv4Nat.length > 0 || ep.ipv6Nat.length > 0;

interface Owned {
  chains: string[];
  entries: Array<[string, string]>;
}

export class NftDesiredBuilder {
  readonly family: Family;
  readonly desired: DesiredFamily;
  readonly #config: RenderConfig;
  readonly #ctx: RenderContext;
  readonly #owned = new Map<string, Owned>();
  readonly #chainRefs = new ChainRefs();
  /** Workloads with rules in the shared rpf-skip and floating-IP chains. */
  readonly #sharingWeps = new Set<string>();

  constructor(config: RenderConfig, family: Family) {
    this.family = family;
    this.#config = config;
    this.#ctx = contextOf(config, family, 'nftables');
    this.desired = desiredOf(staticRuleset(config, this.#ctx));
  }

  /** Everything from scratch (start, resync): the next apply compares all of it. */
  rebuild(state: DesiredState): void {
    drain(this.rebuildSteps(state));
  }

  /** rebuild() in steps, one per source (and per 512 members of a big set), for a Slicer. */
  *rebuildSteps(state: DesiredState): Steps {
    const fresh = desiredOf(staticRuleset(this.#config, this.#ctx));
    this.desired.chains.clear();
    this.desired.sets.clear();
    for (const [k, v] of fresh.chains) this.desired.chains.set(k, v);
    for (const [k, v] of fresh.sets) this.desired.sets.set(k, v);
    this.#owned.clear();
    this.#chainRefs.clear();
    this.desired.dirty = undefined;
    for (const id of state.ipsets.keys()) yield* this.#ipsetSteps(state, id);
    this.#pools(state);
    this.#overlay(state);
    yield;
    for (const key of state.policies.keys()) {
      this.#policy(state, key);
      yield;
    }
    for (const key of state.profiles.keys()) {
      this.#profile(state, key);
      yield;
    }
    for (const key of state.weps.keys()) {
      this.#wep(state, key);
      yield;
    }
    this.#sharingWeps.clear();
    for (const [key, ep] of state.weps) if (sharesRules(ep)) this.#sharingWeps.add(key);
    this.#rpfSkip(state);
    this.#heps(state);
  }

  /** Applies one batch of changed keys (DesiredState.takeDirty()). */
  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    this.desired.dirty ??= { chains: new Set(), sets: new Set() };
    const deltas = dirty instanceof DirtyKeys ? dirty.memberDeltas : undefined;
    for (const id of dirty.get('ipset') ?? []) {
      const delta = deltas?.get(id);
      if (!delta || !this.#memberDelta(state, id, delta)) drain(this.#ipsetSteps(state, id));
    }
    if (dirty.has('pool')) this.#pools(state);
    if (dirty.has('overlay')) this.#overlay(state);
    for (const key of dirty.get('policy') ?? []) this.#policy(state, key);
    for (const key of dirty.get('profile') ?? []) this.#profile(state, key);
    for (const key of dirty.get('wep') ?? []) this.#wep(state, key);
    if (dirty.has('hep')) this.#heps(state);
    if (this.#sharedWepRulesChanged(state, dirty.get('wep'))) this.#rpfSkip(state);
  }

  // Whether a changed workload has, or had, rules in the chains all workloads share
  // (spoofed-source prefixes, floating IPs): most have neither, and those chains are
  // rendered over every local workload.
  #sharedWepRulesChanged(state: DesiredState, keys: Set<string> | undefined): boolean {
    let changed = false;
    for (const key of keys ?? []) {
      const ep = state.weps.get(key);
      const has = !!ep && sharesRules(ep);
      if (has || this.#sharingWeps.has(key)) changed = true;
      if (has) this.#sharingWeps.add(key);
      else this.#sharingWeps.delete(key);
    }
    return changed;
  }

  #markChain(name: string) {
    this.desired.dirty?.chains.add(name);
  }
  #markSet(name: string) {
    this.desired.dirty?.sets.add(name);
  }

  *#ipsetSteps(state: DesiredState, id: string): Steps {
    const s = state.ipsets.get(id);
    const name = nftSetName(ipSetName(this.family, id));
    if (s) {
      const set = ipSetOf(id, s, this.family);
      const elems = new Map<string, ElemSpec>();
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
  #memberDelta(state: DesiredState, id: string, delta: MemberDelta): boolean {
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

  #pools(state: DesiredState): void {
    for (const set of poolSets(state.pools.values(), this.family)) {
      const d = desiredSetOf(this.family, set);
      this.desired.sets.set(d.name, d);
      this.#markSet(d.name);
    }
  }

  // cali-INPUT/cali-OUTPUT, all-vxlan-net and all-hosts-net follow which overlays are on, the VTEPs and the nodes.
  #overlay(state: DesiredState): void {
    for (const { name, set } of overlaySets(state, this.#config, this.family)) {
      const nftName = nftSetName(name);
      if (set) this.desired.sets.set(nftName, desiredSetOf(this.family, set));
      else this.desired.sets.delete(nftName);
      this.#markSet(nftName);
    }
    this.#replace('overlay', overlayFragment(state, this.#config, this.#ctx));
  }

  #policy(state: DesiredState, key: string): void {
    const p = state.policies.get(key);
    this.#replace(`policy:${key}`, p && policyFragment(p.name, p.tier, p.policy, this.#ctx));
  }
  #profile(state: DesiredState, key: string): void {
    const p = state.profiles.get(key);
    this.#replace(`profile:${key}`, p && profileFragment(key, p, this.#ctx));
  }
  #wep(state: DesiredState, key: string): void {
    const ep = state.weps.get(key);
    this.#replace(`wep:${key}`, ep && workloadFragment(ep, this.#ctx, state.policySelector));
  }
  // Per-workload rules gathered in shared chains: re-rendered whole when any workload changes.
  #rpfSkip(state: DesiredState): void {
    this.#replace('rpf-skip', rpfSkipFragment(state.weps.values(), this.#ctx));
    this.#replace('fip', floatingIpFragment(state.weps.values(), this.#ctx));
  }

  // Host endpoints are few and resolve together (interfaces, the all-interfaces default):
  // one fragment for all of them and the host dispatch chains.
  #heps(state: DesiredState): void {
    this.#replace(
      'heps',
      hostEndpointsFragment(
        state.heps,
        resolveHostEndpoints(state.heps, state.hostIfaces),
        this.#ctx,
        this.#config.InterfacePrefix,
        state.policySelector,
      ),
    );
  }

  #replace(owner: string, f: Fragment | undefined): void {
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
        this.desired.chains.set(name, chainOf(name, c.name, c.table, c.rules, this.family));
        this.#markChain(name);
      },
      (name) => {
        this.desired.chains.delete(name);
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
