// The calculation graph (wiring only), as Felix's NewCalculationGraph: internal-model
// (v1) updates in - from the update processors, or straight from Typha - dataplane
// messages out. One typed handler per key type (Felix's dispatcher registrations).
//
//   policies, profiles ---------> ActiveRulesCalculator --(active rules)--> RuleScanner
//   local endpoints ------------/        |  (matches)                          |  (IP sets)
//                                        v                                     v
//   tiers, policy order -> PolicySorter > PolicyResolver     all endpoints, network sets
//                                        |  (endpoint tiers)  -> IPSetMemberCalculator
//                                        v                                     |
//                                    EventSequencer <---------------------------+
//                                        ^
//   pools, IPAM blocks, nodes, local workload IPs -> L3 RouteResolver (routes)
//   nodes, their tunnel host config ---------------> VxlanResolver (VTEPs)
//
// Nothing is emitted before the datastore is in sync; the first flush after that carries
// the whole state and one InSync message.
import type { PolicyIds } from '../model/release.js';
import type { SyncStatus } from '../datastore/types.js';
import type { InternalHostEndpoint, InternalPolicy, InternalWorkloadEndpoint } from '../model/internal.js';
import { POLICY_KIND_SHORT, type PolicyKind, policyId } from '../model/names.js';
import { hostAddress, parseIp } from '../model/net.js';
import type { V1KeyOf, V1KeyType } from '../model/v1/keys.js';
import type { V1Update, V1Values } from '../model/v1/values.js';
import type { GlobalBGPConfig, PolicyID, ToDataplane, WireguardInfo } from '../proto/messages.js';
import { ActiveRulesCalculator } from './active-rules.js';
import { EventSequencer } from './event-sequencer.js';
import { IPSetMemberCalculator, type MemberSource } from './ipset-members.js';
import { type EndpointTiers, PolicyResolver } from './policy-resolver.js';
import { policyMeta, PolicySorter } from './policy-sorter.js';
import { RouteResolver, type RouteSource } from './route-resolver.js';
import { type IPSetData, RuleScanner } from './rule-scanner.js';
import { VxlanResolver } from './vxlan-resolver.js';

export type { SyncStatus };

type LocalEndpoint = { kind: 'wep'; ep: InternalWorkloadEndpoint } | { kind: 'hep'; ep: InternalHostEndpoint };
type Handlers = { [T in V1KeyType]: (key: V1KeyOf<T>, value: V1Values[T] | undefined) => void };

/** Felix's endpoint key: also the endpoint's IP-set member source key. */
export function workloadEndpointKey(k: {
  hostname: string;
  orchestratorId: string;
  workloadId: string;
  endpointId: string;
}): string {
  // join() builds a flat string; a template literal would keep a tree of parts alive
  // (250,000 of these in a snapshot). The parts' array is reused: one per key was a
  // tenth of the snapshot's garbage.
  const parts = KEY_PARTS;
  parts[1] = k.hostname;
  parts[3] = k.orchestratorId;
  parts[5] = k.workloadId;
  parts[7] = k.endpointId;
  const key = parts.join('');
  parts[1] = parts[3] = parts[5] = parts[7] = '';
  return key;
}
const KEY_PARTS = ['wep:', '', '/', '', '/', '', '/', ''];

export function hostEndpointKey(k: { hostname: string; endpointId: string }): string {
  return `hep:${k.hostname}/${k.endpointId}`;
}

