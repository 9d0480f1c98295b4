// What the calc graph has asked for, kept by applying its messages in order: the input of
// rendering. Tolerant where the model dataplane in the tests is strict (a remove of what is
// absent is ignored), and it records which keys changed so an apply can be incremental.
import type {
  HostEndpoint,
  IPAMPool,
  IPSetType,
  Policy,
  PolicyID,
  Profile,
  TierInfo,
  ToDataplane,
  WorkloadEndpoint,
  WorkloadEndpointID,
} from '../proto/messages.js';
import { StringSet } from '../collections/string-set.js';
import { DeltaLog, gained, lost, type MemberDelta } from './member-delta.js';

// The keys the maps below are indexed by; an update and its remove must agree on them.
export const policyKey = (id: Pick<PolicyID, 'tier' | 'name'>) => `${id.tier}/${id.name}`;
const wepKey = (id: WorkloadEndpointID) => `${id.orchestratorId}/${id.workloadId}/${id.endpointId}`;

export interface DesiredIPSet {
  type: IPSetType;
  members: StringSet;
}

export type Dirty = 'ipset' | 'policy' | 'profile' | 'wep' | 'hep' | 'pool' | 'overlay' | 'config' | 'cidrBlock';

/** Members an IP set gained and lost since the last takeDirty(). */
export type { MemberDelta };

/**
 * The keys changed since the last takeDirty(), by kind; and, for IP sets that only had
 * members added and removed (not replaced or removed whole), what changed, so a backend
 * can program the delta without comparing a set of a quarter of a million members.
 */
export class DirtyKeys extends Map<Dirty, Set<string>> {
  readonly memberDeltas = new Map<string, MemberDelta>();
}

export class DesiredState {
  readonly ipsets = new Map<string, DesiredIPSet>();
  /** Keyed "tier/name". */
  readonly policies = new Map<string, { tier: string; name: string; policy: Policy }>();
  readonly profiles = new Map<string, Profile>();
  /** Keyed "orchestrator/workload/endpoint". */
  readonly weps = new Map<string, WorkloadEndpoint>();
  readonly heps = new Map<string, HostEndpoint>();
  /**
   * The host's interfaces (workloads' left out) and their addresses, which host endpoints
   * resolve against; undefined when not known (`palisade plan`: named interfaces are taken
   * as present).
   */
  hostIfaces: ReadonlyMap<string, readonly string[]> | undefined;
  readonly pools = new Map<string, IPAMPool>();
  /**
   * What the overlay input rules need: the IP pools that use VXLAN or IPIP (from the
   * pools' own RouteUpdates, as the overlay managers learn them), each node's VTEP parent
   * addresses (Felix's all-vxlan-net set) and each node's address (all-hosts-net), by node.
   */
  readonly overlayPools = new Map<string, 'VXLAN' | 'IPIP'>();
  readonly vtepParents = new Map<string, { v4: string; v6: string }>();
  readonly hostAddrs = new Map<string, string>();
  /** Each node's IPv6 address (all-hosts-net's IPv6 members, for NATOutgoingExclusions). */
  readonly hostAddrsV6 = new Map<string, string>();
  /** The default BGPConfiguration's service CIDRs, which ServiceLoopPrevention blocks (cali-cidr-block). */
  serviceCidrs: readonly string[] = [];
  config: Record<string, string> = {};
  inSync = false;
  /**
   * Each active policy's selector and tier, by policy ID: endpoint chains group their
   * policies by selector (render/policy-groups.ts). By ID, as the tiers list them; the tier
   * tells a move's late remove of the old tier from the new tier's entry.
   */
  readonly #selectors = new Map<string, { tier: string; selector: string }>();
  /** Policies whose selector changed since the last takeDirty(): their endpoints regroup. */
  readonly #regrouped = new Set<string>();
  /** Keys changed since the last takeDirty(), by kind. */
  #dirty = new DirtyKeys();

  /** An active policy's selector by its ID ('' when not known, as Felix). */
  readonly policySelector = (id: string): string => this.#selectors.get(id)?.selector ?? '';
  /** The IP sets' deltas since the last takeDirty() (the dirty keys' memberDeltas). */
  #deltas = new DeltaLog(this.#dirty.memberDeltas);

