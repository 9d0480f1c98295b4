// What both rules backends' desired builders render, from which part of the desired state,
// and when: a fragment per policy, profile and local workload, one for the chains all
// workloads share and one for the host endpoints; the IP sets, the pools' sets and the
// overlay's. A subclass keeps its own form of the result (nftables chains, sets and verdict
// maps; iptables chains and ipsets) behind replace() and putSet(), so a rebuild and an
// update visit the sources in the same order in both modes, and a source the one renders
// again the other does too.
import { type Dirty, DirtyKeys, type DesiredState, type MemberDelta } from '../desired-state.js';
import {
  type HostEgressSources,
  hostEgressSources,
  hostEndpointsFragment,
  resolveHostEndpoints,
} from '../render/host-endpoints.js';
import type { Family, IPSet } from '../render/model.js';
import type { RenderContext } from '../render/policy.js';
import {
  allPoolsSetOf,
  cidrBlockFragment,
  endpointNamesOf,
  fromEndpointMarkFragment,
  thisHostSet,
  natOutgoingFragment,
  contextOf,
  floatingIpFragment,
  type Fragment,
  overlayFragment,
  overlaySets,
  policyFragment,
  policyLookupOf,
  poolSets,
  profileFragment,
  type RenderConfig,
  rpfSkipFragment,
  type Style,
  workloadFragment,
} from '../render/ruleset.js';
import { drain, type Steps } from '../slicer.js';
import type { WorkloadEndpoint } from '../../proto/messages.js';

/** A workload with rules in the chains all workloads share (rpfSkipFragment, floatingIpFragment). */
const sharesRules = (ep: WorkloadEndpoint) =>
  ep.allowSpoofedSourcePrefixes.length > 0 || ep.ipv4Nat.length > 0 || ep.ipv6Nat.length > 0;

export abstract class DesiredBuilder {
  readonly family: Family;
  protected readonly config: RenderConfig;
  protected readonly ctx: RenderContext;
  /** Workloads with rules in the shared rpf-skip and floating-IP chains. */
  readonly #sharingWeps = new Set<string>();
  /** What the host endpoints' egress chains use, as last rendered. */
  #hepSources: HostEgressSources = { policies: new Map(), profiles: new Set() };
  /** cali-from-endpoint-mark's endpoints as last rendered (kube-proxy IPVS support only). */
  #markedNames = '';

  constructor(config: RenderConfig, family: Family, style: Style) {
    this.family = family;
    this.config = config;
    this.ctx = contextOf(config, family, style);
  }

  /** Forgets everything rendered, for a rebuild: back to the static ruleset. */
  protected abstract reset(): void;
  /** Renders IP set `id` whole (gone when the state has none), yielding as it goes. */
  protected abstract ipsetSteps(state: DesiredState, id: string): Steps;
  /** Changes set `id` by its members' delta alone; false: it must be rendered whole. */
  protected abstract memberDelta(state: DesiredState, id: string, delta: MemberDelta): boolean;
  /** Puts a set of the rules' own (a pool's, the overlay's) by its iptables-style name; undefined removes it. */
  protected abstract putSet(name: string, set: IPSet | undefined): void;
  /** A source's chains and dispatch entries in place of its previous ones (undefined: it is gone). */
  protected abstract replace(owner: string, f: Fragment | undefined): void;
  /** Before an update's sources are rendered. */
  protected beginUpdate(): void {}
  /** After a rebuild's last source. */
  protected rebuilt(): void {}

  /** Everything from scratch (start, resync): the next apply compares all of it. */
  rebuild(state: DesiredState): void {
    drain(this.rebuildSteps(state));
  }

  /** rebuild() in steps, one per source (and per part of a big set), for a Slicer. */
  *rebuildSteps(state: DesiredState): Steps {
    this.reset();
    for (const id of state.ipsets.keys()) yield* this.ipsetSteps(state, id);
    this.#pools(state);
    this.#overlay(state);
    this.#cidrBlock(state);
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
    this.#perWorkload(state);
    this.#heps(state);
    this.#markedNames = '';
    this.#endpointMarks(state);
    this.rebuilt();
  }

