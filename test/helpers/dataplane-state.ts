// A model dataplane for calc-graph tests: applies ToDataplane messages and checks, after
// every batch, that nothing refers to what the dataplane does not have (an IP set used by
// a policy, a policy or profile used by an endpoint): the order guarantees the
// EventSequencer must give.
import type {
  HostEndpoint,
  IPSetType,
  Policy,
  Profile,
  Rule,
  ToDataplane,
  WorkloadEndpoint,
} from '../../src/proto/messages.js';

export class DataplaneState {
  ipsets = new Map<string, { type: IPSetType; members: Set<string> }>();
  policies = new Map<string, Policy>();
  profiles = new Map<string, Profile>();
  weps = new Map<string, WorkloadEndpoint>();
  heps = new Map<string, HostEndpoint>();
  config: Record<string, string> = {};
  pools = new Map<string, { cidr: string; masquerade: boolean }>();
  hosts = new Map<string, string>();
  inSyncCount = 0;

  apply(msgs: ToDataplane[]): void {
    for (const m of msgs) this.#one(m);
    this.checkReferences();
  }

  #one(m: ToDataplane): void {
    switch (m.type) {
      case 'InSync':
        this.inSyncCount++;
        return;
      case 'ConfigUpdate':
        this.config = m.config;
        return;
      case 'IPSetUpdate':
        this.ipsets.set(m.id, { type: m.ipsetType, members: new Set(m.members) });
        return;
      case 'IPSetDeltaUpdate': {
        const s = this.ipsets.get(m.id);
        if (!s) throw new Error(`delta for unknown IP set ${m.id}`);
        for (const x of m.removedMembers)
          if (!s.members.delete(x)) throw new Error(`remove of absent member ${x} from ${m.id}`);
        for (const x of m.addedMembers) {
          if (s.members.has(x)) throw new Error(`add of present member ${x} to ${m.id}`);
          s.members.add(x);
        }
        return;
      }
      case 'IPSetRemove':
        if (!this.ipsets.delete(m.id)) throw new Error(`remove of unknown IP set ${m.id}`);
        return;
      case 'ActivePolicyUpdate':
        this.policies.set(`${m.id.tier}/${m.id.name}`, m.policy);
        return;
      case 'ActivePolicyRemove':
        if (!this.policies.delete(`${m.id.tier}/${m.id.name}`))
          throw new Error(`remove of unknown policy ${m.id.name}`);
        return;
      case 'ActiveProfileUpdate':
        this.profiles.set(m.id.name, m.profile);
        return;
      case 'ActiveProfileRemove':
        if (!this.profiles.delete(m.id.name)) throw new Error(`remove of unknown profile ${m.id.name}`);
        return;
      case 'WorkloadEndpointUpdate':
        this.weps.set(`${m.id.orchestratorId}/${m.id.workloadId}/${m.id.endpointId}`, m.endpoint);
        return;
      case 'WorkloadEndpointRemove':
        if (!this.weps.delete(`${m.id.orchestratorId}/${m.id.workloadId}/${m.id.endpointId}`))
          throw new Error('remove of unknown WEP');
        return;
      case 'HostEndpointUpdate':
        this.heps.set(m.id.endpointId, m.endpoint);
        return;
      case 'HostEndpointRemove':
        if (!this.heps.delete(m.id.endpointId)) throw new Error('remove of unknown HEP');
        return;
      case 'IPAMPoolUpdate':
        this.pools.set(m.id, m.pool);
        return;
      case 'IPAMPoolRemove':
        this.pools.delete(m.id);
        return;
      case 'HostMetadataUpdate':
        this.hosts.set(m.hostname, m.ipv4Addr);
        return;
      case 'HostMetadataRemove':
        this.hosts.delete(m.hostname);
        return;
    }
  }

  checkReferences(): void {
    const sets = (r: Rule) => [
      ...r.srcIpSetIds,
      ...r.dstIpSetIds,
      ...r.notSrcIpSetIds,
      ...r.notDstIpSetIds,
      ...r.srcNamedPortIpSetIds,
      ...r.dstNamedPortIpSetIds,
      ...r.notSrcNamedPortIpSetIds,
      ...r.notDstNamedPortIpSetIds,
      ...r.dstIpPortSetIds,
    ];
    for (const [name, p] of [...this.policies, ...this.profiles]) {
      for (const r of [...p.inboundRules, ...p.outboundRules]) {
        for (const id of sets(r)) if (!this.ipsets.has(id)) throw new Error(`${name} uses missing IP set ${id}`);
      }
    }
    for (const [name, e] of this.weps) {
      for (const t of e.tiers) {
        for (const p of [...t.ingressPolicies, ...t.egressPolicies]) {
          if (!this.policies.has(`${t.name}/${p}`)) throw new Error(`${name} uses missing policy ${t.name}/${p}`);
        }
      }
      for (const p of e.profileIds) if (!this.profiles.has(p)) throw new Error(`${name} uses missing profile ${p}`);
    }
  }

  /** A canonical, comparable rendering. */
  snapshot(): unknown {
    const sorted = <V>(m: Map<string, V>, f: (v: V) => unknown = (v) => v) =>
      [...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, f(v)]);
    return {
      ipsets: sorted(this.ipsets, (s) => ({ type: s.type, members: [...s.members].sort() })),
      policies: sorted(this.policies),
      profiles: sorted(this.profiles),
      weps: sorted(this.weps),
      heps: sorted(this.heps),
    };
  }
}
