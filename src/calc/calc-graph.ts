// The calculation graph (wiring only), as Felix's NewCalculationGraph: validated v3
// resources in, dataplane messages out.
//
//   policies, profiles ---------> ActiveRulesCalculator --(active rules)--> RuleScanner
//   local endpoints ------------/        |  (matches)                          |  (IP sets)
//                                        v                                     v
//   tiers, policy order -> PolicySorter > PolicyResolver     all endpoints, network sets
//                                        |  (endpoint tiers)  -> IPSetMemberCalculator
//                                        v                                     |
//                                    EventSequencer <---------------------------+
//
// Nothing is emitted before the datastore is in sync; the first flush after that carries
// the whole state and one InSync message.
import {
  convertGlobalNetworkPolicy,
  convertGlobalNetworkSet,
  convertHostEndpoint,
  convertIpPool,
  convertNetworkPolicy,
  convertNetworkSet,
  convertProfile,
  convertTier,
  convertWorkloadEndpoint,
  workloadEndpointMembership,
} from '../model/convert.js';
import { felixConfigurationParams } from '../config/felix-configuration.js';
import type { InternalHostEndpoint, InternalPolicy, InternalWorkloadEndpoint } from '../model/internal.js';
import { policyId } from '../model/names.js';
import { parseCidr, parseIp } from '../model/net.js';
import type { Resource, ResourceOf } from '../model/schemas.js';
import type { ResourceRef } from '../model/validate.js';
import type { SyncStatus } from '../datastore/types.js';
import type { PolicyID, ToDataplane } from '../proto/messages.js';
import { ActiveRulesCalculator } from './active-rules.js';
import { EventSequencer } from './event-sequencer.js';
import { IPSetMemberCalculator, type MemberSource } from './ipset-members.js';
import { type EndpointTiers, PolicyResolver } from './policy-resolver.js';
import { policyMeta, PolicySorter } from './policy-sorter.js';
import { RuleScanner } from './rule-scanner.js';

export type { SyncStatus };

type LocalEndpoint = { kind: 'wep'; ep: InternalWorkloadEndpoint } | { kind: 'hep'; ep: InternalHostEndpoint };

const refKey = (r: ResourceRef) => `${r.kind}/${r.namespace ?? ''}/${r.name ?? ''}`;

export function workloadEndpointKey(ep: InternalWorkloadEndpoint): string {
  return `wep:${ep.key.hostname}/${ep.key.orchestratorId}/${ep.key.workloadId}/${ep.key.endpointId}`;
}