  apply(msgs: Iterable<ToDataplane>): void {
    for (const m of msgs) this.#one(m);
  }

  /** New interface facts (the driver's interface table); host endpoints are resolved again when they differ. */
  setHostInterfaces(ifaces: ReadonlyMap<string, readonly string[]>): void {
    const key = (m: ReadonlyMap<string, readonly string[]> | undefined) =>
      m ? JSON.stringify([...m].sort(([a], [b]) => (a < b ? -1 : 1))) : '';
    if (key(ifaces) === key(this.hostIfaces)) return;
    this.hostIfaces = ifaces;
    this.#mark('hep', '');
  }

  takeDirty(): DirtyKeys {
    if (this.#regrouped.size) this.#markRegrouped();
    const d = this.#dirty;
    this.#dirty = new DirtyKeys();
    this.#deltas = new DeltaLog(this.#dirty.memberDeltas);
    return d;
  }

  /**
   * Whether a set's member changes can be taken apart from the rest of the dirty keys
   * (takeMemberDeltas): the set is known and was not replaced or removed whole since the
   * last takeDirty().
   */
  membersOnly(id: string): boolean {
    return this.ipsets.has(id) && !this.#deltas.isWhole(id);
  }

  /**
   * Takes these sets' member deltas out of the dirty keys, for a backend to program them
   * now (RulesBackend.applyMembersBeside); the next takeDirty() no longer has them. Only for
   * sets membersOnly() allowed before the changes were applied.
   */
  takeMemberDeltas(ids: Iterable<string>): Map<string, MemberDelta> {
    const out = new Map<string, MemberDelta>();
    const marked = this.#dirty.get('ipset');
    for (const id of ids) {
      const d = this.#dirty.memberDeltas.get(id);
      if (!d) continue;
      out.set(id, d);
      this.#dirty.memberDeltas.delete(id);
      marked?.delete(id);
    }
    if (marked?.size === 0) this.#dirty.delete('ipset');
    return out;
  }

  // A policy whose selector changed may join or leave a group: the endpoints that use it
  // render again (Felix's dirtyPolicyIDs). A new policy needs none: the calc graph
  // updates each endpoint it becomes active for.
  #markRegrouped(): void {
    const uses = (tiers: readonly TierInfo[]) =>
      tiers.some((t) => t.ingressPolicies.some(this.#isRegrouped) || t.egressPolicies.some(this.#isRegrouped));
    for (const [key, ep] of this.weps) if (uses(ep.tiers)) this.#mark('wep', key);
    for (const [key, ep] of this.heps)
      if ([ep.tiers, ep.forwardTiers, ep.untrackedTiers, ep.preDnatTiers].some(uses)) this.#mark('hep', key);
    this.#regrouped.clear();
  }
  readonly #isRegrouped = (id: string) => this.#regrouped.has(id);

  #markWholeSet(id: string): void {
    this.#deltas.replacedWhole(id);
    this.#mark('ipset', id);
  }

  #mark(kind: Dirty, key: string): void {
    let s = this.#dirty.get(kind);
    if (!s) this.#dirty.set(kind, (s = new Set()));
    s.add(key);
  }

