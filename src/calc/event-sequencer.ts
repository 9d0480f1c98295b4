// EventSequencer, as Felix's: collects the calc graph's outputs between flushes, coalesces
// them per key, and emits dataplane messages in an order the dataplane can apply safely:
// config; IP sets created (whole) and changed (deltas) before the policies that use them;
// policies and profiles before endpoints; then removals in reverse, IP sets last. The
// InSync message goes out once, at the end of the first flush after the datastore synced.
import type {
  GlobalBGPConfig,
  HostEndpoint,
  HostEndpointID,
  IPAMPool,
  IPSetType,
  Policy,
  PolicyID,
  Profile,
  RouteUpdate,
  ToDataplane,
  VXLANTunnelEndpoint,
  WireguardInfo,
  WorkloadEndpoint,
  WorkloadEndpointID,
} from '../proto/messages.js';

type EndpointMsg =
  | { kind: 'wep'; id: WorkloadEndpointID; endpoint: WorkloadEndpoint }
  | { kind: 'hep'; id: HostEndpointID; endpoint: HostEndpoint };

const policyKey = (id: PolicyID) => `${id.tier}\u0000${id.name}`;

/** The current members of an active IP set (the member calculator's own record), in a new array. */
export type IPSetMembership = (id: string) => string[];

export class EventSequencer {
  // IP sets: the type of every active set; a set (re)created in this batch is sent whole,
  // so full membership is never mirrored here (the member calculator re-adds every member
  // of a set it activates). With a membership source the whole set is read from it at
  // flush, so a snapshot's quarter of a million members are not collected twice;
  // without one they are collected here as they are added.
  readonly #membership: IPSetMembership | undefined;
  readonly #setTypes = new Map<string, IPSetType>();
  readonly #sentSets = new Set<string>();
  /** Sets to send whole: the members collected so far, or null to read the membership. */
  readonly #setsToSend = new Map<string, Set<string> | null>();
  readonly #deltas = new Map<string, { added: Set<string>; removed: Set<string> }>();
  readonly #setsToRemove = new Set<string>();

  readonly #policies = new Map<string, { id: PolicyID; policy: Policy }>();
  readonly #sentPolicies = new Map<string, PolicyID>();
  readonly #policiesToSend = new Set<string>();
  readonly #policiesToRemove = new Map<string, PolicyID>();

  readonly #profiles = new Map<string, Profile>();
  readonly #sentProfiles = new Set<string>();
  readonly #profilesToSend = new Set<string>();
  readonly #profilesToRemove = new Set<string>();

  readonly #endpoints = new Map<string, EndpointMsg>();
  readonly #sentEndpoints = new Map<string, EndpointMsg>();
  readonly #endpointsToSend = new Set<string>();
  readonly #endpointsToRemove = new Map<string, EndpointMsg>();

  #config: Record<string, string> | undefined;
  readonly #pools = new Map<string, IPAMPool | undefined>();
  readonly #hosts = new Map<string, string | undefined>();
  readonly #hostsV6 = new Map<string, string | undefined>();
  /** Nodes' WireGuard records changed since the last flush (undefined: the node went). */
  readonly #wireguard = new Map<string, WireguardInfo | undefined>();
  readonly #sentWireguard = new Set<string>();
  readonly #sentWireguardV6 = new Set<string>();
  /** Nodes whose IPv6 address was sent: only they are removed (most clusters have none). */
  readonly #sentHostsV6 = new Set<string>();
  readonly #routeAdds = new Map<string, RouteUpdate>();
  readonly #routeRemoves = new Set<string>();
  readonly #sentRoutes = new Set<string>();
  readonly #vtepAdds = new Map<string, VXLANTunnelEndpoint>();
  readonly #vtepRemoves = new Set<string>();
  readonly #sentVteps = new Set<string>();
  #bgpConfig: GlobalBGPConfig | undefined;
  #inSyncPending = false;
  #inSyncSent = false;

  constructor(membership?: IPSetMembership) {
    this.#membership = membership;
  }