export class CalcGraph {
  readonly hostname: string;
  // Sets sent whole take their members straight from the member calculator.
  readonly #sequencer = new EventSequencer((id) => this.#members.members(id));
  readonly #sorter = new PolicySorter();
  readonly #resolver = new PolicyResolver(this.#sorter);
  readonly #scanner = new RuleScanner();
  readonly #members: IPSetMemberCalculator;
  readonly #activeRules: ActiveRulesCalculator;
  readonly #policies = new Map<string, InternalPolicy>();
  /** The PolicyID each active policy was last sent under (a tier change retires it). */
  readonly #activeIds = new Map<string, PolicyID>();
  readonly #localEndpoints = new Map<string, LocalEndpoint>();
  readonly #routes: RouteResolver;
  readonly #vxlan = new VxlanResolver({
    onVtepUpdate: (v) => this.#sequencer.onVtepUpdate(v),
    onVtepRemove: (n) => this.#sequencer.onVtepRemove(n),
  });
  readonly #globalConfig = new Map<string, string>();
  readonly #hostConfig = new Map<string, string>();
  #status: SyncStatus = 'wait-for-datastore';
  readonly #handlers: Handlers = {
    Policy: (k, p) => this.#onPolicy(k, p),
    Tier: (k, t) => {
      if (this.#sorter.onTierUpdate(k.name, t && { order: t.order, defaultAction: t.defaultAction }))
        this.#resolver.onSortChanged();
    },
    ProfileRules: (k, rules) => this.#activeRules.onProfileRules(k.name, rules),
    ProfileLabels: (k, labels) => {
      this.#activeRules.onProfileLabels(k.name, labels);
      this.#members.onProfileLabels(k.name, labels);
    },
    WorkloadEndpoint: (k, ep) => this.#onEndpoint(workloadEndpointKey(k), k.hostname, ep && { kind: 'wep', ep }),
    HostEndpoint: (k, ep) => this.#onEndpoint(hostEndpointKey(k), k.hostname, ep && { kind: 'hep', ep }),
    NetworkSet: (k, set) => {
      const key = `netset:${k.name}`;
      if (set) this.#members.onSourceUpdate(key, { labels: set.labels, parents: [], nets: set.nets, ports: [] });
      else this.#members.onSourceRemove(key);
    },
    IPPool: (k, pool) => {
      this.#sequencer.onIpamPoolUpdate(
        k.cidr.replace('/', '-'),
        pool && { cidr: pool.cidr, masquerade: pool.masquerade && !pool.disabled, allowedUses: pool.allowedUses },
      );
      this.#routes.onPoolUpdate(k.cidr, pool);
    },
    GlobalConfig: (k, v) => this.#onConfig(this.#globalConfig, k.name, v),
    HostConfig: (k, v) => {
      this.#vxlan.onHostConfigUpdate(k.hostname, k.name, v);
      if (k.hostname === this.hostname) this.#onConfig(this.#hostConfig, k.name, v);
    },
    Resource: (k, r) => {
      // Of the v3 resources passed through, the graph needs EndpointSlices (service sets),
      // Nodes' addresses and the default BGPConfiguration's service CIDRs.
      if (k.kind === 'KubernetesEndpointSlice') {
        const spec = r?.kind === 'KubernetesEndpointSlice' ? r.spec : undefined;
        this.#members.onEndpointSlice(
          `${k.namespace ?? ''}/${k.name}`,
          spec && {
            service: `${k.namespace ?? ''}/${spec.serviceName}`,
            addresses: (spec.endpoints ?? []).flatMap((e) => e.addresses),
            ports: spec.ports ?? [],
          },
        );
        return;
      }
      if (k.kind === 'BGPConfiguration') {
        if (k.name === 'default') this.#sequencer.onGlobalBGPConfigUpdate(serviceCidrs(r));
        return;
      }
      if (k.kind !== 'Node') return;
      const node = r?.kind === 'Node' ? r : undefined;
      this.#routes.onNodeUpdate(k.name, node);
      this.#vxlan.onNodeUpdate(k.name, node);
      const addr = node?.spec.bgp?.ipv4Address;
      const addr6 = node?.spec.bgp?.ipv6Address;
      // The host's own address: "192.0.2.1/24" is 192.0.2.1, not its network.
      this.#sequencer.onHostMetadataUpdate(k.name, addr ? hostAddress(addr) : undefined);
      this.#sequencer.onHostMetadataV6Update(k.name, addr6 ? hostAddress(addr6) : undefined);
    },
    // For the config batcher: nothing here.
    ReadyFlag: () => {},
    Wireguard: (k, v) => this.#sequencer.onWireguardUpdate(k.nodeName, v && wireguardInfo(v)),
    Block: (k, b) => this.#routes.onBlockUpdate(k.cidr, b),
  };

  constructor(hostname: string) {
    this.hostname = hostname;
    this.#routes = new RouteResolver(hostname, {
      onRouteUpdate: (r) => this.#sequencer.onRouteUpdate(r),
      onRouteRemove: (d) => this.#sequencer.onRouteRemove(d),
    });
    this.#members = new IPSetMemberCalculator(this.#sequencer);
    this.#scanner.onIPSetActive = (s) => this.#members.onIPSetActive(s);
    this.#scanner.onIPSetInactive = (s) => this.#members.onIPSetInactive(s);
    this.#activeRules = new ActiveRulesCalculator({
      onPolicyActive: (name, policy) => {
        const old = this.#activeIds.get(name);
        if (old && old.tier !== policy.key.tier) this.#sequencer.onPolicyInactive(old);
        const id = { tier: policy.key.tier, name };
        this.#activeIds.set(name, id);
        const parsed = this.#scanner.onPolicyActive(`policy:${name}`, policy);
        this.#sequencer.onPolicyActive(id, {
          namespace: parsed.namespace,
          inboundRules: parsed.inboundRules,
          outboundRules: parsed.outboundRules,
          untracked: parsed.untracked,
          preDnat: parsed.preDnat,
          originalSelector: parsed.originalSelector,
        });
      },
      onPolicyInactive: (name) => {
        this.#scanner.onPolicyInactive(`policy:${name}`);
        const id = this.#activeIds.get(name);
        this.#activeIds.delete(name);
        if (id) this.#sequencer.onPolicyInactive(id);
      },
      onProfileActive: (name, profile) => {
        const parsed = this.#scanner.onProfileActive(`profile:${name}`, profile);
        this.#sequencer.onProfileActive(name, {
          inboundRules: parsed.inboundRules,
          outboundRules: parsed.outboundRules,
        });
      },
      onProfileInactive: (name) => {
        this.#scanner.onProfileInactive(`profile:${name}`);
        this.#sequencer.onProfileInactive(name);
      },
      onPolicyMatch: (p, e, num) => this.#resolver.onPolicyMatch(p, e, num),
      onPolicyMatchStopped: (e, num) => this.#resolver.onPolicyMatchStopped(e, num),
    });
  }

  get status(): SyncStatus {
    return this.#status;
  }

  onStatus(status: SyncStatus): void {
    this.#status = status;
    if (status === 'in-sync') this.#sequencer.onInSync();
  }

  /** One internal-model update (a deletion when its value is undefined). */
  onUpdate(u: V1Update): void {
    (this.#handlers[u.key.type] as (k: V1Update['key'], v: V1Update['value']) => void)(u.key, u.value);
  }

  /**
   * RouteSource, once the configuration is resolved (updates may have come before): with
   * WorkloadIPs every node's workload addresses are routes and IPAM blocks are not.
   */
  /** How the cluster's release breaks ties between policies of one order (set before the first flush). */
  setPolicyIds(style: PolicyIds): void {
    this.#sorter.setStyle(style);
  }

  setRouteSource(source: RouteSource): void {
    if (source === this.#routes.routeSource) return;
    this.#routes.setRouteSource(source);
    for (const [key, nets] of this.#members.sources('wep:')) {
      const host = key.slice(4, key.indexOf('/'));
      if (host !== this.hostname) this.#routes.onWorkloadUpdate(key, host, source === 'WorkloadIPs' ? nets : undefined);
    }
  }

  /** What an active IP set stands for (its selector, named port or service), by its ID. */
  ipSetData(id: string): IPSetData | undefined {
    return this.#scanner.activeIPSets.get(id);
  }

  /** Sizes of the IP-set member side (every endpoint in the cluster lives there). */
  memberStats(): ReturnType<IPSetMemberCalculator['stats']> {
    return this.#members.stats();
  }

  /** Runs the graph and returns the messages for the dataplane (none before in-sync). */
  flush(): ToDataplane[] {
    this.#activeRules.flush();
    this.#members.flush();
    this.#resolver.flush((key, tiers) => this.#emitEndpoint(key, tiers));
    this.#routes.flush();
    if (this.#status !== 'in-sync') return [];
    return this.#sequencer.flush();
  }

  #onPolicy(k: V1KeyOf<'Policy'>, policy: InternalPolicy | undefined): void {
    // Staged policies are never enforced (Felix only reports what they would do).
    if (!(k.kind in POLICY_KIND_SHORT) || k.kind.startsWith('Staged')) return;
    const name = policy?.key.name ?? policyId(k.kind as PolicyKind, k.namespace, k.name);
    const old = this.#policies.get(name);
    if (policy) this.#policies.set(name, policy);
    else this.#policies.delete(name);
    this.#activeRules.onPolicyUpdate(name, policy);
    const changed = policy
      ? this.#sorter.onPolicyUpdate(name, policy.key.tier, policyMeta(policy))
      : this.#sorter.onPolicyUpdate(name, old?.key.tier ?? '', undefined);
    if (changed) this.#resolver.onSortChanged();
  }

  #onConfig(map: Map<string, string>, name: string, value: string | undefined): void {
    if (value === undefined ? !map.delete(name) : map.get(name) === value) return;
    if (value !== undefined) map.set(name, value);
    this.#sequencer.onConfigUpdate(Object.fromEntries([...this.#globalConfig, ...this.#hostConfig]));
  }

  #sourceOf(e: LocalEndpoint): MemberSource {
    const nets =
      e.kind === 'wep'
        ? e.ep.ipv6Nets.length
          ? [...e.ep.ipv4Nets, ...e.ep.ipv6Nets]
          : e.ep.ipv4Nets
        : [
            ...e.ep.expectedIpv4Addrs.map((a) => `${a}/32`),
            ...e.ep.expectedIpv6Addrs.map((a) => `${parseIp(a)?.address ?? a}/128`),
          ];
    return { labels: e.ep.labels, parents: e.ep.profileIds, nets, ports: e.ep.ports };
  }

  // Every endpoint in the cluster is an IP-set member source; this node's are also local
  // endpoints, matched against policies and sent to the dataplane. The key names both.
  #onEndpoint(key: string, hostname: string, e: LocalEndpoint | undefined): void {
    if (key.startsWith('wep:') && (hostname === this.hostname || this.#routes.routeSource === 'WorkloadIPs'))
      this.#routes.onWorkloadUpdate(
        key,
        hostname,
        e?.kind === 'wep' ? [...e.ep.ipv4Nets, ...e.ep.ipv6Nets] : undefined,
      );
    if (!e) {
      this.#members.onSourceRemove(key);
      if (!this.#localEndpoints.delete(key)) return;
      this.#activeRules.onLocalEndpointRemove(key);
      this.#resolver.onEndpointUpdate(key, false);
      return;
    }
    this.#members.onSourceUpdate(key, this.#sourceOf(e));
    if (hostname !== this.hostname) return;
    this.#localEndpoints.set(key, e);
    this.#activeRules.onLocalEndpointUpdate(key, e.ep.labels, e.ep.profileIds);
    this.#resolver.onEndpointUpdate(key, true);
  }

  #emitEndpoint(key: string, tiers: EndpointTiers | undefined): void {
    const local = this.#localEndpoints.get(key);
    if (key.startsWith('wep:')) {
      const ep = local?.kind === 'wep' ? local.ep : undefined;
      const id = ep
        ? { orchestratorId: ep.key.orchestratorId, workloadId: ep.key.workloadId, endpointId: ep.key.endpointId }
        : this.#widFromKey(key);
      this.#sequencer.onWorkloadEndpointUpdate(
        key,
        id,
        ep &&
          tiers && {
            state: ep.state,
            name: ep.name,
            mac: ep.mac ?? '',
            profileIds: ep.profileIds,
            ipv4Nets: ep.ipv4Nets,
            ipv6Nets: ep.ipv6Nets,
            tiers: tiers.tiers,
            ipv4Nat: ep.ipv4Nat,
            ipv6Nat: ep.ipv6Nat,
            allowSpoofedSourcePrefixes: ep.allowSpoofedSourcePrefixes,
          },
      );
      return;
    }
    const ep = local?.kind === 'hep' ? local.ep : undefined;
    this.#sequencer.onHostEndpointUpdate(
      key,
      { endpointId: ep?.key.endpointId ?? key.slice(key.lastIndexOf('/') + 1) },
      ep &&
        tiers && {
          name: ep.name,
          profileIds: ep.profileIds,
          tiers: tiers.tiers,
          untrackedTiers: tiers.untrackedTiers,
          preDnatTiers: tiers.preDnatTiers,
          forwardTiers: tiers.forwardTiers,
          expectedIpv4Addrs: ep.expectedIpv4Addrs,
          expectedIpv6Addrs: ep.expectedIpv6Addrs,
        },
    );
  }

  // The key is "wep:<host>/<orchestrator>/<namespace>/<pod>/<endpoint>".
  #widFromKey(key: string) {
    const parts = key.slice(4).split('/');
    return {
      orchestratorId: parts[1] ?? '',
      workloadId: parts.slice(2, -1).join('/'),
      endpointId: parts[parts.length - 1] ?? '',
    };
  }
}

/** A node's WireGuard record as the update processors give it (a JSON object): its string fields only. */
function wireguardInfo(v: Record<string, unknown>): WireguardInfo {
  const out: WireguardInfo = {};
  for (const k of ['interfaceIPv4Addr', 'publicKey', 'interfaceIPv6Addr', 'publicKeyV6'] as const) {
    const x = v[k];
    if (typeof x === 'string' && x) out[k] = x;
  }
  return out;
}

/** As Felix's OnGlobalBGPConfigUpdate: the service CIDRs, empty ones left out (the CRD allows them). */
function serviceCidrs(r: V1Values['Resource'] | undefined): GlobalBGPConfig {
  const spec = r?.kind === 'BGPConfiguration' ? r.spec : undefined;
  const cidrs = (list: Array<{ cidr?: string | undefined }> | undefined) =>
    (list ?? []).map((b) => b.cidr ?? '').filter((c) => c !== '');
  return {
    serviceClusterCidrs: cidrs(spec?.serviceClusterIPs),
    serviceExternalCidrs: cidrs(spec?.serviceExternalIPs),
    serviceLoadbalancerCidrs: cidrs(spec?.serviceLoadBalancerIPs),
  };
}