export function hostEndpointKey(ep: InternalHostEndpoint): string {
  return `hep:${ep.key.hostname}/${ep.key.endpointId}`;
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
  /** Local endpoints' member-source key -> their Felix endpoint key. */
  readonly #localKeys = new Map<string, string>();
  /** IPPool resource -> the pool ID it was sent under. */
  readonly #poolIds = new Map<string, string>();
  readonly #felixConfig = new Map<string, ResourceOf<'FelixConfiguration'>>();
  #status: SyncStatus = 'wait-for-datastore';

  constructor(hostname: string) {
    this.hostname = hostname;
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
        this.#sequencer.onProfileActive(name, { inboundRules: parsed.inboundRules, outboundRules: parsed.outboundRules });
      },
      onProfileInactive: (name) => {
        this.#scanner.onProfileInactive(`profile:${name}`);
        this.#sequencer.onProfileInactive(name);
      },
      onPolicyMatch: (p, e) => this.#resolver.onPolicyMatch(p, e),
      onPolicyMatchStopped: (p, e) => this.#resolver.onPolicyMatchStopped(p, e),
    });
  }

  get status(): SyncStatus {
    return this.#status;
  }

  onStatus(status: SyncStatus): void {
    this.#status = status;
    if (status === 'in-sync') this.#sequencer.onInSync();
  }

  /** A validated resource (or, with `resource` undefined, the deletion of `ref`). */
  onUpdate(ref: ResourceRef, resource: Resource | undefined): void {
    switch (ref.kind) {
      case 'NetworkPolicy':
      case 'GlobalNetworkPolicy': {
        const policy = resource
          ? resource.kind === 'NetworkPolicy'
            ? convertNetworkPolicy(resource)
            : convertGlobalNetworkPolicy(resource as ResourceOf<'GlobalNetworkPolicy'>)
          : undefined;
        const name = policyId(ref.kind, ref.namespace ?? '', ref.name as string);
        this.#onPolicy(name, policy);
        break;
      }
      case 'Tier': {
        const t = resource && convertTier(resource as ResourceOf<'Tier'>);
        if (this.#sorter.onTierUpdate(ref.name as string, t && { order: t.order, defaultAction: t.defaultAction })) {
          this.#resolver.onSortChanged();
        }
        break;
      }
      case 'Profile': {
        const p = resource && convertProfile(resource as ResourceOf<'Profile'>);
        this.#activeRules.onProfileUpdate(ref.name as string, p);
        this.#members.onProfileLabels(ref.name as string, p?.labels);
        break;
      }
      case 'WorkloadEndpoint': {
        const w = resource as ResourceOf<'WorkloadEndpoint'> | undefined;
        if (w && (w.spec.node ?? '') !== this.hostname) {
          // Another node's endpoint (nearly all of them): only its IP-set membership matters.
          const m = workloadEndpointMembership(w);
          const nets = m && (m.ipv6Nets.length ? [...m.ipv4Nets, ...m.ipv6Nets] : m.ipv4Nets);
          this.#onEndpoint(ref, m && nets && { labels: m.labels, parents: m.profileIds, nets, ports: m.ports }, undefined);
          break;
        }
        const ep = w && convertWorkloadEndpoint(w);
        this.#onEndpoint(ref, ep && this.#sourceOf({ kind: 'wep', ep }), ep && { key: workloadEndpointKey(ep), local: { kind: 'wep', ep } });
        break;
      }
      case 'HostEndpoint': {
        const ep = resource && convertHostEndpoint(resource as ResourceOf<'HostEndpoint'>);
        const local = ep && ep.key.hostname === this.hostname ? { key: hostEndpointKey(ep), local: { kind: 'hep' as const, ep } } : undefined;
        this.#onEndpoint(ref, ep && this.#sourceOf({ kind: 'hep', ep }), local);
        break;
      }
      case 'NetworkSet':
      case 'GlobalNetworkSet': {
        const set = resource
          ? resource.kind === 'NetworkSet'
            ? convertNetworkSet(resource)
            : convertGlobalNetworkSet(resource as ResourceOf<'GlobalNetworkSet'>)
          : undefined;
        const key = `netset:${ref.kind === 'NetworkSet' ? `${ref.namespace}/` : ''}${ref.name}`;
        if (set) this.#members.onSourceUpdate(key, { labels: set.labels, parents: [], nets: set.nets, ports: [] });
        else this.#members.onSourceRemove(key);
        break;
      }
      case 'IPPool': {
        const old = this.#poolIds.get(refKey(ref));
        const pool = resource && convertIpPool(resource as ResourceOf<'IPPool'>);
        const id = pool && pool.cidr.replace('/', '-');
        if (old && old !== id) this.#sequencer.onIpamPoolUpdate(old, undefined);
        if (pool && id) {
          this.#poolIds.set(refKey(ref), id);
          this.#sequencer.onIpamPoolUpdate(id, { cidr: pool.cidr, masquerade: pool.masquerade && !pool.disabled });
        } else {
          this.#poolIds.delete(refKey(ref));
        }
        break;
      }
      case 'Node': {
        const addr = (resource as ResourceOf<'Node'> | undefined)?.spec.bgp?.ipv4Address;
        this.#sequencer.onHostMetadataUpdate(ref.name as string, addr ? parseCidr(addr)?.address : undefined);
        break;
      }
      case 'FelixConfiguration': {
        if (resource) this.#felixConfig.set(ref.name as string, resource as ResourceOf<'FelixConfiguration'>);
        else this.#felixConfig.delete(ref.name as string);
        this.#sequencer.onConfigUpdate(this.#mergedConfig());
        break;
      }
      default:
        break; // ClusterInformation: nothing for the dataplane
    }
  }

  /** Runs the graph and returns the messages for the dataplane (none before in-sync). */
  flush(): ToDataplane[] {
    this.#activeRules.flush();
    this.#members.flush();
    this.#resolver.flush((key, tiers) => this.#emitEndpoint(key, tiers));
    if (this.#status !== 'in-sync') return [];
    return this.#sequencer.flush();
  }

  #onPolicy(name: string, policy: InternalPolicy | undefined): void {
    const old = this.#policies.get(name);
    if (policy) this.#policies.set(name, policy);
    else this.#policies.delete(name);
    this.#activeRules.onPolicyUpdate(name, policy);
    const changed = policy
      ? this.#sorter.onPolicyUpdate(name, policy.key.tier, policyMeta(policy))
      : this.#sorter.onPolicyUpdate(name, old?.key.tier ?? '', undefined);
    if (changed) this.#resolver.onSortChanged();
  }

  #sourceOf(e: LocalEndpoint): MemberSource {
    const nets =
      e.kind === 'wep'
        ? e.ep.ipv6Nets.length
          ? [...e.ep.ipv4Nets, ...e.ep.ipv6Nets]
          : e.ep.ipv4Nets
        : [...e.ep.expectedIpv4Addrs.map((a) => `${a}/32`), ...e.ep.expectedIpv6Addrs.map((a) => `${parseIp(a)?.address ?? a}/128`)];
    return { labels: e.ep.labels, parents: e.ep.profileIds, nets, ports: e.ep.ports };
  }

  // Every endpoint in the cluster is an IP-set member source, known by its resource name
  // (the short key keeps 250,000 of them cheap); local ones are also known by their
  // Felix endpoint key, which the rest of the graph and the dataplane use.
  #onEndpoint(ref: ResourceRef, source: MemberSource | undefined, local: { key: string; local: LocalEndpoint } | undefined): void {
    // join() builds a flat string; a template literal would keep a tree of parts alive.
    const sourceKey = ref.kind === 'WorkloadEndpoint' ? ['w:', ref.namespace ?? '', '/', ref.name].join('') : `h:${ref.name}`;
    const oldKey = this.#localKeys.get(sourceKey);
    if (oldKey !== undefined && oldKey !== local?.key) {
      this.#localKeys.delete(sourceKey);
      this.#localEndpoints.delete(oldKey);
      this.#activeRules.onLocalEndpointRemove(oldKey);
      this.#resolver.onEndpointUpdate(oldKey, false);
    }
    if (!source) {
      this.#members.onSourceRemove(sourceKey);
      return;
    }
    this.#members.onSourceUpdate(sourceKey, source);
    if (!local) return;
    const { key, local: next } = local;
    this.#localKeys.set(sourceKey, key);
    this.#localEndpoints.set(key, next);
    this.#activeRules.onLocalEndpointUpdate(key, next.ep.labels, next.ep.profileIds);
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
        ep && tiers && {
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
      ep && tiers && {
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
    return { orchestratorId: parts[1] ?? '', workloadId: parts.slice(2, -1).join('/'), endpointId: parts[parts.length - 1] ?? '' };
  }

  // FelixConfiguration "default" then "node.<hostname>"; the config layer (src/config) owns
  // precedence with env and file; here the datastore's view is passed on as strings.
  #mergedConfig(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of ['default', `node.${this.hostname}`]) {
      const fc = this.#felixConfig.get(name);
      if (fc) for (const [k, v] of felixConfigurationParams(fc.spec, fc.metadata.annotations).values) out[k] = v;
    }
    return out;
  }
}