  /** Applies one batch of changed keys (DesiredState.takeDirty()). */
  update(state: DesiredState, dirty: Map<Dirty, Set<string>>): void {
    this.beginUpdate();
    const deltas = dirty instanceof DirtyKeys ? dirty.memberDeltas : undefined;
    for (const id of dirty.get('ipset') ?? []) {
      const delta = deltas?.get(id);
      if (!delta || !this.memberDelta(state, id, delta)) drain(this.ipsetSteps(state, id));
    }
    if (dirty.has('pool')) this.#pools(state);
    if (dirty.has('overlay')) this.#overlay(state);
    if (dirty.has('cidrBlock')) this.#cidrBlock(state);
    for (const key of dirty.get('policy') ?? []) this.#policy(state, key);
    for (const key of dirty.get('profile') ?? []) this.#profile(state, key);
    for (const key of dirty.get('wep') ?? []) this.#wep(state, key);
    if (dirty.has('hep') || this.#hepSourceChanged(dirty)) this.#heps(state);
    if (this.#sharedWepRulesChanged(state, dirty.get('wep'))) this.#perWorkload(state);
    if (dirty.has('wep') || dirty.has('hep')) this.#endpointMarks(state);
  }

  // kube-proxy IPVS support: cali-from-endpoint-mark lists every endpoint, so it is
  // rendered again only when the endpoints (not their policies) changed.
  #endpointMarks(state: DesiredState): void {
    const names = endpointNamesOf(state, this.ctx);
    if (!names) return;
    const key = `${names.workloads.join(',')}|${names.hosts.join(',')}`;
    if (key === this.#markedNames) return;
    this.#markedNames = key;
    this.replace('endpoint-marks', fromEndpointMarkFragment(names, this.ctx));
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

  // The pools' sets, and cali-nat-outgoing's rules while a pool of the family has natOutgoing.
  #pools(state: DesiredState): void {
    for (const set of poolSets(state.pools.values(), this.family, allPoolsSetOf(this.config)))
      this.putSet(set.name, set);
    this.replace('nat-outgoing', natOutgoingFragment(state.pools.values(), this.config, this.ctx));
  }

  // cali-INPUT/cali-OUTPUT, all-vxlan-net and all-hosts-net follow which overlays are on, the VTEPs and the nodes.
  #overlay(state: DesiredState): void {
    for (const { name, set } of overlaySets(state, this.config, this.family)) this.putSet(name, set);
    this.replace('overlay', overlayFragment(state, this.config, this.ctx));
  }

  #cidrBlock(state: DesiredState): void {
    this.replace('cidr-block', cidrBlockFragment(state, this.config, this.ctx));
  }

  #policy(state: DesiredState, key: string): void {
    const p = state.policies.get(key);
    this.replace(`policy:${key}`, p && policyFragment(p.name, p.tier, p.policy, this.ctx));
  }

  #profile(state: DesiredState, key: string): void {
    const p = state.profiles.get(key);
    this.replace(`profile:${key}`, p && profileFragment(key, p, this.ctx));
  }

  #wep(state: DesiredState, key: string): void {
    const ep = state.weps.get(key);
    this.replace(`wep:${key}`, ep && workloadFragment(ep, this.ctx, state.policySelector));
  }

  // Per-workload rules gathered in shared chains: rendered over every local workload.
  #perWorkload(state: DesiredState): void {
    this.replace('rpf-skip', rpfSkipFragment(state.weps.values(), this.ctx));
    this.replace('fip', floatingIpFragment(state.weps.values(), this.ctx));
  }

  // A policy or profile a host endpoint's egress policy uses is in the host endpoints'
  // fragment too (its mangle copy), which a change to it renders again.
  #hepSourceChanged(dirty: Map<Dirty, Set<string>>): boolean {
    const { policies, profiles } = this.#hepSources;
    if (!policies.size && !profiles.size) return false;
    for (const key of dirty.get('policy') ?? []) if (policies.has(key)) return true;
    for (const key of dirty.get('profile') ?? []) if (profiles.has(key)) return true;
    return false;
  }

  // Host endpoints are few and resolve together (interfaces, the all-interfaces default):
  // one fragment for all of them and the host dispatch chains.
  #heps(state: DesiredState): void {
    const thisHost = thisHostSet(state, this.config, this.family);
    this.putSet(thisHost.name, thisHost.set);
    const resolution = resolveHostEndpoints(state.heps, state.hostIfaces);
    this.#hepSources = hostEgressSources(state.heps, resolution);
    this.replace(
      'heps',
      hostEndpointsFragment(
        state.heps,
        resolution,
        this.ctx,
        this.config.InterfacePrefix,
        state.policySelector,
        policyLookupOf(state),
      ),
    );
  }
}