  /** Sets added in a batch are read whole at flush (the member calculator need not report their members). */
  get readsNewSetsWhole(): boolean {
    return this.#membership !== undefined;
  }

  // ---- IP sets ----

  onIPSetAdded(id: string, type: IPSetType): void {
    this.#setTypes.set(id, type);
    this.#setsToSend.set(id, this.#membership ? null : new Set());
    this.#deltas.delete(id);
    this.#setsToRemove.delete(id);
  }

  onIPSetRemoved(id: string): void {
    this.#setTypes.delete(id);
    this.#setsToSend.delete(id);
    this.#deltas.delete(id);
    if (this.#sentSets.has(id)) this.#setsToRemove.add(id);
  }

  onMembersAdded(id: string, members: string[]): void {
    if (!this.#setTypes.has(id)) return;
    const whole = this.#setsToSend.get(id);
    if (whole !== undefined) {
      if (whole) for (const m of members) whole.add(m);
      return;
    }
    const d = this.#delta(id);
    for (const m of members) if (!d.removed.delete(m)) d.added.add(m);
  }

  onMembersRemoved(id: string, members: string[]): void {
    if (!this.#setTypes.has(id)) return;
    const whole = this.#setsToSend.get(id);
    if (whole !== undefined) {
      if (whole) for (const m of members) whole.delete(m);
      return;
    }
    const d = this.#delta(id);
    for (const m of members) if (!d.added.delete(m)) d.removed.add(m);
  }

  // ---- policies and profiles ----

  onPolicyActive(id: PolicyID, policy: Policy): void {
    const k = policyKey(id);
    this.#policies.set(k, { id, policy });
    this.#policiesToSend.add(k);
    this.#policiesToRemove.delete(k);
  }

  onPolicyInactive(id: PolicyID): void {
    const k = policyKey(id);
    this.#policies.delete(k);
    this.#policiesToSend.delete(k);
    const sent = this.#sentPolicies.get(k);
    if (sent) this.#policiesToRemove.set(k, sent);
  }

  onProfileActive(name: string, profile: Profile): void {
    this.#profiles.set(name, profile);
    this.#profilesToSend.add(name);
    this.#profilesToRemove.delete(name);
  }

  onProfileInactive(name: string): void {
    this.#profiles.delete(name);
    this.#profilesToSend.delete(name);
    if (this.#sentProfiles.has(name)) this.#profilesToRemove.add(name);
  }

  // ---- endpoints ----

  onWorkloadEndpointUpdate(key: string, id: WorkloadEndpointID, endpoint: WorkloadEndpoint | undefined): void {
    this.#endpointUpdate(key, endpoint && { kind: 'wep', id, endpoint });
  }

  onHostEndpointUpdate(key: string, id: HostEndpointID, endpoint: HostEndpoint | undefined): void {
    this.#endpointUpdate(key, endpoint && { kind: 'hep', id, endpoint });
  }

  // ---- pass-through ----

  onConfigUpdate(config: Record<string, string>): void {
    this.#config = config;
  }

  /** As Felix's OnGlobalBGPConfigUpdate: the default BGPConfiguration's service CIDRs (empty when it goes). */
  onGlobalBGPConfigUpdate(config: GlobalBGPConfig): void {
    this.#bgpConfig = config;
  }

  onIpamPoolUpdate(id: string, pool: IPAMPool | undefined): void {
    this.#pools.set(id, pool);
  }

  onHostMetadataUpdate(hostname: string, ipv4Addr: string | undefined): void {
    this.#hosts.set(hostname, ipv4Addr);
  }

  /** As Felix's OnWireguardUpdate/Remove: a node's keys and device addresses. */
  onWireguardUpdate(hostname: string, wg: WireguardInfo | undefined): void {
    this.#wireguard.set(hostname, wg);
  }

  /**
   * As Felix's flushHostWireguardDeletes/Updates: deletions first; a node is sent per family
   * while it has that family's public key, and removed once it has not.
   */
  #flushWireguard(out: ToDataplane[]): void {
    const gone = [...this.#wireguard].filter(([, wg]) => !wg);
    const kept = [...this.#wireguard].filter(([, wg]) => wg);
    for (const [hostname, wg] of [...gone, ...kept]) {
      if (wg?.publicKey) {
        out.push({
          type: 'WireguardEndpointUpdate',
          hostname,
          publicKey: wg.publicKey,
          interfaceIpv4Addr: wg.interfaceIPv4Addr ?? '',
        });
        this.#sentWireguard.add(hostname);
      } else if (this.#sentWireguard.delete(hostname)) out.push({ type: 'WireguardEndpointRemove', hostname });
      if (wg?.publicKeyV6) {
        out.push({
          type: 'WireguardEndpointV6Update',
          hostname,
          publicKeyV6: wg.publicKeyV6,
          interfaceIpv6Addr: wg.interfaceIPv6Addr ?? '',
        });
        this.#sentWireguardV6.add(hostname);
      } else if (this.#sentWireguardV6.delete(hostname)) out.push({ type: 'WireguardEndpointV6Remove', hostname });
    }
    this.#wireguard.clear();
  }

  /** As Felix's HostMetadataV6Update: the node's IPv6 address (the noencap IPv6 routes' underlay). */
  onHostMetadataV6Update(hostname: string, ipv6Addr: string | undefined): void {
    this.#hostsV6.set(hostname, ipv6Addr);
  }

  onRouteUpdate(route: RouteUpdate): void {
    this.#routeAdds.set(route.dst, route);
    this.#routeRemoves.delete(route.dst);
  }

  onRouteRemove(dst: string): void {
    this.#routeAdds.delete(dst);
    if (this.#sentRoutes.has(dst)) this.#routeRemoves.add(dst);
  }

  onVtepUpdate(vtep: VXLANTunnelEndpoint): void {
    this.#vtepAdds.set(vtep.node, vtep);
  }

  onVtepRemove(node: string): void {
    this.#vtepAdds.delete(node);
    if (this.#sentVteps.has(node)) this.#vtepRemoves.add(node);
  }

  onInSync(): void {
    if (!this.#inSyncSent) this.#inSyncPending = true;
  }

  flush(): ToDataplane[] {
    const out: ToDataplane[] = [];
    if (this.#config) out.push({ type: 'ConfigUpdate', config: this.#config });
    this.#config = undefined;
    if (this.#bgpConfig) out.push({ type: 'GlobalBGPConfigUpdate', config: this.#bgpConfig });
    this.#bgpConfig = undefined;
    for (const [hostname, ipv4Addr] of this.#hosts) {
      if (ipv4Addr !== undefined) out.push({ type: 'HostMetadataUpdate', hostname, ipv4Addr });
    }
    for (const [hostname, ipv6Addr] of this.#hostsV6)
      if (ipv6Addr !== undefined) {
        out.push({ type: 'HostMetadataV6Update', hostname, ipv6Addr });
        this.#sentHostsV6.add(hostname);
      }
    for (const [id, pool] of this.#pools) if (pool) out.push({ type: 'IPAMPoolUpdate', id, pool });

    for (const [id, members] of this.#setsToSend) {
      const all = members ? [...members] : (this.#membership as IPSetMembership)(id);
      out.push({ type: 'IPSetUpdate', id, members: all, ipsetType: this.#setTypes.get(id) as IPSetType });
      this.#sentSets.add(id);
    }
    for (const [id, d] of this.#deltas) {
      if (d.added.size || d.removed.size) {
        out.push({ type: 'IPSetDeltaUpdate', id, addedMembers: [...d.added], removedMembers: [...d.removed] });
      }
    }
    for (const k of this.#policiesToSend) {
      const { id, policy } = this.#policies.get(k) as { id: PolicyID; policy: Policy };
      out.push({ type: 'ActivePolicyUpdate', id, policy });
      this.#sentPolicies.set(k, id);
    }
    for (const name of this.#profilesToSend) {
      out.push({ type: 'ActiveProfileUpdate', id: { name }, profile: this.#profiles.get(name) as Profile });
      this.#sentProfiles.add(name);
    }
    for (const k of this.#endpointsToSend) {
      const e = this.#endpoints.get(k) as EndpointMsg;
      out.push(
        e.kind === 'wep'
          ? { type: 'WorkloadEndpointUpdate', id: e.id, endpoint: e.endpoint }
          : { type: 'HostEndpointUpdate', id: e.id, endpoint: e.endpoint },
      );
      this.#sentEndpoints.set(k, e);
    }
    for (const [k, e] of this.#endpointsToRemove) {
      out.push(
        e.kind === 'wep' ? { type: 'WorkloadEndpointRemove', id: e.id } : { type: 'HostEndpointRemove', id: e.id },
      );
      this.#sentEndpoints.delete(k);
    }
    for (const name of this.#profilesToRemove) {
      out.push({ type: 'ActiveProfileRemove', id: { name } });
      this.#sentProfiles.delete(name);
    }
    for (const [k, id] of this.#policiesToRemove) {
      out.push({ type: 'ActivePolicyRemove', id });
      this.#sentPolicies.delete(k);
    }
    for (const id of this.#setsToRemove) {
      out.push({ type: 'IPSetRemove', id });
      this.#sentSets.delete(id);
    }
    this.#flushRoutesAndVteps(out);
    this.#flushWireguard(out);
    for (const [id, pool] of this.#pools) if (!pool) out.push({ type: 'IPAMPoolRemove', id });
    for (const [hostname, ipv4Addr] of this.#hosts)
      if (ipv4Addr === undefined) out.push({ type: 'HostMetadataRemove', hostname });
    for (const [hostname, ipv6Addr] of this.#hostsV6)
      if (ipv6Addr === undefined && this.#sentHostsV6.delete(hostname))
        out.push({ type: 'HostMetadataV6Remove', hostname });
    if (this.#inSyncPending) {
      out.push({ type: 'InSync' });
      this.#inSyncPending = false;
      this.#inSyncSent = true;
    }
    this.#setsToSend.clear();
    this.#deltas.clear();
    this.#setsToRemove.clear();
    this.#policiesToSend.clear();
    this.#policiesToRemove.clear();
    this.#profilesToSend.clear();
    this.#profilesToRemove.clear();
    this.#endpointsToSend.clear();
    this.#endpointsToRemove.clear();
    this.#pools.clear();
    this.#hosts.clear();
    this.#hostsV6.clear();
    return out;
  }

  // As Felix: no route is in the dataplane without its VTEP - route removes, VTEP removes,
  // VTEP adds, then route adds.
  #flushRoutesAndVteps(out: ToDataplane[]): void {
    for (const dst of this.#routeRemoves) {
      out.push({ type: 'RouteRemove', dst });
      this.#sentRoutes.delete(dst);
    }
    for (const node of this.#vtepRemoves) {
      out.push({ type: 'VXLANTunnelEndpointRemove', node });
      this.#sentVteps.delete(node);
    }
    for (const vtep of this.#vtepAdds.values()) {
      out.push({ type: 'VXLANTunnelEndpointUpdate', vtep });
      this.#sentVteps.add(vtep.node);
    }
    for (const route of this.#routeAdds.values()) {
      out.push({ type: 'RouteUpdate', route });
      this.#sentRoutes.add(route.dst);
    }
    this.#routeRemoves.clear();
    this.#vtepRemoves.clear();
    this.#vtepAdds.clear();
    this.#routeAdds.clear();
  }

  #delta(id: string) {
    let d = this.#deltas.get(id);
    if (!d) this.#deltas.set(id, (d = { added: new Set(), removed: new Set() }));
    return d;
  }

  #endpointUpdate(key: string, msg: EndpointMsg | undefined): void {
    if (msg) {
      this.#endpoints.set(key, msg);
      this.#endpointsToSend.add(key);
      this.#endpointsToRemove.delete(key);
      return;
    }
    this.#endpoints.delete(key);
    this.#endpointsToSend.delete(key);
    const sent = this.#sentEndpoints.get(key);
    if (sent) this.#endpointsToRemove.set(key, sent);
  }
}