  /** A node's address in one family ("": none); the overlay's sets follow a change. */
  #hostAddr(map: Map<string, string>, hostname: string, addr: string): void {
    if ((map.get(hostname) ?? '') === addr) return;
    if (addr) map.set(hostname, addr);
    else map.delete(hostname);
    this.#mark('overlay', '');
  }

  #one(m: ToDataplane): void {
    switch (m.type) {
      case 'InSync':
        this.inSync = true;
        return;
      case 'ConfigUpdate':
        this.config = m.config;
        this.#mark('config', '');
        return;
      case 'IPSetUpdate':
        this.ipsets.set(m.id, { type: m.ipsetType, members: new StringSet(m.members) });
        this.#markWholeSet(m.id);
        return;
      case 'IPSetDeltaUpdate': {
        const s = this.ipsets.get(m.id);
        if (!s) return;
        const delta = this.#deltas.of(m.id);
        for (const x of m.removedMembers) {
          if (s.members.delete(x) && delta) lost(delta, x);
        }
        for (const x of m.addedMembers) if (s.members.add(x) && delta) gained(delta, x);
        this.#mark('ipset', m.id);
        return;
      }
      case 'IPSetRemove':
        this.ipsets.delete(m.id);
        this.#markWholeSet(m.id);
        return;
      case 'ActivePolicyUpdate': {
        const key = policyKey(m.id);
        this.policies.set(key, { tier: m.id.tier, name: m.id.name, policy: m.policy });
        const old = this.#selectors.get(m.id.name);
        if (old && old.selector !== m.policy.originalSelector) this.#regrouped.add(m.id.name);
        this.#selectors.set(m.id.name, { tier: m.id.tier, selector: m.policy.originalSelector });
        this.#mark('policy', key);
        return;
      }
      case 'ActivePolicyRemove': {
        const key = policyKey(m.id);
        this.policies.delete(key);
        if (this.#selectors.get(m.id.name)?.tier === m.id.tier) this.#selectors.delete(m.id.name);
        this.#mark('policy', key);
        return;
      }
      case 'ActiveProfileUpdate':
        this.profiles.set(m.id.name, m.profile);
        this.#mark('profile', m.id.name);
        return;
      case 'ActiveProfileRemove':
        this.profiles.delete(m.id.name);
        this.#mark('profile', m.id.name);
        return;
      case 'WorkloadEndpointUpdate': {
        const key = wepKey(m.id);
        this.weps.set(key, m.endpoint);
        this.#mark('wep', key);
        return;
      }
      case 'WorkloadEndpointRemove': {
        const key = wepKey(m.id);
        this.weps.delete(key);
        this.#mark('wep', key);
        return;
      }
      case 'HostEndpointUpdate':
        this.heps.set(m.id.endpointId, m.endpoint);
        this.#mark('hep', m.id.endpointId);
        return;
      case 'HostEndpointRemove':
        this.heps.delete(m.id.endpointId);
        this.#mark('hep', m.id.endpointId);
        return;
      case 'IPAMPoolUpdate':
        this.pools.set(m.id, m.pool);
        this.#mark('pool', m.id);
        return;
      case 'IPAMPoolRemove':
        this.pools.delete(m.id);
        this.#mark('pool', m.id);
        return;
      case 'RouteUpdate': {
        const r = m.route;
        const type = r.types === 0 && (r.ipPoolType === 'VXLAN' || r.ipPoolType === 'IPIP') ? r.ipPoolType : undefined;
        if (type === this.overlayPools.get(r.dst)) return;
        if (type) this.overlayPools.set(r.dst, type);
        else this.overlayPools.delete(r.dst);
        this.#mark('overlay', '');
        return;
      }
      case 'RouteRemove':
        if (this.overlayPools.delete(m.dst)) this.#mark('overlay', '');
        return;
      case 'VXLANTunnelEndpointUpdate':
        this.vtepParents.set(m.vtep.node, { v4: m.vtep.parentDeviceIp, v6: m.vtep.parentDeviceIpv6 });
        this.#mark('overlay', '');
        return;
      case 'VXLANTunnelEndpointRemove':
        if (this.vtepParents.delete(m.node)) this.#mark('overlay', '');
        return;
      case 'HostMetadataUpdate':
        return this.#hostAddr(this.hostAddrs, m.hostname, m.ipv4Addr);
      case 'HostMetadataRemove':
        return this.#hostAddr(this.hostAddrs, m.hostname, '');
      case 'HostMetadataV6Update':
        return this.#hostAddr(this.hostAddrsV6, m.hostname, m.ipv6Addr);
      case 'HostMetadataV6Remove':
        return this.#hostAddr(this.hostAddrsV6, m.hostname, '');
      case 'GlobalBGPConfigUpdate': {
        const c = m.config;
        const cidrs = [...c.serviceClusterCidrs, ...c.serviceExternalCidrs, ...c.serviceLoadbalancerCidrs];
        if (cidrs.join() === this.serviceCidrs.join()) return;
        this.serviceCidrs = cidrs;
        this.#mark('cidrBlock', '');
        return;
      }
    }
  }
}
